/** The one error family of Toolport. Adapters map `code` once: problem+json, OAuth errors, isError results. */
export type ErrorCode =
  | 'VALIDATION'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'GONE'
  | 'LIMIT_EXCEEDED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNAVAILABLE'
  | 'INTERNAL';

export interface FieldError {
  path: string;
  message: string;
}

export interface ErrorDetails {
  errors?: FieldError[];
  retryAfterSeconds?: number;
  [key: string]: unknown;
}

export class ToolportError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  /** Whether `message` is safe to show to the caller. Unexpected errors never are. */
  readonly expose: boolean;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, expose = true) {
    super(message);
    this.name = 'ToolportError';
    this.code = code;
    this.details = details;
    this.expose = expose;
  }
}

export const validation = (message: string, errors?: FieldError[]) =>
  new ToolportError('VALIDATION', message, errors ? { errors } : {});
export const unauthorized = (message = 'Sign in first.') => new ToolportError('UNAUTHORIZED', message);
export const forbidden = (message: string) => new ToolportError('FORBIDDEN', message);
export const notFound = (what = 'That') => new ToolportError('NOT_FOUND', `${what} does not exist.`);
export const conflict = (message: string, details: ErrorDetails = {}) =>
  new ToolportError('CONFLICT', message, details);
export const limitExceeded = (message: string, retryAfterSeconds?: number) =>
  new ToolportError('LIMIT_EXCEEDED', message, retryAfterSeconds ? { retryAfterSeconds } : {});

export const isToolportError = (err: unknown): err is ToolportError => err instanceof ToolportError;
