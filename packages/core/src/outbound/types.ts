import type { AnswerFile } from './files';
import type { CancelSignal } from '../cancel';

/** Why an outbound request failed; stored as the delivery's error class. */
export type OutboundErrorClass =
  | 'bad_url'
  | 'dns'
  | 'blocked_address'
  | 'connect'
  | 'tls'
  | 'timeout'
  | 'too_large'
  | 'protocol'
  /** Toolport hung up: the app cancelled the call (or hung up) while it was being delivered. */
  | 'cancelled';

export interface OutboundRequest {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Absolute deadline (epoch ms) for the whole exchange, body included. */
  deadline: number;
  /** Largest response body accepted, in bytes. */
  maxBytes: number;
  signal?: CancelSignal;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** An HTTP client for untrusted URLs: checked addresses, no redirects, capped, one deadline. */
export interface OutboundClient {
  request(req: OutboundRequest): Promise<OutboundResponse>;
  close(): void;
}

/** An add-on's description of a call, as the person sees it: bounded, never refused for its size. */
export interface ConfirmDescriptor {
  message: string;
  info?: Array<{ name: string; value: string }>;
  /** Info rows past the first 20, left out (the person is told how many). */
  infoOmitted?: number;
  style?: 'destructive' | 'default';
  /** The add-on's picture of what the call will do, fetched and kept by Toolport (approvals/confirm-images.ts). */
  image?: ConfirmImage;
}

export interface ConfirmImage {
  /** SHA-256 of the bytes, hex: where they are kept. */
  hash: string;
  mimeType: string;
  width: number;
  height: number;
}

/** MCP content blocks as an add-on may return them. */
export type ContentBlock = Record<string, unknown> & { type: string };

/** A tool's result. `isError`: the tool reported that it failed, as MCP's CallToolResult says it. */
export interface ResultAnswer {
  kind: 'result';
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** Files to keep, each checked; what was not kept is said in `notKept`. The worker keeps them (calls/artifacts.ts) before the outcome leaves it. */
  files?: AnswerFile[];
  notKept?: string[];
}

/** What an add-on's answer means, after parsing and checking it. */
export type WebhookAnswer =
  | ResultAnswer
  /** `failed`: not a refusal but the add-on's own code failing (the kit says so with `"failed": true`). */
  | { kind: 'refusal'; message: string; failed?: boolean }
  /** A `tools.list` answer, as sent: installs/tool-lists.ts checks it against the manifest. */
  | { kind: 'tools'; tools: unknown; ttlSeconds: unknown }
  /** HTTP 202 to a task's call: the add-on answers later at the call's answer URL. */
  | { kind: 'accepted' }
  | {
      kind: 'confirm';
      confirm: ConfirmDescriptor | null;
      /** For the developer's delivery log: what was cut to fit the bounds, or left out. */
      cut?: string;
      /** `confirm.image` as the add-on gave it: fetched by the delivery before the person is asked. */
      imageUrl?: string;
    }
  | {
      kind: 'failure';
      errorClass: OutboundErrorClass | 'http_status' | 'gone' | 'bad_answer' | 'redirect' | 'deadline';
      retryable: boolean;
      status?: number;
      /** For the developer's delivery log only; never shown to the app. */
      detail: string;
    };
