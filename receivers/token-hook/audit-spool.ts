/**
 * The audit trail's disk spool: where decisions go when the stream cannot take
 * them (down, slow, refusing), so that an outage of the stream neither loses a
 * decision nor holds a sign-in, and memory stays bounded.
 *
 * One file per hook, newline-delimited JSON, one stream record per line, written
 * with the record's final decision id: a replay re-appends the very record, so a
 * record that reached the stream twice (an append that failed after it landed,
 * a crash between a replay and its offset) folds in `token_decisions`
 * (ReplacingMergeTree ordered by decision id).
 *
 * Appends are synchronous page-cache writes of one batch (tens of microseconds,
 * on the flusher's turn, not a request's); the fsync runs in the background on
 * the thread pool, at most one at a time. The read position is kept in a side
 * file so a restart replays only what was not yet appended; once everything is
 * replayed the file is truncated. The spool is the only place a decision may
 * be dropped: when the file would pass its byte cap, or the disk refuses the
 * write. The caller counts and logs that.
 */
import {
  closeSync,
  fdatasync,
  fdatasyncSync,
  existsSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  fstatSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import type { StreamRecord } from '../../platform/stream/types.js';

/** A spooled line: the stream record, value as its text. */
interface SpoolLine {
  readonly k: string | null;
  readonly v: string;
  readonly h: Readonly<Record<string, string>>;
  readonly t: number;
}

/** What a write could not keep, and why (the caller counts it as dropped). */
export type SpoolRefusal = 'spool_full' | 'spool_failed';

export interface SpoolOptions {
  readonly file: string;
  /** The file is never let grow past this; a batch that would is refused. */
  readonly maxBytes: number;
  /** Called with a failed background fsync (the data stays in the page cache; logged, not dropped). */
  readonly onSyncError: (err: unknown) => void;
}

/** A batch read back for replay; `consume` once the stream holds it. */
export interface SpoolBatch {
  readonly records: StreamRecord[];
  readonly bytes: number;
  /** Lines that did not parse (a write torn by a crash): lost, to be counted. */
  readonly corrupt: number;
}

const FSYNC_DELAY_MS = 100;
const READ_BYTES = 256 * 1024;

export function spoolLine(r: StreamRecord): string {
  const line: SpoolLine = { k: r.key, v: r.value.toString('utf8'), h: r.headers, t: r.timestamp ?? Date.now() };
  return `${JSON.stringify(line)}\n`;
}

function recordOf(text: string): StreamRecord | undefined {
  try {
    const l = JSON.parse(text) as SpoolLine;
    if (typeof l.v !== 'string') return undefined;
    return { key: l.k, value: Buffer.from(l.v), headers: l.h, timestamp: l.t };
  } catch {
    return undefined;
  }
}

export class AuditSpool {
  readonly #opts: SpoolOptions;
  readonly #offsetFile: string;
  #fd: number | undefined;
  /** Bytes in the file (every write is whole and synchronous, so this is exact). */
  #size = 0;
  /** Bytes already appended to the stream. */
  #read = 0;
  #syncTimer: NodeJS.Timeout | undefined;
  /** The background fsync in flight, if any. */
  #synced: Promise<void> | undefined;
  #dirty = false;

  constructor(opts: SpoolOptions) {
    this.#opts = opts;
    this.#offsetFile = `${opts.file}.offset`;
  }

  /** Bytes written and not yet replayed. */
  get backlogBytes(): number {
    return this.#size - this.#read;
  }

  /**
   * Opens the file left by an earlier run, if any: its unreplayed part becomes the backlog. A torn last line
   * (a crash mid-write) is cut off and reported as lost lines.
   */
  open(): { tornBytes: number } {
    if (!existsSync(this.#opts.file)) return { tornBytes: 0 };
    const fd = this.#open();
    this.#size = fstatSync(fd).size;
    let torn = 0;
    if (this.#size > 0) {
      const text = readFileSync(this.#opts.file);
      const end = text.lastIndexOf(0x0a) + 1;
      if (end < this.#size) {
        torn = this.#size - end;
        ftruncateSync(fd, end);
        this.#size = end;
      }
    }
    try {
      const at = Number(readFileSync(this.#offsetFile, 'utf8'));
      this.#read = Number.isInteger(at) && at >= 0 && at <= this.#size ? at : 0;
    } catch {
      this.#read = 0;
    }
    return { tornBytes: torn };
  }

  /**
   * Appends records to the file: as many as fit under the cap, in order. Returns how many were not written
   * and why (the cap, or a disk refusing the write), for the caller to count as dropped.
   */
  write(records: readonly StreamRecord[]): { refused: number; reason?: SpoolRefusal } {
    let text = '';
    let bytes = 0;
    let fit = 0;
    for (const r of records) {
      const line = spoolLine(r);
      const n = Buffer.byteLength(line);
      if (this.#size + bytes + n > this.#opts.maxBytes) break;
      text += line;
      bytes += n;
      fit++;
    }
    if (fit > 0) {
      try {
        const fd = this.#fd ?? this.#open();
        const buf = Buffer.from(text);
        let done = 0;
        while (done < buf.length) done += writeSync(fd, buf, done);
      } catch {
        // A partial write leaves a torn line at worst, which a replay counts; go on from the size we really have.
        this.#resync();
        return { refused: records.length, reason: 'spool_failed' };
      }
      this.#size += bytes;
      this.#scheduleSync();
    }
    return fit === records.length ? { refused: 0 } : { refused: records.length - fit, reason: 'spool_full' };
  }

  /**
   * Up to `max` records from the replay position, and no more lines than fit in `maxBytes` past the first
   * (synchronous, page cache): one replay step's work is bounded like one flush's.
   */
  read(max: number, maxBytes: number = READ_BYTES): SpoolBatch {
    const records: StreamRecord[] = [];
    let corrupt = 0;
    let at = 0;
    // Start small; grow only when a single line (an answer can be 256 KB) does not fit.
    for (let size = READ_BYTES; this.#fd !== undefined && this.backlogBytes > 0; size *= 2) {
      const chunk = Buffer.allocUnsafe(Math.min(this.backlogBytes, size));
      const got = readSync(this.#fd, chunk, 0, chunk.length, this.#read);
      while (records.length < max) {
        const nl = chunk.indexOf(0x0a, at);
        if (nl === -1 || nl >= got || (at > 0 && nl + 1 > maxBytes)) break;
        const rec = recordOf(chunk.toString('utf8', at, nl));
        if (rec) records.push(rec);
        else corrupt++;
        at = nl + 1;
      }
      if (at > 0 || chunk.length >= this.backlogBytes) break;
    }
    return { records, bytes: at, corrupt };
  }

  /** Marks a read batch as appended; truncates the file once nothing is left. */
  consume(bytes: number): void {
    this.#read += bytes;
    if (this.#read >= this.#size && this.#fd !== undefined) {
      ftruncateSync(this.#fd, 0);
      this.#size = 0;
      this.#read = 0;
    }
    try {
      writeFileSync(this.#offsetFile, String(this.#read));
    } catch (err) {
      this.#opts.onSyncError(err); // worst case a restart replays records the stream already holds: they fold
    }
  }

  /** Syncs and closes the file (what is left is replayed by the next run). */
  async close(): Promise<void> {
    clearTimeout(this.#syncTimer);
    this.#syncTimer = undefined;
    const fd = this.#fd;
    if (fd === undefined) return;
    this.#fd = undefined; // no new background sync starts on it
    await this.#synced;
    try {
      if (this.#dirty) fdatasyncSync(fd);
    } catch (err) {
      this.#opts.onSyncError(err);
    } finally {
      closeSync(fd);
    }
  }

  #open(): number {
    mkdirSync(dirname(this.#opts.file), { recursive: true });
    this.#fd = openSync(this.#opts.file, 'a+');
    return this.#fd;
  }

  #resync(): void {
    try {
      if (this.#fd !== undefined) this.#size = fstatSync(this.#fd).size;
    } catch {
      // keep the size we had
    }
  }

  #scheduleSync(): void {
    this.#dirty = true;
    if (this.#syncTimer || this.#synced) return;
    this.#syncTimer = setTimeout(() => {
      this.#syncTimer = undefined;
      const fd = this.#fd;
      if (fd === undefined) return;
      this.#dirty = false;
      this.#synced = new Promise((resolve) =>
        fdatasync(fd, (err) => {
          this.#synced = undefined;
          if (err) this.#opts.onSyncError(err);
          if (this.#dirty && this.#fd !== undefined) this.#scheduleSync();
          resolve();
        }),
      );
    }, FSYNC_DELAY_MS);
    this.#syncTimer.unref();
  }
}
