import { sweep } from './helpers/axe-sweep';

sweep('light', 'desktop');
