/**
 * The analytics bench's data at provider scale, made resumably: `base` orgs generated in JavaScript and
 * written through the sink's own path (load.ts), then copied inside ClickHouse with SQL until there are
 * `orgs` orgs of the same size. Each copy is every base org under a new name (`<org>-c<k>`) with fresh
 * uuids, in the column and inside `raw`, and its own users, sessions, transactions and targets (the base's ids with
 * the copy's suffix). The copies are made a day (a partition) at a time, every copy of the day in one INSERT, and
 * each day is then folded into one merged part, as a day is an hour after its last write in service (migration
 * 032). A state table records each finished step; a run that stops (or is stopped) part-way resumes from the first
 * unfinished step, deleting a half-made day's copies first.
 *
 * Where the time went before (2M and 10M, see BENCHMARKS.md): one INSERT … SELECT per copy, each over every day,
 * cut by its 256 MB insert blocks into ~4 parts per day per copy that background merges then merged and merged
 * again while later copies were written, and a table-wide OPTIMIZE FINAL at the end that rewrote every day once
 * more on one thread. Every rewrite of a row recompresses its `raw` (ZSTD(6)), the bulk of each row's cost. Now
 * a row is written once by its day's INSERT and rewritten once by its day's fold.
 */
import type { Store } from '../../platform/store/index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { backgroundEvents, orgName, type GenOptions } from './generate.js';
import { insertChunk } from './load.js';
import { RESERVED, type Plants } from './plants.js';
import { columnBytes, tableBytes } from './measure.js';

const STATE = 'bench_state';

/**
 * Events per insert of the base: each spans every day (the generator draws times at random over the range), so
 * an insert writes one part per day; larger chunks make fewer, larger parts (all folded in the end).
 */
const BASE_CHUNK = 50_000;

/**
 * Bytes of rows an insert of copies gathers into one part (per insert thread). ClickHouse's default (256 MB)
 * cut a day of copies into many parts that background merges then merged and merged again; 1 GB holds a day of
 * 20M events' copies in one part per thread, and a few at 100M, within the memory of a small machine.
 */
const COPY_BLOCK_BYTES = 1 << 30;

export interface ScaleOptions {
  readonly gen: GenOptions;
  /** Orgs wanted in all: base orgs plus copies (a multiple of gen.orgs). */
  readonly orgs: number;
  readonly plants: Plants;
  readonly say: (line: string) => void;
  /**
   * Fold each day into one merged part once its copies are made (every day at the end). False leaves the
   * parts as inserted (run.ts --merge none).
   */
  readonly fold: boolean;
  /**
   * Runs a statement on a second connection to the same data: chdb runs one statement at a time per connection,
   * and its background pool one merge at a time, so two days fold at once (both cores) only from two connections.
   * Without it, days fold one at a time.
   */
  readonly second?: (sql: string) => Promise<void>;
}

type Steps = { base: number; copies: number; fold: number };

/**
 * What a run made: events in the table, and the seconds each step took in this run (0: done before), on the
 * wall clock and in CPU (the whole process's, ClickHouse's threads included: on a shared machine the wall
 * clock says as much about the other processes as about this one).
 */
export interface Made {
  readonly events: number;
  readonly seconds: Readonly<Steps>;
  readonly cpuSeconds: Readonly<Steps>;
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function steps(store: Store): Promise<Set<string>> {
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${store.database}.${STATE} (step String, at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY step`,
  );
  const rows = await store.query<{ step: string }>(`SELECT step FROM ${store.database}.${STATE}`);
  return new Set(rows.map((r) => r.step));
}

const done = (store: Store, step: string) => store.insertJson(STATE, [{ step }]);

const baseOrgs = (gen: GenOptions) => Array.from({ length: gen.orgs }, (_, i) => orgName(i));
const copyOrgs = (gen: GenOptions, from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, j) => baseOrgs(gen).map((o) => `${o}-c${from + j}`)).flat();

/** A day's step: copies 1..n of every base org exist for that day (partition). */
const dayStep = (day: string, n: number) => `day:${day}:copies:${n}`;

/**
 * Copies of every base org already made for `day`: the most a finished day step says, or the copies an earlier
 * version of this bench made one at a time over every day (steps `copy:<k>`, each for every day).
 */
function copiesMade(finished: ReadonlySet<string>, day: string): number {
  let legacy = 0;
  while (finished.has(`copy:${legacy + 1}`)) legacy++;
  let n = legacy;
  for (const s of finished) {
    const m = /^day:(\d+):copies:(\d+)$/.exec(s);
    if (m && m[1] === day) n = Math.max(n, Number(m[2]));
  }
  return n;
}

async function baseRows(store: Store, o: ScaleOptions, say: (line: string) => void): Promise<number> {
  const db = store.database;
  // A base half-written by an earlier run is made again from the start (it is the smallest step).
  await store.command(`TRUNCATE TABLE ${db}.${EVENTS_TABLE}`);
  await store.command(`TRUNCATE TABLE ${db}.deadletter`);
  const t0 = performance.now();
  let events = 0;
  let last = t0;
  // Two inserts in flight: the next chunk is generated and encoded in JavaScript while ClickHouse writes the
  // previous one (the embedded store runs two inserts at once, chdb-inserts.ts), so neither side waits for the
  // other. A failed insert is awaited below and throws there; the catch only keeps it from being reported as
  // unhandled before then.
  let pending: Promise<unknown> | null = null;
  for (const chunk of backgroundEvents(o.gen, o.plants.silence, RESERVED, BASE_CHUNK)) {
    const insert = insertChunk(store, chunk);
    insert.catch(() => undefined);
    if (pending) await pending;
    pending = insert;
    events += chunk.length;
    if (performance.now() - last > 30_000) {
      last = performance.now();
      say(`  base: ${events} events, ${Math.round(events / ((last - t0) / 1000))} ev/s`);
    }
  }
  if (pending) await pending;
  await insertChunk(store, o.plants.events);
  await store.insertJson('deadletter', o.plants.deadletters);
  return events + o.plants.events.length;
}

/** The days (partition ids, `YYYYMMDD`) the events table holds. */
async function days(store: Store): Promise<string[]> {
  const rows = await store.query<{ p: string }>(
    'SELECT DISTINCT partition_id AS p FROM system.parts WHERE database = {db:String} AND table = {t:String} AND active ORDER BY p',
    { db: store.database, t: EVENTS_TABLE },
  );
  return rows.map((r) => {
    if (!/^\d{8}$/.test(r.p)) throw new Error(`unexpected partition id ${JSON.stringify(r.p)} in ${EVENTS_TABLE}`);
    return r.p;
  });
}

/** raw's codec as the migrations declare it, recorded once; put back if a run stopped with another. */
async function restoreRawCodec(store: Store, finished: ReadonlySet<string>): Promise<string> {
  const recorded = [...finished].find((s) => s.startsWith('raw-codec:'))?.slice('raw-codec:'.length);
  const [c] = await store.query<{ codec: string }>(
    "SELECT compression_codec AS codec FROM system.columns WHERE database = {db:String} AND table = {t:String} AND name = 'raw'",
    { db: store.database, t: EVENTS_TABLE },
  );
  if (recorded === undefined) {
    await done(store, `raw-codec:${c!.codec}`);
    return c!.codec;
  }
  if (c!.codec !== recorded)
    await store.command(`ALTER TABLE ${store.database}.${EVENTS_TABLE} MODIFY COLUMN raw ${recorded}`);
  return recorded;
}

/** Makes (or finishes) the data set; returns the events in the table and the time each step took. */
export async function scaleUp(store: Store, o: ScaleOptions): Promise<Made> {
  const db = store.database;
  const finished = await steps(store);
  const seconds: Steps = { base: 0, copies: 0, fold: 0 };
  const cpuSeconds: Steps = { base: 0, copies: 0, fold: 0 };
  if (!finished.has('base')) {
    const t0 = performance.now();
    const c0 = cpuNow();
    const events = await baseRows(store, o, o.say);
    await done(store, 'base');
    seconds.base = (performance.now() - t0) / 1000;
    cpuSeconds.base = cpuNow() - c0;
    o.say(
      `base: ${o.gen.orgs} orgs, ${events} events in ${seconds.base.toFixed(0)} s (${Math.round(events / seconds.base)} ev/s, the sink's path)`,
    );
  }
  const copies = Math.round(o.orgs / o.gen.orgs) - 1;
  const cols = (await columnBytes(store, EVENTS_TABLE)).map((c) => c.name);
  // A copy is other people: its users, sessions, transactions and targets get the copy's suffix too, so queries over
  // every org group as many distinct users and sessions as 1,000 real orgs would have (identity-service ids are
  // unique across orgs), not the base orgs' few thousand seen 100 times. `raw` keeps the base ids (no query reads
  // it); only its uuid is replaced. An empty or 'unknown' id stays as it is: it names no one.
  const suffixed = new Set([
    'actor_id',
    'actor_alternate_id',
    'external_session_id',
    'root_session_id',
    'transaction_id',
  ]);
  // The base row's uuid and raw come in as base_uuid and base_raw, so that no name below means two things (an
  // alias `uuid` beside the column `uuid` would make replaceOne read the alias).
  const select = cols.map((c) =>
    c === 'org'
      ? "concat(org, '-c', toString(k)) AS org"
      : c === 'uuid'
        ? 'copy_uuid AS uuid'
        : c === 'raw'
          ? 'replaceOne(base_raw, base_uuid, copy_uuid) AS raw'
          : suffixed.has(c)
            ? `if(${c} IN ('', 'unknown'), ${c}, concat(${c}, '-c', toString(k))) AS ${c}`
            : c === 'target_id' || c === 'target_alternate_id'
              ? `arrayMap(x -> concat(x, '-c', toString(k)), ${c}) AS ${c}`
              : c,
  );
  const base = baseOrgs(o.gen);
  const all = await days(store);
  // While copies are written, `raw` is compressed with LZ4 instead of its ZSTD(6): the fold rewrites every row of
  // every day anyway, with the codec the migrations declare, put back before it; so no part measured on was written
  // with LZ4, and each row's raw is ZSTD(6)-compressed once, not twice (at 2M, 24.3 → 14.4 CPU seconds for the
  // copies). Only when folding: --merge none measures the parts as inserted. The ALTER changes metadata only;
  // a run stopped before putting it back has it put back by the next (restoreRawCodec).
  const declared = await restoreRawCodec(store, finished);
  const cheap = o.fold && all.some((day) => copiesMade(finished, day) < copies);
  if (cheap) await store.command(`ALTER TABLE ${db}.${EVENTS_TABLE} MODIFY COLUMN raw CODEC(LZ4)`);
  const tc = performance.now();
  const cc = cpuNow();
  let rows = 0;
  for (const [i, day] of all.entries()) {
    const have = copiesMade(finished, day);
    if (have >= copies) continue;
    const t = performance.now();
    // Rows of the day that are neither a base org's nor a finished copy's: a half-made day of an earlier run.
    const stray = { day: Number(day), keep: [...base, ...copyOrgs(o.gen, 1, have)] };
    const [left] = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${db}.${EVENTS_TABLE} WHERE toYYYYMMDD(published) = {day:UInt32} AND org NOT IN {keep:Array(String)}`,
      stray,
    );
    if (Number(left!.n) > 0)
      await store.command(
        `DELETE FROM ${db}.${EVENTS_TABLE} WHERE toYYYYMMDD(published) = {day:UInt32} AND org NOT IN {keep:Array(String)}`,
        stray,
      );
    // Every missing copy of the day's base rows in one statement: each base row read once, arrayJoin making its
    // copies. optimize_on_insert = 0 as the sink's inserts (load.ts: foldOnInsert false): a copy holds no two rows
    // with one sorting key, so folding on insert would only cost. Blocks of at most 2,048 base rows read, so that
    // a block of copies stays small before the insert gathers them into parts of COPY_BLOCK_BYTES.
    await store.command(
      `INSERT INTO ${db}.${EVENTS_TABLE} (${cols.join(', ')})
       SELECT ${select.join(', ')} FROM (
         SELECT * EXCEPT (uuid, raw), uuid AS base_uuid, raw AS base_raw, toString(generateUUIDv4(k)) AS copy_uuid FROM (
           SELECT *, arrayJoin(range({from:UInt32}, {to:UInt32})) AS k FROM ${db}.${EVENTS_TABLE}
           WHERE toYYYYMMDD(published) = {day:UInt32} AND org IN {base:Array(String)}))
       SETTINGS max_threads = 2, max_insert_threads = 2, max_block_size = 2048, insert_deduplicate = 0,
         optimize_on_insert = 0, min_insert_block_size_rows = 0, min_insert_block_size_bytes = ${COPY_BLOCK_BYTES}`,
      { day: Number(day), from: have + 1, to: copies + 1, base },
    );
    await done(store, dayStep(day, copies));
    const made = await store.query<{ n: string }>(
      `SELECT count() AS n FROM ${db}.${EVENTS_TABLE} WHERE toYYYYMMDD(published) = {day:UInt32} AND org NOT IN {keep:Array(String)}`,
      stray,
    );
    rows += Number(made[0]!.n);
    o.say(
      `  copies: day ${i + 1}/${all.length} (${day}), copies ${have + 1}..${copies}: ${made[0]!.n} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );
  }
  seconds.copies = (performance.now() - tc) / 1000;
  cpuSeconds.copies = cpuNow() - cc;
  if (rows > 0)
    o.say(
      `copies: ${rows} rows in ${seconds.copies.toFixed(0)} s (${Math.round(rows / seconds.copies)} rows/s, SQL inside ClickHouse)`,
    );
  if (cheap) await store.command(`ALTER TABLE ${db}.${EVENTS_TABLE} MODIFY COLUMN raw ${declared}`);
  if (o.fold) {
    const before = await tableBytes(store, EVENTS_TABLE);
    const tf = performance.now();
    const cf = cpuNow();
    const folded = await foldDays(store, o.second);
    seconds.fold = (performance.now() - tf) / 1000;
    cpuSeconds.fold = cpuNow() - cf;
    if (folded > 0)
      o.say(
        `fold: ${folded} days (${before.parts} parts, ${(before.bytes / before.rows).toFixed(1)} bytes/event) merged into one part each in ${seconds.fold.toFixed(0)} s`,
      );
  }
  const [n] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.${EVENTS_TABLE}`);
  return { events: Number(n!.n), seconds, cpuSeconds };
}

/**
 * Merges every day that is not one merged part into one: OPTIMIZE … PARTITION … FINAL, the whole partition at once
 * as min_age_to_force_merge_on_partition_only merges it in service an hour after the day's last write (migration
 * 032). A merge runs on one thread; the engine's background pool ran one at a time (10M: 228 s, 214 s of CPU), so
 * two days are merged at once when a second connection is given. Returns the days merged.
 */
async function foldDays(store: Store, second?: (sql: string) => Promise<void>): Promise<number> {
  const rows = await store.query<{ p: string }>(
    `SELECT partition_id AS p FROM system.parts WHERE database = {db:String} AND table = {t:String} AND active
     GROUP BY partition_id HAVING NOT (count() = 1 AND min(level) > 0) ORDER BY p`,
    { db: store.database, t: EVENTS_TABLE },
  );
  const todo = rows.map((r) => r.p);
  for (const p of todo) if (!/^\d{8}$/.test(p)) throw new Error(`unexpected partition id ${JSON.stringify(p)}`);
  const sql = (p: string) => `OPTIMIZE TABLE ${store.database}.${EVENTS_TABLE} PARTITION ID '${p}' FINAL`;
  const worker = async (run: (sql: string) => Promise<void>) => {
    for (let p = todo.shift(); p !== undefined; p = todo.shift()) await run(sql(p));
  };
  await Promise.all([worker((q) => store.command(q)), ...(second ? [worker(second)] : [])]);
  return rows.length;
}

/**
 * Waits until background merges have settled (none running for `quietMs`) and every day has folded into one
 * merged part, at most `maxMs`: queries are measured on the parts a table reaches by itself, not on a fresh
 * insert's many small ones. In service a day is merged whole an hour after its last write (migration 032's
 * min_age_to_force_merge_seconds); the bench's days were all written minutes ago, so it shortens that age for
 * the wait and puts it back after.
 */
export async function mergesSettled(store: Store, quietMs = 10_000, maxMs = 3_600_000): Promise<number> {
  const t0 = performance.now();
  await forceMergeAge(store, 60);
  try {
    let quietSince = performance.now();
    for (;;) {
      const [r] = await store.query<{ n: string }>(
        'SELECT count() AS n FROM system.merges WHERE database = {db:String} AND table = {t:String}',
        { db: store.database, t: EVENTS_TABLE },
      );
      if (Number(r!.n) > 0) quietSince = performance.now();
      const settled = performance.now() - quietSince >= quietMs && (await daysFolded(store)).unfolded === 0;
      if (settled || performance.now() - t0 >= maxMs) return (performance.now() - t0) / 1000;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await restoreMergeAge(store);
  }
}

/**
 * Puts the events table's force-merge age back to migration 032's hour. `mergesSettled` shortens it for its wait
 * and restores it when done; a run killed during the wait cannot, so every run also restores it first.
 */
export const restoreMergeAge = (store: Store) => forceMergeAge(store, 3600);

const forceMergeAge = (store: Store, seconds: number) =>
  store.command(
    `ALTER TABLE ${store.database}.${EVENTS_TABLE} MODIFY SETTING min_age_to_force_merge_seconds = ${seconds}`,
  );

/** Days (partitions) of the events table that are one merged part, and those that are not. */
export async function daysFolded(store: Store): Promise<{ folded: number; unfolded: number }> {
  const [r] = await store.query<{ folded: string; days: string }>(
    `SELECT countIf(parts = 1 AND level > 0) AS folded, count() AS days FROM (
       SELECT count() AS parts, min(level) AS level FROM system.parts
       WHERE database = {db:String} AND table = {t:String} AND active GROUP BY partition_id)`,
    { db: store.database, t: EVENTS_TABLE },
  );
  return { folded: Number(r!.folded), unfolded: Number(r!.days) - Number(r!.folded) };
}
