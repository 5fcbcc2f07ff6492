/**
 * Arrivals on real embedded ClickHouse (chdb): which paths delivered each event and when each first did,
 * written by ClickHouse from the sink's one insert (migration 032's view on the events table) beside the
 * one-row-per-(org, uuid) events table, and exactly once when a batch is delivered again (a crash between
 * insert and commit) or a block is refused and bisected.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logEvent } from '../../test/simulated-org/generate.js';
import { randomName } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord, RecordBatch, Stream, StreamRecord } from '../../platform/stream/types.js';
import { eventsPipeline } from './sink.js';
import { createSinkTelemetry } from '../../platform/store/table-writer-telemetry.js';
import { writeBatch, type WriterDeps } from '../../platform/store/table-writer.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-arrivals-'));
let store: Store;

beforeAll(async () => {
  store = openStore({ database: randomName('arr'), dataDir, logger: log });
  await migrate(store, log);
  // Merges stopped: a count without FINAL shows exactly what was inserted.
  await store.command(`SYSTEM STOP MERGES ${store.database}.arrivals`);
  await store.command(`SYSTEM STOP MERGES ${store.database}.${EVENTS_TABLE}`);
}, 60_000);

afterAll(async () => {
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function rec(
  offset: number,
  event: Record<string, unknown>,
  org: string,
  source: string | undefined,
  receivedAt: string,
): ConsumedRecord {
  return {
    topic: 't.logs',
    partition: 0,
    offset,
    key: org,
    value: Buffer.from(JSON.stringify(event)),
    headers: {
      [Header.org]: org,
      ...(source === undefined ? {} : { [Header.source]: source }),
      [Header.hookId]: source === 'hook' ? 'h1' : '',
      [Header.receivedAt]: receivedAt,
    },
    timestamp: Date.parse(receivedAt),
  };
}

function batch(records: ConsumedRecord[]): RecordBatch {
  return { topic: 't.logs', partition: 0, firstOffset: 0, lastOffset: records.length - 1, records };
}

/** The writer's dependencies, with the dead letters it appends kept in `letters`. */
function deps(letters: StreamRecord[] = []): WriterDeps {
  return {
    store,
    stream: { append: async (_topic: string, recs: StreamRecord[]) => void letters.push(...recs) } as unknown as Stream,
    deadletterTopic: 't.deadletter',
    telemetry: createSinkTelemetry(log),
    signal: new AbortController().signal,
  };
}

const count = async (sql: string, org: string): Promise<number> =>
  Number((await store.query<{ n: string }>(sql, { org }))[0]!.n);

describe('arrivals', () => {
  it('records each path once with its first receipt, beside one events row per (org, uuid); a redelivered batch adds nothing to either', async () => {
    const org = randomName('acme');
    const a: Record<string, unknown> = { ...logEvent(0), published: '2026-11-20T10:00:00.000Z' };
    const b: Record<string, unknown> = { ...logEvent(1), published: '2026-11-20T10:00:01.000Z' };
    const [ua, ub] = [String(a.uuid), String(b.uuid)];
    const records = batch([
      rec(0, a, org, 'hook', '2026-11-20T10:00:02.000Z'),
      rec(1, a, org, 'hook', '2026-11-20T10:00:01.500Z'), // a retried delivery that got in first
      rec(2, a, org, 'system-log', '2026-11-20T10:05:00.000Z'),
      rec(3, b, org, 'system-log', '2026-11-20T10:05:00.000Z'),
      rec(4, b, org, 'backfill', '2026-11-21T08:00:00.000Z'),
    ]);
    const pipeline = eventsPipeline(EVENTS_TABLE, 'arrivals'); // what the sink runs
    const db = store.database;
    const raw = async () => ({
      events: await count(`SELECT count() AS n FROM ${db}.${EVENTS_TABLE} WHERE org = {org:String}`, org),
      arrivals: await count(`SELECT count() AS n FROM ${db}.arrivals WHERE org = {org:String}`, org),
      copies: await count(`SELECT sum(copies) AS n FROM ${db}.arrivals WHERE org = {org:String}`, org),
    });
    await writeBatch(deps(), pipeline, records);
    // One insert of the 5 records' rows in both tables (the sink leaves folding to merges and FINAL).
    expect(await raw()).toEqual({ events: 5, arrivals: 5, copies: 5 });
    await writeBatch(deps(), pipeline, records); // redelivered after a crash before the commit: the same token
    expect(await raw()).toEqual({ events: 5, arrivals: 5, copies: 5 });

    const rows = await store.query<{ uuid: string; path: string; first: string; copies: string; hook_id: string }>(
      `SELECT uuid, path, toString(min(first_received)) AS first, toString(sum(copies)) AS copies, any(hook_id) AS hook_id
       FROM ${db}.arrivals WHERE org = {org:String} GROUP BY uuid, path ORDER BY uuid = {a:String} DESC, path`,
      { org, a: ua },
    );
    expect(rows.map((r) => [r.uuid, r.path, r.first, r.copies, r.hook_id])).toEqual([
      [ua, 'hook', '2026-11-20 10:00:01.500', '2', 'h1'],
      [ua, 'system-log', '2026-11-20 10:05:00.000', '1', ''],
      [ub, 'backfill', '2026-11-21 08:00:00.000', '1', ''],
      [ub, 'system-log', '2026-11-20 10:05:00.000', '1', ''],
    ]);
    expect(await count(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String}`, org)).toBe(2);
    expect(await count(`SELECT count() AS n FROM ${db}.arrivals FINAL WHERE org = {org:String}`, org)).toBe(4);
  });

  it('takes the path from the source header as sent, and writes none for a record that names no path', async () => {
    const org = randomName('initech');
    const sources = ['hook', 'system-log', 'backfill', 'ssf', 'reconcile', '', undefined];
    const events: Array<Record<string, unknown>> = sources.map((_, i) => ({
      ...logEvent(10 + i),
      published: '2026-11-20T10:00:00.000Z',
    }));
    const records = events.map((e, i) => rec(i, e, org, sources[i], '2026-11-20T10:00:03.000Z'));
    await writeBatch(deps(), eventsPipeline(EVENTS_TABLE, 'arrivals'), batch(records));
    const db = store.database;
    expect(await count(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String}`, org)).toBe(sources.length);
    const paths = await store.query<{ uuid: string; path: string; hook_id: string; first: string; published: string }>(
      `SELECT uuid, path, hook_id, toString(first_received) AS first, toString(published) AS published
       FROM ${db}.arrivals WHERE org = {org:String} ORDER BY path`,
      { org },
    );
    expect(paths.map((p) => p.path)).toEqual(['backfill', 'hook', 'reconcile', 'ssf', 'system-log']);
    const uuidOf = (i: number) => String(events[i]!.uuid).toLowerCase();
    for (const p of paths) {
      expect(p.uuid).toBe(uuidOf(sources.indexOf(p.path)));
      expect(p.hook_id).toBe(p.path === 'hook' ? 'h1' : '');
      expect([p.first, p.published]).toEqual(['2026-11-20 10:00:03.000', '2026-11-20 10:00:00.000']);
    }
  });

  it('writes no arrivals for a block the events table refuses: the halves that land bring theirs once, the refused row none', async () => {
    // An events table with a CHECK constraint, and its input view made again after its arrivals view (as a
    // migration adding a column recreates the events input view): arrivals still follow what the table took.
    const db = store.database;
    const table = randomName('events_strict');
    const arrivals = randomName('arrivals_strict');
    await store.command(`CREATE TABLE ${db}.${table} AS ${db}.${EVENTS_TABLE}`);
    await store.command(`CREATE TABLE ${db}.${arrivals} AS ${db}.arrivals`);
    await store.command(`SYSTEM STOP MERGES ${db}.${arrivals}`);
    await store.command(
      `ALTER TABLE ${db}.${table} ADD CONSTRAINT no_rooted CHECK ifNull(client_device, '') != 'Rooted'`,
    );
    const pipeline = eventsPipeline(table, arrivals);
    const org = randomName('umbrella');
    const events: Array<Record<string, unknown>> = Array.from({ length: 9 }, (_, i) => ({
      ...logEvent(20 + i),
      published: '2026-11-20T10:00:00.000Z',
      ...(i === 6 ? { client: { device: 'Rooted' } } : {}),
    }));
    const records = events.map((e, i) => rec(i, e, org, 'hook', '2026-11-20T10:00:02.000Z'));
    // The first batch makes the table's input and views; then the input view is made again, newest of all.
    await writeBatch(deps(), pipeline, batch(records.slice(0, 1)));
    await store.command(`DROP VIEW ${db}.${table}_input_mv`);
    await store.command(
      `CREATE MATERIALIZED VIEW ${db}.${table}_input_mv TO ${db}.${table} AS SELECT * FROM ${db}.${table}_input`,
    );
    const letters: StreamRecord[] = [];
    const rest: RecordBatch = { ...batch(records.slice(1)), firstOffset: 1 };
    await writeBatch(deps(letters), pipeline, rest);
    await writeBatch(deps(letters), pipeline, rest); // and again, as after a crash

    expect(letters).toHaveLength(2);
    expect(letters.every((l) => l.value.equals(records[6]!.value))).toBe(true);
    expect(await count(`SELECT count() AS n FROM ${db}.${table} WHERE org = {org:String}`, org)).toBe(8);
    const arrived = await store.query<{ uuid: string; copies: string }>(
      `SELECT uuid, toString(copies) AS copies FROM ${db}.${arrivals} WHERE org = {org:String} ORDER BY uuid`,
      { org },
    );
    const stored = events.filter((_, i) => i !== 6).map((e) => String(e.uuid).toLowerCase());
    expect(arrived).toEqual(stored.sort().map((uuid) => ({ uuid, copies: '1' })));
  });
});
