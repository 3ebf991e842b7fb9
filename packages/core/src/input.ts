import { z } from 'zod';
import { validation, type FieldError } from './errors';

/** The RFC 6901 JSON Pointer of a path in the input: the `path` of a FieldError. */
const pointer = (path: ReadonlyArray<string | number>) =>
  path.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** A zod error as field errors: one per problem, and one per unknown key of a strict object. */
function fieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: pointer([...issue.path, key]), message: issue.message }))
      : [{ path: pointer(issue.path), message: issue.message }],
  );
}

/** A name from the caller's input, as a refusal repeats it: cut to 64 characters and quoted (never a value). */
export const quotedName = (name: string) => JSON.stringify(name.slice(0, 64));

/** A verb's JSON object input; anything else is refused at the root. */
export const inputObject = <T extends z.ZodRawShape>(shape: T) => z.object(shape, { message: 'Send a JSON object.' });

/** Every problem listed; a refinement may override `sentence` with `params: { sentence }`. */
export function parseInput<T extends z.ZodTypeAny>(schema: T, value: unknown, sentence: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const [first] = parsed.error.issues;
  const own = first?.code === 'custom' ? (first.params as { sentence?: unknown } | undefined)?.sentence : undefined;
  throw validation(typeof own === 'string' ? own : sentence, fieldErrors(parsed.error));
}
