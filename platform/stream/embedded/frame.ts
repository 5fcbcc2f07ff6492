/**
 * The embedded log's on-disk frame: the unit of durability and atomicity.
 *
 *   frame   := length:u32 crc:u32 payload            (crc = CRC-32 of payload)
 *   payload := seq:u64 flags:u8 sectionCount:u32 section*
 *   section := topicLen:u16 topic partition:u32 baseOffset:u64 count:u32 bodyLen:u32 record{count}
 *   record  := timestamp:f64 keyLen:i32 (-1 = null) key headerCount:u32 (len:u32 name len:u32 value)*
 *              valueLen:u32 value
 *
 * All integers big-endian. One append, or one group of concurrent appends, is
 * one frame written with one write and one fsync; a frame that does not read
 * back whole with a matching CRC was never acknowledged. `seq` numbers frames
 * across the whole log (segments are named after their first frame's seq), so
 * a missing or reordered piece of the log is detected, not silently skipped.
 * A section's records have offsets `baseOffset + i`; an empty section states a
 * partition's next offset (used by snapshots, see log.ts).
 */
import { crc32 } from './crc32.js';

export const FRAME_HEADER_BYTES = 8;
/** seq + flags + sectionCount: the smallest payload a writer produces. */
export const MIN_PAYLOAD_BYTES = 13;
/** Larger lengths are garbage, not frames; also the cap on one append. */
export const MAX_PAYLOAD_BYTES = 256 * 1024 * 1024;
/** The frame restates state at the start of a segment (see log.ts, retention). */
export const FLAG_SNAPSHOT = 1;

/** A record as stored: the stream's record with its timestamp fixed. */
export interface LogRecord {
  readonly key: string | null;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  readonly timestamp: number;
}

/** Records for one partition, before the log gave them offsets. */
export interface SectionInput {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly LogRecord[];
}

export interface DecodedSection {
  readonly topic: string;
  readonly partition: number;
  readonly baseOffset: number;
  readonly count: number;
  /** Present only for sections the decoder was asked to materialise. */
  readonly records?: readonly LogRecord[];
}

export interface DecodedFrame {
  readonly seq: number;
  readonly flags: number;
  readonly sections: readonly DecodedSection[];
}

/** The structure inside a CRC-valid payload is wrong: a bug or deliberate tampering, never a torn write. */
export class MalformedPayload extends Error {}

/**
 * Encoded record prefixes (`keyLen key headerCount (len name len value)*`) by
 * headers object, then key. The records of one append usually share one key
 * and one headers object (a poller's page: 1000 events of one org, source and
 * receive time), so each distinct pair is encoded once per frame instead of
 * once per record (which cost a byteLength and a string write per record).
 * Keyed by identity and never kept past one call, so a headers object
 * changed between appends is encoded afresh.
 */
type Prefixes = Map<Readonly<Record<string, string>>, Map<string | null, Buffer>>;

function recordPrefix(r: Pick<LogRecord, 'key' | 'headers'>, prefixes: Prefixes): Buffer {
  let byKey = prefixes.get(r.headers);
  if (!byKey) prefixes.set(r.headers, (byKey = new Map()));
  let prefix = byKey.get(r.key);
  if (prefix) return prefix;
  const entries = Object.entries(r.headers);
  let n = 4 + (r.key === null ? 0 : Buffer.byteLength(r.key)) + 4;
  for (const [k, v] of entries) n += 8 + Buffer.byteLength(k) + Buffer.byteLength(v);
  const block = Buffer.allocUnsafe(n);
  let at = 0;
  const str = (s: string) => {
    at = block.writeUInt32BE(Buffer.byteLength(s), at);
    at += block.write(s, at);
  };
  if (r.key === null) at = block.writeInt32BE(-1, at);
  else str(r.key);
  at = block.writeUInt32BE(entries.length, at);
  for (const [k, v] of entries) {
    str(k);
    str(v);
  }
  byKey.set(r.key, (prefix = block));
  return prefix;
}

/** Encoded size of one section holding `records`. */
export function sectionBytes(topic: string, records: readonly LogRecord[], prefixes: Prefixes = new Map()): number {
  let n = 2 + Buffer.byteLength(topic) + 4 + 8 + 4 + 4;
  for (const r of records) n += 8 + recordPrefix(r, prefixes).length + 4 + r.value.length;
  return n;
}

/**
 * One whole frame (header included) holding `sections` with the given base
 * offsets, in the buffer `alloc` gives for its size (default: a new one).
 */
export function encodeFrame(
  seq: number,
  flags: number,
  sections: ReadonlyArray<SectionInput & { baseOffset: number }>,
  alloc: (size: number) => Buffer = (size) => Buffer.allocUnsafe(size),
): Buffer {
  const prefixes: Prefixes = new Map();
  const payloadBytes = MIN_PAYLOAD_BYTES + sections.reduce((n, s) => n + sectionBytes(s.topic, s.records, prefixes), 0);
  const buf = alloc(FRAME_HEADER_BYTES + payloadBytes);
  let at = FRAME_HEADER_BYTES;
  const u32 = (v: number) => (at = buf.writeUInt32BE(v, at));
  at = buf.writeBigUInt64BE(BigInt(seq), at);
  at = buf.writeUInt8(flags, at);
  u32(sections.length);
  for (const s of sections) {
    at = buf.writeUInt16BE(Buffer.byteLength(s.topic), at);
    at += buf.write(s.topic, at);
    u32(s.partition);
    at = buf.writeBigUInt64BE(BigInt(s.baseOffset), at);
    u32(s.records.length);
    const bodyLenAt = at;
    at += 4;
    for (const r of s.records) {
      at = buf.writeDoubleBE(r.timestamp, at);
      at += recordPrefix(r, prefixes).copy(buf, at);
      u32(r.value.length);
      at += r.value.copy(buf, at);
    }
    buf.writeUInt32BE(at - bodyLenAt - 4, bodyLenAt);
  }
  if (at !== buf.length) throw new Error(`frame size mismatch: wrote ${at} of ${buf.length} bytes`);
  buf.writeUInt32BE(payloadBytes, 0);
  buf.writeUInt32BE(crc32(buf.subarray(FRAME_HEADER_BYTES)), 4);
  return buf;
}

/**
 * Decodes a CRC-checked payload. Only sections for which `materialise` says yes
 * get their records decoded (values copied out of `payload`, which callers
 * reuse); the others are skipped by their length.
 */
export function decodePayload(
  payload: Buffer,
  materialise: (topic: string, partition: number) => boolean = () => false,
): DecodedFrame {
  let at = 0;
  const need = (n: number) => {
    if (n < 0 || at + n > payload.length) throw new MalformedPayload(`payload ends inside a field at byte ${at}`);
  };
  const u32 = () => (need(4), (at += 4), payload.readUInt32BE(at - 4));
  const u64 = () => {
    need(8);
    const v = payload.readBigUInt64BE(at);
    at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new MalformedPayload(`integer out of range at byte ${at - 8}`);
    return Number(v);
  };
  const bytes = (n: number) => (need(n), (at += n), payload.subarray(at - n, at));
  const str = () => bytes(u32()).toString('utf8');

  const seq = u64();
  need(1);
  const flags = payload.readUInt8(at++);
  const sectionCount = u32();
  const sections: DecodedSection[] = [];
  for (let i = 0; i < sectionCount; i++) {
    need(2);
    const topic = bytes(payload.readUInt16BE((at += 2) - 2)).toString('utf8');
    const partition = u32();
    const baseOffset = u64();
    const count = u32();
    const bodyEnd = u32() + at;
    if (!materialise(topic, partition)) {
      need(bodyEnd - at);
      at = bodyEnd;
      sections.push({ topic, partition, baseOffset, count });
      continue;
    }
    const records: LogRecord[] = [];
    for (let r = 0; r < count; r++) {
      need(8);
      const timestamp = payload.readDoubleBE((at += 8) - 8);
      need(4);
      const keyLen = payload.readInt32BE((at += 4) - 4);
      const key = keyLen === -1 ? null : bytes(keyLen).toString('utf8');
      // fromEntries defines own properties, so a header named `__proto__` stays data.
      const pairs: Array<[string, string]> = [];
      for (let h = u32(); h > 0; h--) pairs.push([str(), str()]);
      const headers: Record<string, string> = Object.fromEntries(pairs);
      const value = Buffer.from(bytes(u32()));
      records.push({ key, value, headers, timestamp });
    }
    if (at !== bodyEnd) throw new MalformedPayload(`section body length mismatch at byte ${at}`);
    sections.push({ topic, partition, baseOffset, count, records });
  }
  if (at !== payload.length) throw new MalformedPayload(`${payload.length - at} trailing bytes after the last section`);
  return { seq, flags, sections };
}
