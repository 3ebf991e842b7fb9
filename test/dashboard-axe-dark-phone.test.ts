import { sweep } from './helpers/axe-sweep';

sweep('dark', 'phone');
