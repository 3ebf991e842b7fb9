const BRAND = Symbol.for('toolport.addon-kit.AddOnError');

/**
 * A refusal the model can act on: throw `new AddOnError('There is no note with that id.')` from
 * `run` or `confirm` and the app receives that sentence as a tool error. Any other thrown error is
 * logged and hidden behind a generic sentence.
 */
export class AddOnError extends Error {
  readonly [BRAND] = true;
  constructor(sentence: string) {
    super(sentence);
    this.name = 'AddOnError';
  }
}

// Branded rather than instanceof alone: two copies of the kit in one process still agree.
export const isAddOnError = (err: unknown): err is AddOnError =>
  err instanceof AddOnError || (typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[BRAND] === true);
