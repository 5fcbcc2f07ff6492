/**
 * Lookup tables: a CSV or JSON file held in memory as one Map, read by
 * actions with a single `get`. Reloads happen off the answer path: the file's
 * stat is polled and compared with the stat of what was read (inode, size,
 * mtime, ctime; a file read within a timestamp tick of its last write is read
 * again until it settles), a changed file is read and parsed in the background, and
 * the new Map replaces the old in one assignment — an answer sees either the
 * old table or the new, never a half-loaded one. A file that fails to load
 * (missing, malformed, a column the rules read is gone) keeps the old table.
 */
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { LookupSource } from './actions.js';
import type { LookupTableConfig } from './rule-schema.js';
import { parseCsv } from './csv.js';

export interface LookupEvents {
  reloaded(table: string, rows: number, ms: number): void;
  reloadFailed(table: string, err: unknown): void;
}

/** Parses a table file's text into key → row. Throws with a message saying what is wrong. */
export function parseTable(
  text: string,
  config: LookupTableConfig,
  required: ReadonlySet<string>,
): Map<string, unknown> {
  const fold = config.ignore_case ? (k: string) => k.toLowerCase() : (k: string) => k;
  const rows = new Map<string, unknown>();
  if (config.format === 'csv') {
    const records = parseCsv(text);
    const header = (records[0] ?? []).map((h) => h.trim());
    const keyAt = header.indexOf(config.key ?? '');
    if (keyAt === -1) throw new Error(`key column "${config.key}" is not in the header (${header.join(', ')})`);
    for (const column of required)
      if (!header.includes(column)) throw new Error(`column "${column}" used by a rule is not in the header`);
    for (let r = 1; r < records.length; r++) {
      const rec = records[r]!;
      if (rec.length > header.length)
        throw new Error(`record ${r + 1} has ${rec.length} fields, the header ${header.length}`);
      const row: Record<string, string> = Object.create(null) as Record<string, string>;
      for (let c = 0; c < header.length; c++) row[header[c]!] = rec[c] ?? '';
      const key = rec[keyAt] ?? '';
      if (key !== '') rows.set(fold(key), row);
    }
    return rows;
  }
  const json: unknown = JSON.parse(text);
  if (Array.isArray(json)) {
    if (!config.key) throw new Error('a JSON array table needs key (the member holding the key)');
    json.forEach((item, i) => {
      const key =
        item !== null && typeof item === 'object' ? (item as Record<string, unknown>)[config.key!] : undefined;
      if (typeof key !== 'string' && typeof key !== 'number')
        throw new Error(`element ${i} has no string or number "${config.key}"`);
      rows.set(fold(String(key)), item);
    });
  } else if (json !== null && typeof json === 'object') {
    for (const [k, v] of Object.entries(json)) rows.set(fold(k), v);
  } else {
    throw new Error('a JSON table is an object keyed by the lookup key, or an array of objects');
  }
  return rows;
}

/** One version of a file as its stat shows it, taken from the descriptor the content was read through. */
export interface FileMark {
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

/** File timestamps are coarse (a kernel tick; seconds on some filesystems): a change so soon after one may not show. */
export const RACY_MS = 2000;

/** What was last read: its stat, a digest of its bytes, and whether a same-stat change could still hide in it. */
interface Seen {
  readonly mark: FileMark | undefined;
  readonly digest: string;
  readonly racy: boolean;
}

function markOf(s: Stats): FileMark {
  return { dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs };
}

/**
 * Whether the file must be read again: it is another file (renamed over: new inode), it changed (size, mtime,
 * ctime), it appeared or went, or it was read so soon after a write that a second write in the same timestamp
 * tick would look the same.
 */
export function needsRead(seen: Seen | undefined, now: FileMark | undefined): boolean {
  if (seen === undefined || seen.racy) return true;
  const was = seen.mark;
  if (was === undefined || now === undefined) return was !== now;
  return (
    was.ino !== now.ino ||
    was.dev !== now.dev ||
    was.size !== now.size ||
    was.mtimeMs !== now.mtimeMs ||
    was.ctimeMs !== now.ctimeMs
  );
}

export class LookupTable implements LookupSource {
  readonly config: LookupTableConfig;
  readonly #required = new Set<string>();
  #rows: ReadonlyMap<string, unknown> = new Map();
  #seen: Seen | undefined;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | null = null;

  constructor(config: LookupTableConfig) {
    this.config = config;
  }

  /** Declares a column a rule reads: a reload without it is refused. */
  require(column: string | undefined): void {
    if (column !== undefined && this.config.format === 'csv') this.#required.add(column);
  }

  get(key: string): unknown {
    return this.#rows.get(this.config.ignore_case ? key.toLowerCase() : key);
  }

  get size(): number {
    return this.#rows.size;
  }

  /** Reads and parses the file, then swaps it in. Throws (keeping the old rows) when it cannot. */
  async load(): Promise<number> {
    const outcome = await this.#load();
    if (outcome instanceof Error) throw outcome;
    return outcome ?? this.#rows.size;
  }

  /**
   * Polls the file's stat every reload_interval_ms and reloads it when it is not what was last read. The
   * comparison is with the stat of the descriptor the content was read through, not with the previous poll:
   * a file renamed over between the load and the first poll (the watcher's baseline, with fs.watchFile) would
   * otherwise never be seen to change.
   */
  watch(events: LookupEvents): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#polling) return;
      this.#polling = this.#poll(events).finally(() => {
        this.#polling = null;
      });
    }, this.config.reload_interval_ms);
    this.#timer.unref();
  }

  /** Stops watching and waits for a reload in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#polling;
  }

  async #poll(events: LookupEvents): Promise<void> {
    let now: FileMark | undefined;
    try {
      now = markOf(await stat(this.config.file));
    } catch {
      now = undefined; // gone (or unreadable): reported once, by the read that fails
    }
    if (!needsRead(this.#seen, now)) return;
    const started = performance.now();
    const outcome = await this.#load();
    if (outcome instanceof Error) events.reloadFailed(this.config.name, outcome);
    else if (outcome !== undefined) events.reloaded(this.config.name, outcome, performance.now() - started);
  }

  /**
   * Reads the file through one descriptor (so stat and bytes agree) and swaps the parsed rows in. Returns the
   * row count, undefined when the bytes are those last read (nothing to do), or the error that kept the old rows.
   */
  async #load(): Promise<number | Error | undefined> {
    const readAt = Date.now();
    let bytes: Buffer;
    let mark: FileMark;
    try {
      const handle = await open(this.config.file, 'r');
      try {
        mark = markOf(await handle.stat());
        bytes = await handle.readFile();
      } finally {
        await handle.close();
      }
    } catch (err) {
      const again = this.#seen !== undefined && this.#seen.mark === undefined;
      this.#seen = { mark: undefined, digest: '', racy: false };
      if (again) return undefined;
      return new Error(`lookup "${this.config.name}" (${this.config.file}): ${(err as Error).message}`, { cause: err });
    }
    const digest = createHash('sha256').update(bytes).digest('hex');
    const same = this.#seen !== undefined && this.#seen.digest === digest;
    this.#seen = { mark, digest, racy: mark.mtimeMs > readAt - RACY_MS || mark.ctimeMs > readAt - RACY_MS };
    if (same) return undefined;
    try {
      const rows = parseTable(bytes.toString('utf8'), this.config, this.#required);
      this.#rows = rows;
      return rows.size;
    } catch (err) {
      return new Error(`lookup "${this.config.name}" (${this.config.file}): ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
}
