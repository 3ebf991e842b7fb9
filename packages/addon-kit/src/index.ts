export { defineAddon, tool } from './define';
export type {
  Addon,
  AddonDefinition,
  AddonManifest,
  ApprovalReceipt,
  CallContext,
  ConfirmContext,
  ConfirmDescriptor,
  AnswerFile,
  ContentBlock,
  Icon,
  JsonSchema,
  ManifestAccount,
  ManifestArgument,
  ManifestTool,
  Tool,
  ToolAnswer,
  ToolDefinition,
} from './define';
export { text, number, boolean, choice, checkArguments } from './arguments';
export type { Arg, ArgMap, ArgsOf, ArgumentKind } from './arguments';
export { setting, settings } from './settings';
export type { ManifestSetting, Setting, SettingKind, SettingMap, SettingsOf, SettingsScope, SettingValue } from './settings';
export type { AccountDeclaration, AccountsOf, ConnectedAccount } from './accounts';
export { GENERIC_FAILURE, NOT_APPROVED } from './handler';
export type { HandlerOptions } from './handler';
export { AddOnError, isAddOnError } from './errors';
export { serveNode } from './node';
