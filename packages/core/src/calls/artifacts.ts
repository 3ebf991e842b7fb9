import { and, eq, gt, lt, sql } from 'drizzle-orm';
import type { Services } from '../services';
import { artifacts } from '../db/schema/index';
import { ToolportError } from '../errors';
import { newId } from '../ids';
import { ARTIFACT_LIMITS, isTextType, type AnswerFile } from '../outbound/files';
import type { ContentBlock } from '../outbound/types';
import type { CallOutcome } from '../queue/types';

/** Whose files an answer's are: the app (grant) that made the call, for its person. */
export interface ArtifactOwner {
  callId: string;
  userId: string;
  grantId: string;
  addonId: string;
}

const URI = /^toolport:\/\/artifacts\/(art_[\w-]{22})(?:\/[^/]*)?$/;
const uriOf = (id: string, name: string) => `toolport://artifacts/${id}/${encodeURIComponent(name)}`;

/**
 * Keeps an answer's files for the app that made the call and puts a resource link to each in the
 * answer; files that could not be kept are said there instead, so the result itself is never lost.
 */
export async function keepArtifacts(svc: Services, owner: ArtifactOwner | undefined, outcome: CallOutcome): Promise<CallOutcome> {
  if (outcome.kind !== 'result' || (!outcome.files?.length && !outcome.notKept?.length)) return outcome;
  const { files = [], notKept = [], ...result } = outcome;
  const unkept: string[] = [];
  const links: ContentBlock[] = [];
  if (files.length && !owner) {
    unkept.push('Toolport could not keep the files of this answer; call the tool again.');
  } else if (files.length && owner) {
    try {
      const kept = await store(svc, owner, files);
      if (kept === 'full') {
        unkept.push(
          `The add-on returned ${files.length === 1 ? 'a file' : `${files.length} files`} that Toolport did not keep: this person's files already take ${ARTIFACT_LIMITS.perPersonBytes / 1024 / 1024} MB, the most kept; each is kept ${ARTIFACT_LIMITS.keptHours} hours.`,
        );
      } else links.push(...kept);
    } catch (err) {
      // The add-on did run: its answer reaches the app without the files, saying so.
      svc.log.error('cannot keep an answer’s files', { err, callId: owner.callId });
      unkept.push('Toolport could not keep the files of this answer just now; call the tool again for them.');
    }
  }
  const said: ContentBlock[] = notKept.length ? [{ type: 'text', text: `Files the add-on returned that Toolport did not keep: ${notKept.join(' ')}` }] : [];
  return { ...result, content: [...result.content, ...links, ...said, ...unkept.map((text): ContentBlock => ({ type: 'text', text }))] };
}

/** In one transaction, under a lock per person, so calls at once cannot all pass the person's limit. */
async function store(svc: Services, owner: ArtifactOwner, files: AnswerFile[]): Promise<ContentBlock[] | 'full'> {
  const now = svc.clock.now();
  const total = files.reduce((n, f) => n + f.bytes.length, 0);
  return svc.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`artifacts:${owner.userId}`}))`);
    const [{ used }] = (await tx
      .select({ used: sql<string | null>`sum(${artifacts.size})` })
      .from(artifacts)
      .where(and(eq(artifacts.userId, owner.userId), gt(artifacts.expiresAt, now)))) as [{ used: string | null }];
    if (Number(used ?? 0) + total > ARTIFACT_LIMITS.perPersonBytes) return 'full';
    const expiresAt = new Date(now.getTime() + ARTIFACT_LIMITS.keptHours * 3_600_000);
    const rows = files.map((f) => ({ id: newId('art'), ...owner, name: f.name, mediaType: f.mediaType, size: f.bytes.length, bytes: f.bytes, createdAt: now, expiresAt }));
    await tx.insert(artifacts).values(rows);
    return rows.map(
      (r): ContentBlock => ({
        type: 'resource_link',
        uri: uriOf(r.id, r.name),
        name: r.name,
        mimeType: r.mediaType,
        size: r.size,
        description: `A file from this call, kept by Toolport until ${expiresAt.toISOString()}; read it with resources/read.`,
      }),
    );
  });
}

/** One file, for the app that made its call: any other app, or another person, finds nothing there. */
export async function readArtifact(svc: Services, app: { userId: string; grantId: string }, uri: string) {
  const id = URI.exec(uri)?.[1];
  const none = new ToolportError('NOT_FOUND', 'There is no file at this URI for this app.');
  if (!id) throw none;
  const [row] = await svc.db.select().from(artifacts).where(eq(artifacts.id, id));
  if (!row || row.userId !== app.userId || row.grantId !== app.grantId) throw none;
  if (row.expiresAt.getTime() <= svc.clock.now().getTime()) {
    throw new ToolportError(
      'NOT_FOUND',
      `The file "${row.name}" expired at ${row.expiresAt.toISOString()} (files are kept ${ARTIFACT_LIMITS.keptHours} hours); call the tool again to make it again.`,
    );
  }
  const content = { uri: uriOf(row.id, row.name), mimeType: row.mediaType };
  return isTextType(row.mediaType) ? { ...content, text: row.bytes.toString('utf8') } : { ...content, blob: row.bytes.toString('base64') };
}

/** Drops expired files (the periodic sweep). */
export async function forgetArtifacts(svc: Services): Promise<void> {
  await svc.db.delete(artifacts).where(lt(artifacts.expiresAt, svc.clock.now()));
}
