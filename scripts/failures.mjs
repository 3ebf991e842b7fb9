// A test reporter that writes each failed test with its file and the first lines of its error, so
// the end of a run names what failed even when the log is only read from its tail (CI's is).
const ownLines = (error) => text(error?.stack ?? error?.message ?? error)
  .split('\n')
  .filter((l) => !/^\s+at .*(node:|node_modules|\(<anonymous>\)$)/.test(l))
  .slice(0, 8);

/** What was thrown, as text, whatever it was: an object without a prototype has no toString. */
function text(value) {
  if (typeof value === 'string') return value;
  try {
    return String(value);
  } catch {
    try {
      return JSON.stringify(value);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }
}

export default async function* failures(source) {
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const error = event.data.details?.error;
    // A suite that failed only because a test in it did adds nothing to that test's own entry.
    if (error?.failureType === 'subtestsFailed') continue;
    // The runner wraps what the test threw; undici and others put the reason in `cause`.
    const thrown = error?.code === 'ERR_TEST_FAILURE' && error.cause ? error.cause : error;
    const lines = ownLines(thrown ?? 'failed');
    if (thrown?.cause) lines.push(`caused by: ${ownLines(thrown.cause).slice(0, 3).join('\n')}`);
    yield `${event.data.file ?? '?'}: ${event.data.name}\n${lines.map((l) => `    ${l}`).join('\n')}\n`;
  }
}
