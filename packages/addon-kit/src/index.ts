export { defineAddon, tool } from './define';
export type {
  Addon,
  AddonDefinition,
  AddonManifest,
  ApprovalReceipt,
  CallContext,
  ConfirmDescriptor,
  ContentBlock,
  Icon,
  JsonSchema,
  ManifestArgument,
  ManifestTool,
  Tool,
  ToolAnswer,
  ToolDefinition,
} from './define';
export { text, number, boolean, choice, checkArguments } from './arguments';
export type { Arg, ArgMap, ArgsOf, ArgumentKind } from './arguments';
export { GENERIC_FAILURE, NOT_APPROVED } from './handler';
export type { HandlerOptions } from './handler';
export { AddOnError, isAddOnError } from './errors';
export { serveNode } from './node';
