/**
 * The embedded log: one append-only sequence of frames for all topics, split
 * into segment files. Appends are group-committed; a caller is acknowledged
 * only after the frame holding its records was written and fdatasync'ed, and
 * readers never see bytes past the last synced frame.
 *
 * Retention invariant: every segment starts with a snapshot frame that restates
 * what must outlive old segments (each partition's next offset, topic metadata,
 * committed offsets, the latest record per key of compacted topics). The newest
 * segment that starts with a snapshot, plus the segments after it, therefore
 * hold the whole state, and only segments before it are ever deleted.
 */
import { mkdir, open, stat, unlink, type FileHandle } from 'node:fs/promises';
import { HooklogError } from '../../errors.js';
import type { Logger } from '../../log.js';
import {
  FLAG_SNAPSHOT,
  FRAME_HEADER_BYTES,
  MAX_PAYLOAD_BYTES,
  MIN_PAYLOAD_BYTES,
  encodeFrame,
  sectionBytes,
  type DecodedSection,
  type LogRecord,
  type SectionInput,
} from './frame.js';
import { GroupCommit } from './group-commit.js';
import { OffsetIndex, tpKey, type Position } from './offset-index.js';
import {
  createSegment,
  isInternalTopic,
  listSegments,
  openSegments,
  removeSidecar,
  syncDir,
  writeSidecar,
  type SegmentInfo,
} from './segments.js';

export interface LogOptions {
  readonly dir: string;
  /** A new segment starts once the active one reaches this size. */
  readonly segmentBytes: number;
  /** Segments whose last write is older than this are deleted (see the retention invariant). */
  readonly retentionMs: number;
  readonly logger: Logger;
  /** Sections of internal topics with their records, in log order: replayed on open, then after each sync. */
  readonly onInternal: (section: DecodedSection) => void;
  /** Records to restate at the start of each new segment (besides each partition's next offset). */
  readonly snapshot: (log: EmbeddedLog) => Promise<SectionInput[]>;
  /**
   * Told of every section with records once its frame is durable, in log order, before the next frame
   * is written (not of what was on disk at open).
   */
  readonly onDurable?: (section: DecodedSection & { records: readonly LogRecord[] }) => void;
  /**
   * The smallest offset of the partition some registered consumer group has
   * not committed (undefined: no group reads it). A segment holding any such
   * record is never deleted, however old: retention must not lose data.
   */
  readonly retainFrom?: (topic: string, partition: number) => number | undefined;
  /** Disk cap over all segments: beyond it, appends holding records of a `capped` topic are refused. Default: none. */
  readonly maxBytes?: number;
  /** Topics whose appends the cap refuses (ingest). Default: every non-internal topic. */
  readonly capped?: (topic: string) => boolean;
  /** Told when the log goes over its cap or back under it. */
  readonly onCapChange?: (over: boolean, bytes: number) => void;
}

/** Soft cap on one group commit; a single larger append still goes whole. */
const GROUP_BYTES = 16 * 1024 * 1024;
/**
 * Frames up to this size (a 1000-event page is about 1.6 MB) are encoded into
 * one buffer the log keeps, not a new one each: a fresh multi-megabyte buffer
 * is fresh memory, and touching it (page faults) cost more than the copy into
 * it, ~0.7 ms per page. Larger frames (big groups, snapshots) get their own.
 */
const SCRATCH_BYTES = 4 * 1024 * 1024;

export class EmbeddedLog {
  readonly #o: LogOptions;
  readonly #segments: SegmentInfo[];
  readonly #index: OffsetIndex;
  readonly #queue: GroupCommit<readonly SectionInput[]>;
  readonly #waiters = new Set<() => void>();
  readonly #timer: NodeJS.Timeout;
  #active: FileHandle;
  /** Grown on demand up to SCRATCH_BYTES; #write, one at a time, is done with it when it returns. */
  #scratch: Buffer = Buffer.alloc(0);
  #nextSeq: number;
  #version = 0;
  #fsyncs = 0;
  #failed: HooklogError | null = null;
  #closed = false;
  #retaining = false;
  #overCap = false;
  #lastPinnedLog = 0;
  /** Backups copying segments now: retention deletes none meanwhile. */
  #holds = 0;

  private constructor(o: LogOptions, segments: SegmentInfo[], index: OffsetIndex, active: FileHandle, nextSeq: number) {
    this.#o = o;
    this.#segments = segments;
    this.#index = index;
    this.#active = active;
    this.#nextSeq = nextSeq;
    this.#queue = new GroupCommit((groups) => this.#flush(groups.flat()), GROUP_BYTES);
    const every = Math.max(1_000, Math.min(o.retentionMs / 4, 5 * 60_000));
    this.#timer = setInterval(
      () =>
        void this.enforceRetention().catch((err: unknown) => o.logger.error({ err }, 'embedded log: retention failed')),
      every,
    );
    this.#timer.unref();
  }

  /**
   * Opens (creating if needed) the log in `o.dir`: sealed segments with a
   * sidecar are restored from it, the rest (at least the newest sealed one
   * and the active one) are read and every frame checked.
   */
  static async open(o: LogOptions): Promise<EmbeddedLog> {
    await mkdir(o.dir, { recursive: true });
    const segments = await listSegments(o.dir);
    const index = new OffsetIndex();
    const { nextSeq, scanned } = await openSegments(segments, index, o.logger, (frame, at) => {
      for (const s of frame.sections) {
        index.note(s.topic, s.partition, s.baseOffset, s.count, at);
        if (s.records && s.count > 0) o.onInternal(s);
      }
    });
    o.logger.info({ segments: segments.length, read: scanned }, 'embedded log opened');
    if (segments.length === 0) await (await createSegment(o.dir, segments, nextSeq)).close();
    const active = await open(segments[segments.length - 1]!.path, 'r+');
    const log = new EmbeddedLog(o, segments, index, active, nextSeq);
    await log.enforceRetention().catch((err: unknown) => o.logger.error({ err }, 'embedded log: retention failed'));
    return log;
  }

  /**
   * Appends, resolving once durable. Sections are kept whole and in order; all of one call share a frame.
   * Over the disk cap, an append holding records of a capped topic is refused (OVERLOADED, retriable);
   * consumers' own writes (commits, dead letters, alerts) still go, so they can drain the log.
   */
  append(sections: readonly SectionInput[]): Promise<void> {
    if (this.#closed) return Promise.reject(new HooklogError('STREAM_CLOSED', 'embedded log is closed'));
    if (this.#failed) return Promise.reject(this.#failed);
    const bytes = MIN_PAYLOAD_BYTES + sections.reduce((n, s) => n + sectionBytes(s.topic, s.records), 0);
    const maxBytes = this.#o.maxBytes ?? Infinity;
    const capped = this.#o.capped ?? ((t: string) => !isInternalTopic(t));
    const ingest = maxBytes !== Infinity && sections.some((s) => s.records.length > 0 && capped(s.topic));
    if (ingest) {
      if (this.bytes + bytes <= maxBytes) this.#noteCap(false);
      else {
        this.#noteCap(true);
        return Promise.reject(
          new HooklogError(
            'OVERLOADED',
            `the embedded log is at its disk cap (stream.embedded.max_bytes = ${maxBytes} bytes): ` +
              'appends wait until consumers commit and retention frees segments',
            { retriable: true },
          ),
        );
      }
    }
    if (bytes > MAX_PAYLOAD_BYTES) {
      return Promise.reject(
        new HooklogError(
          'RECORD_INVALID',
          `append of ${bytes} bytes exceeds the embedded log's ${MAX_PAYLOAD_BYTES}-byte frame limit`,
        ),
      );
    }
    return this.#queue.submit(sections, bytes);
  }

  async #flush(sections: readonly SectionInput[]): Promise<void> {
    if (this.#failed) throw this.#failed;
    try {
      if (this.#last.size >= this.#o.segmentBytes) await this.#roll();
      if (this.#last.size === 0) {
        const state = [...this.#index.partitions()].map(({ topic, partition }) => ({ topic, partition, records: [] }));
        await this.#write(FLAG_SNAPSHOT, [...state, ...(await this.#o.snapshot(this))]);
      }
      await this.#write(0, sections);
    } catch (err) {
      // After a failed write or fsync the file's state is unknown (and the page
      // cache may lie): refuse further appends; reopening re-reads what is on disk.
      this.#failed = new HooklogError(
        'STREAM_APPEND_FAILED',
        `embedded log write failed; the log takes no more appends until reopened: ${String(err)}`,
        { cause: err },
      );
      throw this.#failed;
    }
  }

  /** Writes one frame, syncs it, then publishes it to the index, the internal state and readers. */
  async #write(flags: number, sections: readonly SectionInput[]): Promise<void> {
    const merged = new Map<string, { topic: string; partition: number; records: LogRecord[]; baseOffset: number }>();
    for (const s of sections) {
      const key = tpKey(s.topic, s.partition);
      let m = merged.get(key);
      if (!m)
        merged.set(
          key,
          (m = {
            topic: s.topic,
            partition: s.partition,
            records: [],
            baseOffset: this.#index.nextOffset(s.topic, s.partition),
          }),
        );
      for (const r of s.records) m.records.push(r);
    }
    const frame = encodeFrame(this.#nextSeq, flags, [...merged.values()], (size) => this.#frameBuffer(size));
    // Never write what recovery would reject as an impossible length (a huge snapshot).
    if (frame.length - FRAME_HEADER_BYTES > MAX_PAYLOAD_BYTES)
      throw new Error(`frame of ${frame.length} bytes exceeds the frame limit`);
    const seg = this.#last;
    const at: Position = { segment: seg.base, pos: seg.size };
    for (let done = 0; done < frame.length;) {
      done += (await this.#active.write(frame, done, frame.length - done, at.pos + done)).bytesWritten;
    }
    await this.#active.datasync();
    this.#fsyncs++;
    // Durable from here on.
    this.#nextSeq++;
    seg.size += frame.length;
    if (at.pos === 0) seg.anchored = (flags & FLAG_SNAPSHOT) !== 0;
    for (const s of merged.values()) {
      this.#index.note(s.topic, s.partition, s.baseOffset, s.records.length, at);
      if (s.records.length === 0) continue;
      if (isInternalTopic(s.topic)) this.#o.onInternal({ ...s, count: s.records.length });
      this.#o.onDurable?.({ ...s, count: s.records.length });
    }
    this.#version++;
    this.#wake();
  }

  /** A buffer of `size` bytes for the next frame: a view of the scratch buffer when it fits SCRATCH_BYTES. */
  #frameBuffer(size: number): Buffer {
    if (size > SCRATCH_BYTES) return Buffer.allocUnsafe(size);
    if (size > this.#scratch.length) this.#scratch = Buffer.allocUnsafe(Math.min(SCRATCH_BYTES, size * 2));
    return this.#scratch.subarray(0, size);
  }

  async #roll(): Promise<void> {
    // Sealed from here on: its sidecar lets the next open skip reading it.
    const sealed = this.#last;
    await writeSidecar(sealed, this.#index, this.#nextSeq).catch((err: unknown) =>
      this.#o.logger.warn({ err, segment: sealed.path }, 'embedded log: writing a segment sidecar failed'),
    );
    const next = await createSegment(this.#o.dir, this.#segments, this.#nextSeq);
    const old = this.#active;
    this.#active = next;
    await old.close();
    this.#o.logger.info({ segment: this.#last.path }, 'embedded log: new segment');
  }

  get #last(): SegmentInfo {
    return this.#segments[this.#segments.length - 1]!;
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  /** Bytes of all retained segments. */
  get bytes(): number {
    return this.#segments.reduce((n, seg) => n + seg.size, 0);
  }

  /** True while appends to capped topics are refused. */
  get overCap(): boolean {
    return this.#overCap;
  }

  #noteCap(over: boolean): void {
    if (this.#overCap === over) return;
    this.#overCap = over;
    const bytes = this.bytes;
    if (over)
      this.#o.logger.warn(
        { bytes, max_bytes: this.#o.maxBytes },
        'embedded log: at its disk cap, refusing new records until consumers catch up',
      );
    else this.#o.logger.info({ bytes, max_bytes: this.#o.maxBytes }, 'embedded log: back under its disk cap');
    this.#o.onCapChange?.(over, bytes);
  }

  /**
   * A consumer group still needs records in the oldest segment: names it (for
   * the log), else null. Records of a partition in that segment are those
   * below the partition's first offset in the next segment.
   */
  #pinnedBy(oldest: SegmentInfo, next: SegmentInfo): string | null {
    const retainFrom = this.#o.retainFrom;
    if (!retainFrom) return null;
    for (const { topic, partition, next: end } of this.#index.partitions()) {
      if (isInternalTopic(topic) || this.#index.firstOffsetFrom(topic, partition, oldest.base, true) === undefined)
        continue;
      const need = retainFrom(topic, partition);
      if (need === undefined) continue;
      const after = this.#index.firstOffsetFrom(topic, partition, next.base) ?? end;
      if (need < after) return `${topic}[${partition}] from offset ${need}`;
    }
    return null;
  }

  /**
   * The log as it is durable now, for a backup: every segment's path and its synced length (appended frames grow
   * only the last segment, past that length, and a new segment's first frame is a snapshot, so the lengths are a
   * log that opens as the state of this moment). Retention deletes nothing until `release`, so the files can be
   * copied afterwards, up to those lengths, while appends go on.
   */
  holdSegments(): { segments: Array<{ path: string; size: number }>; release: () => void } {
    if (this.#closed) throw new HooklogError('STREAM_CLOSED', 'embedded log is closed');
    this.#holds++;
    let released = false;
    return {
      segments: this.#segments.map((seg) => ({ path: seg.path, size: seg.size })),
      release: () => {
        if (released) return;
        released = true;
        this.#holds--;
      },
    };
  }

  /** Changes with every durable frame; pass it to `waitForAppend`. */
  get version(): number {
    return this.#version;
  }

  /** Syncs of frames so far: with group commit, far fewer than appends under concurrency. */
  get fsyncCount(): number {
    return this.#fsyncs;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The error that stopped appends, if one did; null while the log is healthy. */
  get failure(): HooklogError | null {
    return this.#failed;
  }

  nextOffset(topic: string, partition: number): number {
    return this.#index.nextOffset(topic, partition);
  }

  /**
   * Where reading the latest record per key of a compacted partition may
   * start: the partition's first offset in the newest segment that starts
   * with a snapshot, which restates every key's latest record. Reading from
   * there, not from the oldest retained record, keeps start-up and segment
   * rolls bounded by about a segment however much the log retains.
   */
  compactedStart(topic: string, partition: number): number {
    const anchor = this.#segments.findLast((seg) => seg.anchored);
    if (!anchor) return 0;
    return this.#index.firstOffsetFrom(topic, partition, anchor.base) ?? this.#index.nextOffset(topic, partition);
  }

  /** Where a reader looking for `offset` of the partition starts (see OffsetIndex.seek). */
  seek(topic: string, partition: number, offset: number): Position {
    return this.#index.seek(topic, partition, offset) ?? { segment: this.#last.base, pos: this.#last.size };
  }

  /**
   * The segment and the durable byte range to read at `p`, moving on to the next
   * segment at the end of a sealed one, and to the oldest retained segment when
   * `p` lies in one retention deleted. Null at the end of the log.
   */
  locate(p: Position): { seg: SegmentInfo; pos: number } | null {
    let i = this.#segments.findIndex((s) => s.base === p.segment);
    let pos = p.pos;
    if (i === -1) {
      if (p.segment > this.#last.base)
        throw new HooklogError('INTERNAL', `no segment ${p.segment} in the embedded log`);
      i = 0;
      pos = 0;
    }
    for (;;) {
      const seg = this.#segments[i]!;
      if (pos < seg.size) return { seg, pos };
      if (i === this.#segments.length - 1) return null;
      i++;
      pos = 0;
    }
  }

  /** Resolves once a frame was appended after `version`, the log closed, or `signal` aborted. */
  waitForAppend(version: number, signal: AbortSignal): Promise<void> {
    if (this.#version !== version || this.#closed || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.#waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Deletes whole segments that precede the newest snapshot and that every
   * registered group has committed past (`retainFrom`), oldest first: those
   * last written more than `retentionMs` ago, and any while the log is over
   * its disk cap. A segment still needed is kept however old, and said so.
   */
  async enforceRetention(now = Date.now()): Promise<number> {
    if (this.#retaining || this.#closed) return 0;
    this.#retaining = true;
    let deleted = 0;
    try {
      for (;;) {
        const anchor = this.#segments.findLastIndex((s) => s.anchored);
        const oldest = this.#segments[0]!;
        if (anchor <= 0) break;
        const overCap = this.bytes > (this.#o.maxBytes ?? Infinity) * 0.9;
        if (!overCap && now - (await stat(oldest.path)).mtimeMs < this.#o.retentionMs) break;
        const pinned = this.#pinnedBy(oldest, this.#segments[1]!);
        if (pinned) {
          if (Date.now() - this.#lastPinnedLog > 60_000) {
            this.#lastPinnedLog = Date.now();
            this.#o.logger.warn(
              { segment: oldest.path, needed: pinned, bytes: this.bytes },
              'embedded log: keeping a segment past retention: a consumer group has not committed it',
            );
          }
          break;
        }
        // A backup listed the segments and copies them now: deleting one would lose its copy's bytes.
        if (this.#holds > 0) break;
        // Out of the list first, so readers move on before the file goes.
        this.#segments.shift();
        this.#index.dropBefore(this.#segments[0]!.base);
        await unlink(oldest.path);
        await removeSidecar(oldest);
        await syncDir(this.#o.dir);
        deleted++;
        this.#o.logger.info({ segment: oldest.path, over_cap: overCap }, 'embedded log: deleted segment');
      }
    } finally {
      this.#retaining = false;
    }
    return deleted;
  }

  /** Waits for appends in flight, then closes the file. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#queue.drain();
    this.#wake();
    await this.#active.close();
  }
}
