import unhomoglyph from 'unhomoglyph';
import type { Skeleton } from './reveal';

/** UTS #39 skeletons from Unicode's confusables.txt, for the server side (the Web Push body). */
export const skeleton: Skeleton = unhomoglyph;
