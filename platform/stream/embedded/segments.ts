/**
 * Segment files and recovery. The log is a directory of `<seq>.seg` files, each
 * named by the seq of its first frame. On open every frame of every segment is
 * read and checked; the only damage repaired is a torn final write in the
 * newest segment, which by construction was never acknowledged.
 */
import { open, readFile, readdir, rename, stat, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { HooklogError, errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { FLAG_SNAPSHOT, decodePayload, type DecodedFrame } from './frame.js';
import { findLaterFrame, scanFrames } from './frame-reader.js';
import type { OffsetIndex, Position } from './offset-index.js';

export interface SegmentInfo {
  /** Seq of the segment's first frame; also its name. */
  readonly base: number;
  readonly path: string;
  /** Bytes of complete, durable frames: readers never read past this. */
  size: number;
  /** Starts with a snapshot frame, so it and the segments after it hold the whole state. */
  anchored: boolean;
}

const NAME = /^(\d{20})\.seg$/;

export const segmentName = (base: number): string => `${String(base).padStart(20, '0')}.seg`;

/** Internal topics (`__topics`, `__offsets`) are materialised during replay; user data is not. */
export const isInternalTopic = (topic: string): boolean => topic.startsWith('__');

/** The directory's segments in log order. Other files are ignored. */
export async function listSegments(dir: string): Promise<SegmentInfo[]> {
  const found: SegmentInfo[] = [];
  for (const name of await readdir(dir)) {
    const m = NAME.exec(name);
    if (!m) continue;
    const path = join(dir, name);
    found.push({ base: Number(m[1]), path, size: (await stat(path)).size, anchored: false });
  }
  return found.sort((a, b) => a.base - b.base);
}

/** Makes a create, rename or unlink in `dir` durable. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Creates the (empty) segment for frame `base`, durably, and adds it to `segments`. */
export async function createSegment(dir: string, segments: SegmentInfo[], base: number): Promise<FileHandle> {
  const path = join(dir, segmentName(base));
  const fh = await open(path, 'wx');
  await syncDir(dir);
  segments.push({ base, path, size: 0, anchored: false });
  return fh;
}

const corrupt = (message: string, cause?: unknown) =>
  new HooklogError('STREAM_CORRUPT', `embedded log corrupt: ${message}`, { cause });

/**
 * Reads every frame of `segments` in order, handing each decoded frame (internal
 * topics materialised) to `onFrame`, and returns the seq the next frame gets.
 * Mutates `size` and `anchored` of each segment to what was found. Throws
 * STREAM_CORRUPT, naming file and byte position, for any damage it may not repair.
 */
export async function recoverSegments(
  segments: readonly SegmentInfo[],
  logger: Logger,
  onFrame: (frame: DecodedFrame, at: Position) => void,
): Promise<number> {
  let expectedSeq = segments[0]?.base ?? 0;
  for (const [i, seg] of segments.entries()) {
    const isLast = i === segments.length - 1;
    if (seg.base !== expectedSeq) {
      throw corrupt(
        `${seg.path} starts at frame ${seg.base}, but the previous segment ended before frame ${expectedSeq}`,
      );
    }
    const fh = await open(seg.path, isLast ? 'r+' : 'r');
    try {
      const result = await scanFrames(fh, 0, seg.size, Infinity, (payload, pos) => {
        let frame: DecodedFrame;
        try {
          frame = decodePayload(payload, isInternalTopic);
          if (frame.seq !== expectedSeq) throw new Error(`frame seq ${frame.seq}, expected ${expectedSeq}`);
          if (pos === 0) seg.anchored = (frame.flags & FLAG_SNAPSHOT) !== 0;
          onFrame(frame, { segment: seg.base, pos });
        } catch (err) {
          throw err instanceof HooklogError ? err : corrupt(`${seg.path} at byte ${pos}: ${errorMessage(err)}`, err);
        }
        expectedSeq++;
      });
      if (result.bad) {
        const where = `${seg.path} at byte ${result.bad.pos} (${result.bad.reason}; file is ${seg.size} bytes)`;
        if (!isLast) throw corrupt(`${where}, in a segment that is not the newest`);
        const tail = Buffer.alloc(seg.size - result.end);
        await fh.read(tail, 0, tail.length, result.end);
        const later = findLaterFrame(tail, expectedSeq);
        if (later !== undefined) {
          throw corrupt(
            `${where}, followed by a valid frame at byte ${result.end + later}: acknowledged data is damaged`,
          );
        }
        // A torn final write: the append it belongs to never resolved. Cut it off.
        logger.warn(
          { segment: seg.path, pos: result.end, droppedBytes: seg.size - result.end, reason: result.bad.reason },
          'embedded log: truncating torn tail',
        );
        await fh.truncate(result.end);
        await fh.sync();
        seg.size = result.end;
      }
    } finally {
      await fh.close();
    }
  }
  return expectedSeq;
}

/**
 * A sealed segment's sidecar, `<base>.idx`: what replaying its frames would
 * teach the index (its entries, every partition's next offset at its end),
 * written when the segment is sealed. Opening a log trusts a sidecar whose
 * size matches its segment instead of reading the segment: open then reads
 * only the segments from the newest sealed one on (its snapshot frame
 * restates the state), however much is retained. A segment's frames are
 * still checked when a reader reaches them. A missing or unreadable sidecar
 * just means that segment is read and checked on open, as before.
 */
interface Sidecar {
  readonly v: 1;
  readonly base: number;
  readonly size: number;
  readonly anchored: boolean;
  /** Seq of the frame after this segment's last: the next segment's name. */
  readonly nextSeq: number;
  readonly entries: ReadonlyArray<readonly [string, number, number, number]>;
  readonly next: ReadonlyArray<readonly [string, number, number]>;
}

export const sidecarPath = (seg: SegmentInfo): string => seg.path.replace(/\.seg$/, '.idx');

/** Writes the sidecar of a segment just sealed (atomically: a temp file renamed over). */
export async function writeSidecar(seg: SegmentInfo, index: OffsetIndex, nextSeq: number): Promise<void> {
  const next = [...index.partitions()].map(({ topic, partition, next: n }) => [topic, partition, n] as const);
  const car: Sidecar = {
    v: 1,
    base: seg.base,
    size: seg.size,
    anchored: seg.anchored,
    nextSeq,
    entries: index.entriesIn(seg.base),
    next,
  };
  const tmp = `${sidecarPath(seg)}.tmp`;
  await writeFile(tmp, JSON.stringify(car));
  await rename(tmp, sidecarPath(seg));
}

export async function removeSidecar(seg: SegmentInfo): Promise<void> {
  await unlink(sidecarPath(seg)).catch(() => undefined);
}

async function readSidecar(seg: SegmentInfo): Promise<Sidecar | null> {
  try {
    const car = JSON.parse(await readFile(sidecarPath(seg), 'utf8')) as Sidecar;
    return car.v === 1 &&
      car.base === seg.base &&
      car.size === seg.size &&
      Array.isArray(car.entries) &&
      Array.isArray(car.next)
      ? car
      : null;
  } catch {
    return null;
  }
}

/**
 * Opens the log's segments: restores the sealed ones that have sidecars
 * (a prefix of the log, up to the newest anchored one) into `index`, then
 * reads and checks the rest with `recoverSegments`. Returns the next seq and
 * how many segments were read.
 */
export async function openSegments(
  segments: readonly SegmentInfo[],
  index: OffsetIndex,
  logger: Logger,
  onFrame: (frame: DecodedFrame, at: Position) => void,
): Promise<{ nextSeq: number; scanned: number }> {
  const cars: Sidecar[] = [];
  for (const seg of segments.slice(0, -1)) {
    const car = await readSidecar(seg);
    if (!car) break;
    cars.push(car);
  }
  // Read from the newest anchored segment with a sidecar on: its snapshot restates what the skipped ones held.
  const from = cars.findLastIndex((c) => c.anchored);
  const skip = Math.max(0, from);
  for (let i = 0; i < skip; i++) {
    const car = cars[i]!;
    const nextSeg = segments[i + 1]!;
    if (car.nextSeq !== nextSeg.base) {
      throw corrupt(
        `${nextSeg.path} starts at frame ${nextSeg.base}, but the previous segment ended before frame ${car.nextSeq}`,
      );
    }
    index.restore(car.base, car.entries, car.next);
    segments[i]!.anchored = car.anchored;
  }
  const rest = segments.slice(skip);
  const nextSeq = await recoverSegments(rest, logger, onFrame);
  return { nextSeq, scanned: rest.length };
}
