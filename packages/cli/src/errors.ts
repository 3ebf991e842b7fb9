/** Exit codes: 0 ok, 1 refused or invalid, 2 usage, 3 authentication, 4 network or server unavailable. */
export const EXIT = { ok: 0, refused: 1, usage: 2, auth: 3, network: 4 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface FieldProblem {
  path: string;
  message: string;
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** `printed`: the --json result is already on stdout; only a person's sentence is left to give. */
    readonly extra: { status?: number; errors?: FieldProblem[]; warnings?: FieldProblem[]; printed?: boolean } = {},
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usage = (message: string) => new CliError(message, EXIT.usage);
