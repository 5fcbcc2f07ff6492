/**
 * How large a record may be, for either stream kind, and what to do with one
 * that is larger. Kafka refuses a record batch above the broker's
 * `message.max.bytes` (1 MiB by default; topics inherit it as
 * `max.message.bytes`), and a record never spans batches: a record that does
 * not fit alone can never be written, however often it is retried. A producer
 * that keeps such a record in an all-or-nothing append (a poller's page) would
 * block that org for good. So producers measure records before appending and
 * send what is over the limit to the dead-letter topic instead, cut short.
 */
import { Header } from './headers.js';
import type { StreamRecord } from './types.js';

/**
 * The largest record (by `recordBytes`) every stream accepts: under Kafka's default `message.max.bytes`
 * (1,048,588), leaving room for the batch header (61 bytes), the record's framing, and gzip, which grows
 * data it cannot compress by well under 0.1 %. The embedded log takes appends up to 256 MiB.
 */
export const MAX_RECORD_BYTES = 1000 * 1024;

/** A dead letter that would not fit whole keeps this many leading bytes of its value. */
export const TRUNCATED_LETTER_BYTES = 64 * 1024;

/** Rough wire size of a record before compression: what the broker's limits see, plus framing. */
export function recordBytes(r: StreamRecord): number {
  let n = r.value.length + (r.key ? Buffer.byteLength(r.key) : 0) + 32;
  for (const [k, v] of Object.entries(r.headers)) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 4;
  return n;
}

/**
 * A dead letter as it can be stored: whole when it fits, else its first 64 KiB with the full size in
 * `hooklog-truncated-from-bytes` (the reason and origin headers stay whole), so the partition moves on
 * and the rejection is still visible, with the start of the bytes to recognise it by.
 */
export function storableLetter<T extends StreamRecord>(letter: T, maxBytes: number = MAX_RECORD_BYTES): T {
  if (recordBytes(letter) <= maxBytes) return letter;
  return {
    ...letter,
    value: letter.value.subarray(0, TRUNCATED_LETTER_BYTES),
    headers: { ...letter.headers, [Header.truncatedFromBytes]: String(letter.value.length) },
  };
}
