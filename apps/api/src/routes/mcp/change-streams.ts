import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  getTask,
  isToolportError,
  TASKS_CHANNEL,
  verifyAccessToken,
  type AppIdentity,
  type Services,
} from '@toolport/core';
import { SSE_HEADERS, sseMessage } from './frames';
import { toolList, type Listing } from './listing';
import { META, RESULT_META } from './revisions';
import { modernTask } from './tasks';

/** Open change streams per person in one process (each holds a connection); shared between their apps (makeRoom). */
const MAX_CHANGE_STREAMS_PER_PERSON = 16;
/** One app needs one stream per connection; a few more cover a reconnect racing its old stream. */
const MAX_CHANGE_STREAMS_PER_APP = 4;
const TICK_MS = 1000;
/** An SSE comment this often keeps proxies and idle timeouts from cutting a quiet stream. */
const HEARTBEAT_TICKS = 15;
/** Each stream's token is checked again this often: an expired token or a revocation whose bus message was missed ends it within this bound. */
const REVERIFY_TICKS = 60;
/** A client that stopped reading: past this much unsent, the stream is cut rather than buffered. */
const MAX_UNSENT_BYTES = 64 * 1024;

export interface StreamAccess {
  identity: AppIdentity;
  aiAppsOn: boolean;
  token: string;
  mcpUrl: string;
}

interface ChangeStream extends StreamAccess {
  outgoing: ServerResponse;
  /** 2026-07-28's subscriptions/listen: the listen request's id (the subscription id); a 2025 GET stream has none. */
  subscriptionId?: string | number;
  wantsTools: boolean;
  /** The tasks extension: the app's tasks whose changes this stream is told of, until each ends. */
  taskIds?: Set<string>;
  /** Each followed task's lastUpdatedAt as last sent: a read that is not newer sends nothing. */
  taskSent?: Map<string, string>;
  /** The listen request declared URL elicitation: a task waiting for the person offers the approval's page. */
  urlElicitation?: boolean;
  /** The digest of the tool list the app was last told of; undefined until the stream is set up. */
  digest?: string;
}

const LIST_CHANGED_LEGACY = sseMessage(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
const HEARTBEAT = Buffer.from(': keep-alive\n\n');

// One digest per listing (a listing lives as long as its tool set).
const digests = new WeakMap<Listing, string>();
function digestOf(listing: Listing): string {
  let d = digests.get(listing);
  if (!d) digests.set(listing, (d = createHash('sha256').update(listing.resultBytes).digest('base64')));
  return d;
}

/**
 * 2026-07-28 `subscriptions/listen` and the 2025-11-25 GET stream. A stream is told only when the
 * list the app would now get differs from the one it was last told of.
 */
export class ChangeStreams {
  private readonly byUser = new Map<string, Set<ChangeStream>>();
  /** The streams following each task (the tasks extension's notifications). */
  private readonly byTask = new Map<string, Set<ChangeStream>>();
  private timer?: NodeJS.Timeout;
  private ticks = 0;

  constructor(private readonly svc: Services) {}

  /** Follows the changes. A change's followers all run before the next turn, so the checks wait for one: the tool cache has dropped its entry by then. */
  listen() {
    const later = (fn: () => void) => setImmediate(fn);
    const { changes, bus } = this.svc;
    void changes.follow('tools', (m) => later(() => this.check(typeof m.userId === 'string' ? [m.userId] : this.byUser.keys())));
    void changes.follow('addon', () => later(() => this.check(this.byUser.keys())));
    void changes.follow('gate', (m) => later(() => this.reverify(typeof m.userId === 'string' ? [m.userId] : this.byUser.keys())));
    void bus.subscribe(TASKS_CHANNEL, (m) => {
      if (typeof m?.taskId === 'string' && this.byTask.has(m.taskId)) void this.taskChanged(m.taskId);
    });
    // What was published while the bus was down was missed: look again at everything.
    bus.afterReconnect(() =>
      later(() => {
        this.reverify(this.byUser.keys());
        for (const taskId of [...this.byTask.keys()]) void this.taskChanged(taskId);
      }),
    );
  }

  /**
   * Room for one more stream of this app, made now: an app at its share gives up its own oldest
   * stream; at the person's limit, the app holding the most gives up its oldest, if it holds more
   * than this app would. So no app locks the person's others out. False: no room.
   */
  makeRoom(identity: AppIdentity): boolean {
    const mine = this.byUser.get(identity.userId);
    if (!mine) return true;
    const byApp = new Map<string, ChangeStream[]>();
    for (const stream of mine) {
      const list = byApp.get(stream.identity.grantId);
      if (list) list.push(stream);
      else byApp.set(stream.identity.grantId, [stream]);
    }
    const own = byApp.get(identity.grantId) ?? [];
    if (own.length >= MAX_CHANGE_STREAMS_PER_APP) {
      this.end(own[0]!);
      return true;
    }
    if (mine.size < MAX_CHANGE_STREAMS_PER_PERSON) return true;
    let most: ChangeStream[] = [];
    for (const list of byApp.values()) if (list.length > most.length) most = list;
    if (most.length <= own.length + 1) return false;
    this.end(most[0]!);
    return true;
  }

  /** The acknowledgment is written once the current list is known, so every change after it is told. */
  async open(outgoing: ServerResponse, access: StreamAccess, subscription?: { id: string | number; toolsListChanged: boolean; taskIds?: string[]; urlElicitation?: boolean }) {
    const stream: ChangeStream = {
      ...access,
      outgoing,
      wantsTools: subscription ? subscription.toolsListChanged : true,
      ...(subscription ? { subscriptionId: subscription.id, urlElicitation: !!subscription.urlElicitation } : {}),
    };
    // Counted before anything is awaited, so a burst of opens cannot pass makeRoom together.
    let mine = this.byUser.get(access.identity.userId);
    if (!mine) this.byUser.set(access.identity.userId, (mine = new Set()));
    mine.add(stream);
    outgoing.on('close', () => this.forget(stream));
    this.timer ??= setInterval(() => this.tick(), TICK_MS).unref();
    // Only the app's own tasks still working are followed: an unknown or ended one is left out of the
    // acknowledgment. Registered before each is read, so a change in between is still sent.
    const followed: string[] = [];
    for (const taskId of new Set(subscription?.taskIds ?? [])) {
      this.follow(stream, taskId);
      const task = await getTask(this.svc, access.identity.grantId, taskId).catch(() => undefined);
      if (task?.status !== 'working') {
        this.unfollow(stream, taskId);
        continue;
      }
      followed.push(taskId);
      (stream.taskSent ??= new Map()).set(taskId, task.lastUpdatedAt);
    }
    let digest: string | undefined;
    try {
      digest = digestOf(await toolList(this.svc, access.identity, access.aiAppsOn));
    } catch (err) {
      // Told of the next change all the same (against an unknown list, any list differs).
      this.svc.log.warn('cannot read the tool list for a change stream', { err, userId: access.identity.userId });
      digest = '';
    }
    stream.digest ??= digest;
    if (outgoing.destroyed) return;
    outgoing.writeHead(200, SSE_HEADERS);
    if (subscription) {
      // basic/patterns/subscriptions §Acknowledgment: first, with the subscription id; only what is honoured.
      const notifications = { ...(subscription.toolsListChanged ? { toolsListChanged: true } : {}), ...(subscription.taskIds ? { taskIds: followed } : {}) };
      this.write(stream, sseMessage(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { [META.subscriptionId]: subscription.id }, notifications } })));
    } else {
      this.write(stream, HEARTBEAT);
    }
  }

  private forget(stream: ChangeStream) {
    for (const taskId of stream.taskIds ?? []) this.unfollow(stream, taskId);
    const mine = this.byUser.get(stream.identity.userId);
    if (!mine?.delete(stream)) return;
    if (mine.size === 0) this.byUser.delete(stream.identity.userId);
    if (this.byUser.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private write(stream: ChangeStream, bytes: Buffer) {
    const { outgoing } = stream;
    if (outgoing.destroyed || outgoing.writableEnded) return;
    if (outgoing.writableLength > MAX_UNSENT_BYTES) return void outgoing.destroy();
    outgoing.write(bytes);
  }

  /**
   * Ends a stream from this side. basic/patterns/subscriptions §Graceful Closure: a listen stream
   * gets its request's result first, so the app knows it was not a dropped connection.
   */
  private end(stream: ChangeStream) {
    const { outgoing, subscriptionId } = stream;
    this.forget(stream);
    if (outgoing.destroyed || outgoing.writableEnded) return;
    if (!outgoing.headersSent) return void outgoing.destroy();
    if (subscriptionId === undefined) return void outgoing.end();
    const result = { resultType: 'complete', _meta: { ...RESULT_META, [META.subscriptionId]: subscriptionId } };
    outgoing.end(sseMessage(JSON.stringify({ jsonrpc: '2.0', id: subscriptionId, result })));
  }

  private notify(stream: ChangeStream) {
    if (!stream.wantsTools) return;
    if (stream.subscriptionId === undefined) return this.write(stream, LIST_CHANGED_LEGACY);
    // basic/index §_meta: every notification on a listen stream carries its subscription id.
    const note = { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [META.subscriptionId]: stream.subscriptionId } } };
    this.write(stream, sseMessage(JSON.stringify(note)));
  }

  private follow(stream: ChangeStream, taskId: string) {
    (stream.taskIds ??= new Set()).add(taskId);
    let set = this.byTask.get(taskId);
    if (!set) this.byTask.set(taskId, (set = new Set()));
    set.add(stream);
  }

  private unfollow(stream: ChangeStream, taskId: string) {
    stream.taskIds?.delete(taskId);
    stream.taskSent?.delete(taskId);
    const set = this.byTask.get(taskId);
    if (set?.delete(stream) && !set.size) this.byTask.delete(taskId);
  }

  /** The tasks extension: each stream following the task gets it whole, as tasks/get would answer; an ended task is followed no more. */
  private async taskChanged(taskId: string) {
    for (const stream of [...(this.byTask.get(taskId) ?? [])]) {
      let task;
      try {
        task = await getTask(this.svc, stream.identity.grantId, taskId);
      } catch (err) {
        this.svc.log.warn('cannot read a task for its stream', { err, taskId });
        continue;
      }
      if (!task) {
        this.unfollow(stream, taskId);
        continue;
      }
      const sent = stream.taskSent?.get(taskId);
      if (sent !== undefined && task.lastUpdatedAt <= sent) continue;
      (stream.taskSent ??= new Map()).set(taskId, task.lastUpdatedAt);
      const params = { ...modernTask(task, !!stream.urlElicitation), _meta: { [META.subscriptionId]: stream.subscriptionId } };
      this.write(stream, sseMessage(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tasks', params })));
      if (task.status !== 'working') this.unfollow(stream, taskId);
    }
  }

  /** Tells the streams of these people whose tool list is no longer the one they were told of. */
  private check(userIds: Iterable<string>) {
    for (const userId of [...userIds]) {
      const mine = this.byUser.get(userId);
      if (!mine) continue;
      for (const stream of mine) void this.compare(stream);
    }
  }

  private async compare(stream: ChangeStream) {
    let digest: string;
    try {
      digest = digestOf(await toolList(this.svc, stream.identity, stream.aiAppsOn));
    } catch (err) {
      this.svc.log.warn('cannot read the tool list for a change stream', { err, userId: stream.identity.userId });
      return;
    }
    if (stream.digest === undefined) return void (stream.digest = digest);
    if (digest === stream.digest) return;
    stream.digest = digest;
    this.notify(stream);
  }

  /** Checks these people's streams' tokens again: a revoked app, a changed MCP URL or an expired token ends its streams; AI apps switched or the app's choice of tools changes the list. */
  private reverify(userIds: Iterable<string>) {
    for (const userId of [...userIds]) {
      for (const stream of this.byUser.get(userId) ?? []) void this.reverifyOne(stream);
    }
  }

  private async reverifyOne(stream: ChangeStream) {
    try {
      const { aiAppsOn } = await verifyAccessToken(this.svc, stream.token, stream.mcpUrl);
      stream.aiAppsOn = aiAppsOn;
      // AI apps switched, or the app's own choice of tools changed (a gate too): the list may differ.
      await this.compare(stream);
    } catch (err) {
      if (isToolportError(err) && err.code === 'UNAUTHORIZED') return this.end(stream);
      // Toolport's own trouble (the database): the stream stays; the next round checks again.
      this.svc.log.warn('cannot check a change stream’s token', { err, userId: stream.identity.userId });
    }
  }

  private tick() {
    this.ticks++;
    if (this.svc.draining) {
      for (const mine of [...this.byUser.values()]) for (const stream of [...mine]) this.end(stream);
      return;
    }
    if (this.ticks % HEARTBEAT_TICKS === 0) for (const mine of this.byUser.values()) for (const stream of mine) this.write(stream, HEARTBEAT);
    if (this.ticks % REVERIFY_TICKS === 0) this.reverify(this.byUser.keys());
    // A task past its time ends when it is read: read the followed ones now and then, so their apps hear it.
    if (this.ticks % HEARTBEAT_TICKS === 0) for (const taskId of [...this.byTask.keys()]) void this.taskChanged(taskId);
  }
}
