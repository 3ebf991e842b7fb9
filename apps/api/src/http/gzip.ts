import { constants, crc32, deflateRawSync } from 'node:zlib';

/**
 * A large part compressed once, ending on a sync flush, then per request a stored block with the
 * changing tail (the JSON-RPC id) and a continued CRC-32 (RFC 1951 §3.2.4, RFC 1952 §2.3).
 */
export interface GzipHead {
  /** The gzip header and the large part's deflate blocks. */
  bytes: Buffer;
  crc: number;
  length: number;
}

// ID1 ID2, CM = deflate, no flags, no MTIME, XFL 0, OS unknown.
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
const MAX_STORED = 0xffff;

export function gzipHead(data: Buffer): GzipHead {
  const deflated = deflateRawSync(data, { finishFlush: constants.Z_SYNC_FLUSH });
  return { bytes: Buffer.concat([HEADER, deflated]), crc: crc32(data), length: data.length };
}

/** The whole gzip body: `head`, then `tail`. Undefined for a tail over 64 KB (one stored block's limit). */
export function gzipWithTail(head: GzipHead, tail: Buffer): Buffer<ArrayBuffer> | undefined {
  if (tail.length > MAX_STORED) return undefined;
  const out = Buffer.allocUnsafe(head.bytes.length + 5 + tail.length + 8);
  let at = head.bytes.copy(out, 0);
  out[at++] = 0x01; // BFINAL = 1, BTYPE = 00: stored
  at = out.writeUInt16LE(tail.length, at);
  at = out.writeUInt16LE(~tail.length & 0xffff, at);
  at += tail.copy(out, at);
  at = out.writeUInt32LE(crc32(tail, head.crc), at);
  out.writeUInt32LE((head.length + tail.length) % 0x1_0000_0000, at);
  return out;
}
