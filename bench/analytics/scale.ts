/**
 * The analytics bench's data at provider scale, made resumably: `base` orgs generated in JavaScript and
 * written through the sink's own path (load.ts), then copied inside ClickHouse with SQL until there are
 * `orgs` orgs of the same size. Each copy is every base org under a new name (`<org>-c<k>`) with fresh
 * uuids, in the column and inside `raw`, and its own users, sessions, transactions and targets (the base's ids with
 * the copy's suffix). A state table records each finished step; a run that stops
 * (or is stopped) part-way resumes from the first unfinished step, deleting a half-made copy first.
 */
import type { Store } from '../../platform/store/index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { backgroundEvents, orgName, type GenOptions } from './generate.js';
import { insertChunk } from './load.js';
import { RESERVED, type Plants } from './plants.js';
import { columnBytes } from './measure.js';

const STATE = 'bench_state';

export interface ScaleOptions {
  readonly gen: GenOptions;
  /** Orgs wanted in all: base orgs plus copies (a multiple of gen.orgs). */
  readonly orgs: number;
  readonly plants: Plants;
  readonly say: (line: string) => void;
}

async function steps(store: Store): Promise<Set<string>> {
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${store.database}.${STATE} (step String, at DateTime DEFAULT now()) ENGINE = MergeTree ORDER BY step`,
  );
  const rows = await store.query<{ step: string }>(`SELECT step FROM ${store.database}.${STATE}`);
  return new Set(rows.map((r) => r.step));
}

const done = (store: Store, step: string) => store.insertJson(STATE, [{ step }]);

const baseOrgs = (gen: GenOptions) => Array.from({ length: gen.orgs }, (_, i) => orgName(i));
const copyOrgs = (gen: GenOptions, k: number) => baseOrgs(gen).map((o) => `${o}-c${k}`);

async function rowsOf(store: Store, orgs: readonly string[]): Promise<number> {
  const [r] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${store.database}.${EVENTS_TABLE} WHERE org IN {orgs:Array(String)}`,
    { orgs },
  );
  return Number(r!.n);
}

/** Makes (or finishes) the data set; returns the events in the table. */
export async function scaleUp(store: Store, o: ScaleOptions): Promise<number> {
  const db = store.database;
  const finished = await steps(store);
  const t0 = performance.now();
  if (!finished.has('base')) {
    // A base half-written by an earlier run is made again from the start (it is the smallest step).
    await store.command(`TRUNCATE TABLE ${db}.${EVENTS_TABLE}`);
    await store.command(`TRUNCATE TABLE ${db}.deadletter`);
    let events = 0;
    let last = performance.now();
    for (const chunk of backgroundEvents(o.gen, o.plants.silence, RESERVED, 20_000)) {
      await insertChunk(store, chunk);
      events += chunk.length;
      if (performance.now() - last > 30_000) {
        last = performance.now();
        o.say(`  base: ${events} events, ${Math.round(events / ((last - t0) / 1000))} ev/s`);
      }
    }
    await insertChunk(store, o.plants.events);
    await store.insertJson('deadletter', o.plants.deadletters);
    events += o.plants.events.length;
    await done(store, 'base');
    const s = (performance.now() - t0) / 1000;
    o.say(
      `base: ${o.gen.orgs} orgs, ${events} events in ${s.toFixed(0)} s (${Math.round(events / s)} ev/s, the sink's path)`,
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
  const select = cols.map((c) =>
    c === 'org'
      ? "concat(org, '-c', toString({k:UInt32})) AS org"
      : c === 'uuid'
        ? 'u AS uuid'
        : c === 'raw'
          ? 'replaceOne(raw, uuid, u) AS raw'
          : suffixed.has(c)
            ? `if(${c} IN ('', 'unknown'), ${c}, concat(${c}, '-c', toString({k:UInt32}))) AS ${c}`
            : c === 'target_id' || c === 'target_alternate_id'
              ? `arrayMap(x -> concat(x, '-c', toString({k:UInt32})), ${c}) AS ${c}`
              : c,
  );
  const base = baseOrgs(o.gen);
  const tc = performance.now();
  let made = 0;
  for (let k = 1; k <= copies; k++) {
    if (finished.has(`copy:${k}`)) continue;
    const orgs = copyOrgs(o.gen, k);
    if ((await rowsOf(store, orgs)) > 0)
      await store.command(`DELETE FROM ${db}.${EVENTS_TABLE} WHERE org IN {orgs:Array(String)}`, { orgs });
    await store.command(
      `INSERT INTO ${db}.${EVENTS_TABLE} (${cols.join(', ')})
       SELECT ${select.join(', ')} FROM (SELECT *, toString(generateUUIDv4()) AS u FROM ${db}.${EVENTS_TABLE} WHERE org IN {base:Array(String)})
       SETTINGS max_insert_threads = 2, insert_deduplicate = 0, max_partitions_per_insert_block = 0`,
      { k, base },
    );
    await done(store, `copy:${k}`);
    made++;
    if (made % 10 === 0 || k === copies) {
      const s = (performance.now() - tc) / 1000;
      o.say(`  copies: ${k}/${copies} (${made} this run, ${(s / made).toFixed(1)} s each)`);
    }
  }
  const [n] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${db}.${EVENTS_TABLE}`);
  return Number(n!.n);
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
