/**
 * Reading every org's events without FINAL where the table has already folded them.
 *
 * FINAL folds an event's copies while reading, and so reads every row of every part it merges, with
 * the whole sorting key and every column a query names, before a filter on a value column may run:
 * over one org that is cheap, over every org it is the whole range. A part made by a merge holds no
 * two rows with one sorting key, so a day whose partition is a single such part (migration 031: daily
 * partitions, merged whole an hour after their last write) can be read as a plain table, where
 * ClickHouse moves the query's filters into PREWHERE and reads the other columns only for the rows that
 * pass. The other days are read with FINAL as before. Copies of an event share its day, so no event is
 * in both halves.
 *
 * The folded parts are looked up before the query and must still be active after it: a part replaced
 * meanwhile (merged with a new insert, mutated) may have left the query's snapshot, and the query is
 * run again. A part written into a folded day meanwhile is not read: that day is answered as of the
 * look-up, a moment before the query.
 */
import type { Store } from '../platform/store/index.js';
import { EVENTS_TABLE } from '../schemas/tables.js';

/** The folded days of the events table: each partition's one part, and the partition ids. */
export interface Folded {
  readonly parts: readonly string[];
  readonly partitions: readonly string[];
}

/** Nothing folded: the source below then reads everything with FINAL, as the query library always did. */
export const NOTHING_FOLDED: Folded = { parts: [], partitions: [] };

/**
 * What replaces `{db}.<events> FINAL` in a query over every org: folded days without FINAL, the rest with
 * it. `{folded_parts}` and `{folded_partitions}` are bound from `foldedDays` (or NOTHING_FOLDED).
 */
export function foldedSource(table = EVENTS_TABLE): string {
  const t = `{db}.${table}`;
  return `(SELECT * FROM ${t} WHERE has({folded_parts:Array(String)}, _part)
    UNION ALL SELECT * FROM ${t} FINAL WHERE NOT has({folded_partitions:Array(String)}, _partition_id))`;
}

/** The query parameters for `f`. */
export function foldedParams(f: Folded): { folded_parts: string[]; folded_partitions: string[] } {
  return { folded_parts: [...f.parts], folded_partitions: [...f.partitions] };
}

/** The partitions of `table` that are one part made by a merge (level > 0), now. */
export async function foldedDays(store: Store, table = EVENTS_TABLE): Promise<Folded> {
  const rows = await store.query<{ partition_id: string; part: string }>(
    `SELECT partition_id, any(name) AS part FROM system.parts
     WHERE database = {db:String} AND table = {t:String} AND active
     GROUP BY partition_id HAVING count() = 1 AND min(level) > 0`,
    { db: store.database, t: table },
  );
  return { parts: rows.map((r) => r.part), partitions: rows.map((r) => r.partition_id) };
}

/** Whether every part of `f` is still active: a part active now was active all along since it was looked up. */
export async function stillFolded(store: Store, f: Folded, table = EVENTS_TABLE): Promise<boolean> {
  if (f.parts.length === 0) return true;
  const [row] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM system.parts
     WHERE database = {db:String} AND table = {t:String} AND active AND has({parts:Array(String)}, name)`,
    { db: store.database, t: table, parts: f.parts },
  );
  return Number(row?.n) === f.parts.length;
}
