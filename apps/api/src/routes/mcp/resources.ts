import { readArtifact, ToolportError, type AppIdentity, type Services } from '@toolport/core';

/** A URI with nothing readable at it: 2025-11-25 server/resources §Error Handling; 2026-07-28 (SEP-2164) says Invalid params. */
const RESOURCE_NOT_FOUND = { legacy: -32002, modern: -32602 };

export type ResourceAnswer = { result: Record<string, unknown> } | { error: { code: number; message: string; data?: { uri: string } } };

/**
 * The files calls returned (resource links in their results) are read here; nothing is listed, as
 * each is the business of the one call that made it.
 */
export async function answerResources(
  svc: Services,
  identity: AppIdentity,
  aiAppsOn: boolean,
  request: { method: string; params: Record<string, unknown> | undefined; modern: boolean },
): Promise<ResourceAnswer> {
  const { method, params } = request;
  const notFound = RESOURCE_NOT_FOUND[request.modern ? 'modern' : 'legacy'];
  if (method === 'resources/list') return { result: { resources: [] } };
  if (method === 'resources/templates/list') return { result: { resourceTemplates: [] } };
  if (typeof params?.uri !== 'string') return { error: { code: -32602, message: 'Invalid params: resources/read needs params.uri, a URI from a resource link.' } };
  if (!aiAppsOn) return { error: { code: notFound, message: 'This person has turned AI apps off in Toolport, so no file can be read.', data: { uri: params.uri } } };
  try {
    return { result: { contents: [await readArtifact(svc, identity, params.uri)] } };
  } catch (err) {
    if (err instanceof ToolportError && err.code === 'NOT_FOUND') return { error: { code: notFound, message: err.message, data: { uri: params.uri as string } } };
    throw err;
  }
}
