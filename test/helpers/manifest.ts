import assert from 'node:assert/strict';
import { checkManifest, ToolportError, type FieldError } from '@toolport/core';

/**
 * The problems `checkManifest` refuses `input` with: a VALIDATION error whose message counts them;
 * fails the test when the manifest is accepted.
 */
export function manifestProblems(input: unknown): FieldError[] {
  try {
    checkManifest(input);
  } catch (err) {
    assert.ok(err instanceof ToolportError, String(err));
    assert.equal(err.code, 'VALIDATION');
    const errors = err.details.errors!;
    assert.equal(err.message, `The manifest has ${errors.length} problem${errors.length === 1 ? '' : 's'}.`);
    return errors;
  }
  assert.fail('the manifest was accepted');
}

/** The messages of `errors` at exactly `path`, joined with " | " (empty when there are none). */
export const messagesAt = (errors: FieldError[], path: string) =>
  errors.filter((e) => e.path === path).map((e) => e.message).join(' | ');
