import { checkStructured } from '../addons/arguments';
import type { ContentBlock } from '../outbound/types';
import type { CallOutcome } from '../queue/types';
import type { CallOutcomeName } from './call-log';
import type { EnabledTool } from './enabled-tools';
import type { ToolResult } from './types';

/** What the app hears of an add-on's answer: the same words whether it came in the webhook's response or later. */

export const text = (t: string, isError = false): ToolResult => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });

/** MCP: a tool with an outputSchema must return structuredContent matching it (apps refuse one that does not). */
function outputMismatch(tool: Pick<EnabledTool, 'addonName' | 'outputSchema'>, structured: Record<string, unknown> | undefined): string | null {
  const who = `The add-on "${tool.addonName}"`;
  if (!structured) {
    return `${who} answered without the structured result this tool declares (its outputSchema), so Toolport did not pass the answer on. The add-on's developer has to answer with {"json": {...}}.`;
  }
  const problems = checkStructured(tool.outputSchema!, structured);
  if (!problems) return null;
  return `${who} answered with a result that does not match this tool's outputSchema, so Toolport did not pass it on: ${problems.join(' ')}`;
}

const firstText = (content: ContentBlock[]): string => {
  const block = content.find((b) => b.type === 'text' && typeof b.text === 'string');
  return block ? (block.text as string) : '';
};

/** What the app hears of the add-on's answer, and what the call log says of it. `seconds`: how long Toolport waited. */
export function shapeOutcome(
  tool: Pick<EnabledTool, 'addonName' | 'outputSchema' | 'destructive'>,
  outcome: CallOutcome,
  seconds: number,
): { result: ToolResult; outcome: CallOutcomeName; detail?: string; sent?: boolean } {
  // Only a failure can have left the add-on untouched, and only its delivery knows (queue/deliver.ts).
  if (outcome.kind === 'failure') return { ...shapeAnswer(tool, outcome, seconds), ...(outcome.sent !== undefined ? { sent: outcome.sent } : {}) };
  return shapeAnswer(tool, outcome, seconds);
}

function shapeAnswer(
  tool: Pick<EnabledTool, 'addonName' | 'outputSchema' | 'destructive'>,
  outcome: CallOutcome,
  seconds: number,
): { result: ToolResult; outcome: CallOutcomeName; detail?: string } {
  switch (outcome.kind) {
    case 'result':
      if (outcome.isError) {
        // The tool said it failed (MCP's isError): a tool error, for the app and in the log.
        return { result: { content: outcome.content, isError: true }, outcome: 'refused', detail: firstText(outcome.content).slice(0, 300) };
      }
      if (tool.outputSchema) {
        const mismatch = outputMismatch(tool, outcome.structuredContent);
        if (mismatch) return { result: text(mismatch, true), outcome: 'failed', detail: `output_schema: ${mismatch}`.slice(0, 300) };
      }
      return { result: { content: outcome.content, ...(outcome.structuredContent ? { structuredContent: outcome.structuredContent } : {}) }, outcome: 'ok' };
    case 'refusal':
      return { result: text(outcome.message, true), outcome: 'refused', detail: outcome.message.slice(0, 300) };
    case 'failure':
      if (outcome.errorClass === 'deadline' || outcome.errorClass === 'timeout') {
        return {
          result: text(
            `The add-on "${tool.addonName}" did not answer in time, so Toolport stopped waiting after ${seconds} seconds. ` +
              (tool.destructive ? 'It may or may not have completed: check before trying again.' : 'Try again later.'),
            true,
          ),
          outcome: 'timed_out',
          detail: outcome.errorClass,
        };
      }
      return { result: text(outcome.message, true), outcome: 'failed', detail: outcome.errorClass };
    default:
      return { result: text('The add-on answered with something Toolport could not read.', true), outcome: 'failed', detail: 'bad_answer' };
  }
}
