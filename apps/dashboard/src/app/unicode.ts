// The rule lives in core: the Web Push body reveals hidden characters exactly as the dashboard does.
import { mixesScripts, reveal, type Segment, type Skeleton } from '../../../../packages/core/src/text/reveal';
export * from '../../../../packages/core/src/text/reveal';

/**
 * Unicode's confusables data (about 20 KB compressed) is loaded only when a name on screen mixes
 * scripts; until it arrives such a name has its minority script's letters marked.
 */
let skeleton: Skeleton | undefined;
let loading: Promise<void> | undefined;
const waiting = new Set<() => void>();

function loadSkeleton() {
  loading ??= import('unhomoglyph').then(
    (m) => {
      skeleton = m.default;
      waiting.forEach((fn) => fn());
      waiting.clear();
    },
    () => {
      loading = undefined; // offline for a moment: the next name that needs it tries again
    },
  );
}

/** The segments of `text`, and a way to hear when the confusables data arrived. */
export function revealName(text: string, identifier: boolean, onReady: () => void): Segment[] {
  if (identifier && !skeleton && mixesScripts(text)) {
    waiting.add(onReady);
    loadSkeleton();
  }
  return reveal(text, identifier, skeleton);
}

export const stopWaiting = (fn: () => void) => waiting.delete(fn);

/** At most `n` characters as a person sees them (grapheme clusters): never half a character. */
export function clipGraphemes(text: string, n: number): string {
  if (typeof Intl !== 'undefined' && 'Segmenter' in Intl) {
    let out = '';
    let count = 0;
    for (const { segment } of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)) {
      if (count++ === n) break;
      out += segment;
    }
    return out;
  }
  return [...text].slice(0, n).join('');
}
