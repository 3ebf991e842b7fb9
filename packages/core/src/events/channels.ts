/** The bus channels several modules publish or follow; one name each, defined once. */

/** `{userId, grantId?}`: a person's gates changed (AI apps, MCP URL, an app revoked). */
export const GATES_CHANNEL = 'gates';
/** `{addonId}`: an add-on's manifest, webhook or secrets changed. */
export const ADDONS_CHANNEL = 'addons';
/** `{userId}`: a person's installs or tool switches changed. */
export const TOOLS_CHANNEL = 'tools';
