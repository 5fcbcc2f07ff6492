/**
 * Reading frames back from a segment file: one buffered sequential pass that
 * validates every frame it hands over (length bounds, CRC). Used by recovery
 * on open and by consumers, so both trust exactly the same bytes.
 */
import type { FileHandle } from 'node:fs/promises';
import { crc32 } from './crc32.js';
import { FRAME_HEADER_BYTES, MAX_PAYLOAD_BYTES, MIN_PAYLOAD_BYTES } from './frame.js';

const CHUNK_BYTES = 1024 * 1024;

export type BadFrameReason = 'short header' | 'short payload' | 'impossible length' | 'crc mismatch';

export interface ScanResult {
  /** File position after the last valid frame visited. */
  readonly end: number;
  /** Frames visited. */
  readonly frames: number;
  /** Set when a frame at `end` is not valid (nothing after it was visited). */
  readonly bad?: { readonly pos: number; readonly reason: BadFrameReason };
}

/**
 * Visits the valid frames in [from, to) in order, stopping at the first invalid
 * one, at `to`, once at least `maxBytes` were visited, or after a visit that
 * returned false (always on a frame boundary). `payload` is a view into a
 * reused buffer: copy what you keep.
 */
export async function scanFrames(
  fh: FileHandle,
  from: number,
  to: number,
  maxBytes: number,
  visit: (payload: Buffer, pos: number) => boolean | void,
): Promise<ScanResult> {
  let buf = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, Math.max(FRAME_HEADER_BYTES, to - from)));
  let bufStart = from;
  let bufLen = 0;
  let pos = from;
  let frames = 0;

  /** Makes [pos, pos + n) available in `buf`; false when the file (or `to`) ends first. */
  async function ensure(n: number): Promise<boolean> {
    if (pos + n > to) return false;
    if (pos >= bufStart && pos + n <= bufStart + bufLen) return true;
    if (buf.length < n) buf = Buffer.allocUnsafe(n);
    // Read ahead no further than this call will go: the rest of `maxBytes`, or the frame at hand.
    const want = Math.min(to - pos, Math.max(n, Math.min(buf.length, from + maxBytes - pos)));
    let got = 0;
    while (got < want) {
      const { bytesRead } = await fh.read(buf, got, want - got, pos + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    bufStart = pos;
    bufLen = got;
    return got >= n;
  }

  while (pos < to && pos - from < maxBytes) {
    if (!(await ensure(FRAME_HEADER_BYTES))) return { end: pos, frames, bad: { pos, reason: 'short header' } };
    const length = buf.readUInt32BE(pos - bufStart);
    const crc = buf.readUInt32BE(pos - bufStart + 4);
    if (length < MIN_PAYLOAD_BYTES || length > MAX_PAYLOAD_BYTES)
      return { end: pos, frames, bad: { pos, reason: 'impossible length' } };
    if (!(await ensure(FRAME_HEADER_BYTES + length)))
      return { end: pos, frames, bad: { pos, reason: 'short payload' } };
    const start = pos - bufStart + FRAME_HEADER_BYTES;
    const payload = buf.subarray(start, start + length);
    if (crc32(payload) !== crc) return { end: pos, frames, bad: { pos, reason: 'crc mismatch' } };
    const more = visit(payload, pos);
    frames++;
    pos += FRAME_HEADER_BYTES + length;
    if (more === false) break;
  }
  return { end: pos, frames };
}

/**
 * After an invalid frame at `from` in the newest segment: is there a valid frame
 * anywhere after it whose seq is at least `minSeq`? If so the damage is not a
 * torn final write but lost acknowledged data, which must stop the open rather
 * than be truncated away. `tail` is the file's bytes from `from` to its end.
 */
export function findLaterFrame(tail: Buffer, minSeq: number): number | undefined {
  for (let at = 1; at + FRAME_HEADER_BYTES + MIN_PAYLOAD_BYTES <= tail.length; at++) {
    const length = tail.readUInt32BE(at);
    if (length < MIN_PAYLOAD_BYTES || length > MAX_PAYLOAD_BYTES || at + FRAME_HEADER_BYTES + length > tail.length)
      continue;
    const seq = tail.readBigUInt64BE(at + FRAME_HEADER_BYTES);
    if (seq < BigInt(minSeq) || seq > BigInt(minSeq) + 1_000_000n) continue;
    const payload = tail.subarray(at + FRAME_HEADER_BYTES, at + FRAME_HEADER_BYTES + length);
    if (crc32(payload) === tail.readUInt32BE(at + 4)) return at;
  }
  return undefined;
}
