/**
 * Lookup tables: a CSV or JSON file held in memory as one Map, read by
 * actions with a single `get`. Reloads happen off the answer path: the file's
 * stat is polled, a changed file is read and parsed in the background, and
 * the new Map replaces the old in one assignment — an answer sees either the
 * old table or the new, never a half-loaded one. A file that fails to load
 * (missing, malformed, a column the rules read is gone) keeps the old table.
 */
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
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

export class LookupTable implements LookupSource {
  readonly config: LookupTableConfig;
  readonly #required = new Set<string>();
  #rows: ReadonlyMap<string, unknown> = new Map();
  #listener: ((curr: Stats, prev: Stats) => void) | undefined;
  #reloading: Promise<void> | null = null;
  #again = false;

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
    const text = await readFile(this.config.file, 'utf8');
    let rows: Map<string, unknown>;
    try {
      rows = parseTable(text, this.config, this.#required);
    } catch (err) {
      throw new Error(`lookup "${this.config.name}" (${this.config.file}): ${(err as Error).message}`, { cause: err });
    }
    this.#rows = rows;
    return rows.size;
  }

  /** Polls the file's stat and reloads it when it changed. */
  watch(events: LookupEvents): void {
    if (this.#listener) return;
    this.#listener = (curr, prev) => {
      if (curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ino === prev.ino) return;
      this.#reload(events);
    };
    watchFile(this.config.file, { interval: this.config.reload_interval_ms, persistent: false }, this.#listener);
  }

  /** Stops watching and waits for a reload in progress. */
  async stop(): Promise<void> {
    if (this.#listener) unwatchFile(this.config.file, this.#listener);
    this.#listener = undefined;
    await this.#reloading;
  }

  #reload(events: LookupEvents): void {
    if (this.#reloading) {
      this.#again = true;
      return;
    }
    this.#reloading = (async () => {
      do {
        this.#again = false;
        const started = performance.now();
        try {
          const rows = await this.load();
          events.reloaded(this.config.name, rows, performance.now() - started);
        } catch (err) {
          events.reloadFailed(this.config.name, err);
        }
      } while (this.#again);
    })().finally(() => {
      this.#reloading = null;
    });
  }
}
