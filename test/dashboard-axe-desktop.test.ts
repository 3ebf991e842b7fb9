import { sweep } from './helpers/axe-sweep';

sweep('desktop');
