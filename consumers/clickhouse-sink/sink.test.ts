/**
 * The sink end to end on real parts: the embedded stream and embedded
 * ClickHouse (chdb) in one data directory, as `hooklog start` runs them.
 * Tests isolate by topic prefix and org; the database is shared.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureLines } from '../../test/fixtures/index.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { Header, topicNames, type Topics } from '../../platform/stream/headers.js';
import type { ConsumedRecord, Consumer, StreamRecord } from '../../platform/stream/types.js';
import { startClickHouseSink, type ClickHouseSink, type ClickHouseSinkOptions } from './index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-sink-'));
const validLines = fixtureLines('logevents.valid.jsonl');
/** The fixture's valid events (128). */
const N = validLines.length;
let store: Store;
let stream: EmbeddedStream;
const running: Array<ClickHouseSink | Consumer> = [];

beforeAll(async () => {
  store = openStore({ database: randomName('sink'), dataDir, logger: log });
  await migrate(store, log);
  // Background merges fold duplicates away at any moment; stopped, a count
  // without FINAL shows exactly what was inserted (which is what we assert on).
  await store.command(`SYSTEM STOP MERGES ${store.database}.${EVENTS_TABLE}`);
  stream = await openEmbeddedStream({ dataDir, logger: log });
}, 60_000);

afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.stop();
});

afterAll(async () => {
  await stream?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function freshTopics(logsPartitions: number): Promise<Topics> {
  const topics = topicNames(randomName('hl'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: logsPartitions },
    { name: topics.deadletter, partitions: 1 },
  ]);
  return topics;
}

function rec(line: string, org: string, n: number): StreamRecord {
  return {
    key: org,
    value: Buffer.from(line),
    headers: {
      [Header.org]: org,
      [Header.source]: 'hook',
      [Header.hookId]: 'h1',
      [Header.deliveryId]: `d${n}`,
      [Header.receivedAt]: '2024-10-15T02:30:46.500Z',
    },
  };
}

async function sink(topics: Topics, group: string, over: Partial<ClickHouseSinkOptions> = {}): Promise<ClickHouseSink> {
  const s = await startClickHouseSink({
    stream,
    store,
    topics,
    group,
    logger: log,
    maxBatchRecords: 40,
    maxBatchWaitMs: 50,
    ...over,
  });
  running.push(s);
  return s;
}

/** Everything on `topic` so far, read by a throwaway group. */
async function readAll(topic: string, expected: number): Promise<ConsumedRecord[]> {
  const got: ConsumedRecord[] = [];
  const c = await stream.consume({
    topic,
    group: randomName('reader'),
    maxBatchWaitMs: 20,
    handler: async (b) => void got.push(...b.records),
  });
  running.push(c);
  await waitFor(() => got.length, { until: (n) => n >= expected, what: `${expected} records on ${topic}` });
  return got;
}

async function countEvents(orgs: string[], opts: { final: boolean; table?: string }): Promise<number> {
  const [row] = await store.query<{ n: string }>(
    `SELECT count() AS n FROM ${store.database}.${opts.table ?? EVENTS_TABLE} ${opts.final ? 'FINAL' : ''} WHERE org IN {orgs:Array(String)}`,
    { orgs },
  );
  return Number(row!.n);
}

/** True once the group's committed position equals the end of every partition of the topic. */
/** The partitions of `topic` whose commits by `group` are short of the end: what a wait for the commits names. */
async function behind(topic: string, group: string) {
  const committed = await stream.committedOffsets(topic, group);
  return [...stream.endOffsets(topic)]
    .filter(([p, end]) => (committed.get(p) ?? 0) !== end)
    .map(([partition, end]) => ({ partition, end, committed: committed.get(partition) ?? 0 }));
}
const caughtUp = (b: readonly unknown[]) => b.length === 0;

describe('ClickHouse sink (embedded stream + chdb)', () => {
  it('lands the fixture events once each, raw intact, dead-letters the invalid, commits to the end', async () => {
    const topics = await freshTopics(3);
    const orgs = [randomName('acme'), randomName('globex')];
    const invalid = [
      '{"published":"2024-01-01T00:00:00Z","eventType":"user.session.start"}',
      'not json at all',
      '{"uuid":"u-x","published":"redacted"}',
    ];
    const records = validLines.map((l, i) => rec(l, orgs[i % 2]!, i));
    records.splice(10, 0, rec(invalid[0]!, orgs[0]!, 1000));
    records.splice(70, 0, rec(invalid[1]!, orgs[1]!, 1001));
    records.push(rec(invalid[2]!, orgs[0]!, 1002));
    await stream.append(topics.logs, records);
    const group = randomName('sink');
    const s = await sink(topics, group);

    await waitFor(async () => await countEvents(orgs, { final: true }), { until: (v) => v === N, what: `${N} rows` });
    await waitFor(() => behind(topics.logs, group), { until: caughtUp, what: 'logs committed to the end' });
    expect([...(await stream.committedOffsets(topics.logs, group)).values()].reduce((a, b) => a + b, 0)).toBe(N + 3);

    const rows = await store.query<{ uuid: string; raw: string; org: string; source: string; published: string }>(
      `SELECT uuid, raw, org, source, published FROM ${store.database}.events FINAL WHERE org IN {orgs:Array(String)}`,
      { orgs },
    );
    const byUuid = new Map(
      validLines.map((l, i) => [(JSON.parse(l) as { uuid: string }).uuid, { line: l, org: orgs[i % 2] }]),
    );
    expect(rows).toHaveLength(N);
    for (const row of rows) {
      const sent = byUuid.get(row.uuid)!;
      expect(JSON.parse(row.raw)).toEqual(JSON.parse(sent.line));
      expect(row.raw).toBe(sent.line);
      expect(row.org).toBe(sent.org);
      expect(row.source).toBe('hook');
    }

    const letters = await readAll(topics.deadletter, 3);
    const appended = await readAll(topics.logs, N + 3);
    expect(letters.map((l) => l.value.toString()).sort()).toEqual([...invalid].sort());
    for (const l of letters) {
      expect(l.headers[Header.origin]).toBe('clickhouse-sink');
      expect(l.headers[Header.originalTopic]).toBe(topics.logs);
      const original = appended.find(
        (r) =>
          r.partition === Number(l.headers[Header.originalPartition]) &&
          r.offset === Number(l.headers[Header.originalOffset]),
      );
      expect(original?.value.equals(l.value)).toBe(true);
    }
    const reasonOf = (v: string) => letters.find((l) => l.value.toString() === v)!.headers[Header.reason];
    expect(reasonOf(invalid[0]!)).toMatch(/uuid/);
    expect(reasonOf(invalid[1]!)).toMatch(/not valid JSON/);
    expect(reasonOf(invalid[2]!)).toMatch(/published/);
    // The dead letters reach their table too, through the same machinery.
    await waitFor(
      async () =>
        (await store.query(`SELECT 1 FROM ${store.database}.deadletter WHERE topic = {t:String}`, { t: topics.logs }))
          .length,
      { until: (n) => n === 3, what: 'deadletter rows' },
    );
    const dl = await store.query<{ reason: string; origin: string; org: string }>(
      `SELECT reason, origin, org FROM ${store.database}.deadletter FINAL WHERE topic = {t:String} ORDER BY offset`,
      { t: topics.logs },
    );
    expect(dl.map((d) => d.origin)).toEqual(['clickhouse-sink', 'clickhouse-sink', 'clickhouse-sink']);
    expect(dl.every((d) => orgs.includes(d.org))).toBe(true);
    expect(s.counters.deadLettered).toBe(3);

    // Duplicate delivery: the same events appended again land again, and FINAL folds them.
    await stream.append(
      topics.logs,
      validLines.map((l, i) => rec(l, orgs[i % 2]!, i)),
    );
    await waitFor(() => behind(topics.logs, group), { until: caughtUp, what: 'second copy committed' });
    expect(await countEvents(orgs, { final: false })).toBe(2 * N); // really inserted twice…
    expect(await countEvents(orgs, { final: true })).toBe(N); // …and counted once
  }, 60_000);

  it('drops a redelivered batch by its dedup token: same offsets, same token, no second copy', async () => {
    const topics = await freshTopics(1);
    const org = randomName('initech');
    await stream.append(
      topics.logs,
      validLines.slice(0, 30).map((l, i) => rec(l, org, i)),
    );
    // 30 records already on disk, batches of exactly 10: [0-9] [10-19] [20-29] both times.
    const opts = { maxBatchRecords: 10, maxBatchWaitMs: 5000, consumeDeadletter: false };
    const first = await sink(topics, randomName('g1'), opts);
    await waitFor(async () => await countEvents([org], { final: false }), { until: (n) => n === 30, what: '30 rows' });
    // Rows are visible as soon as ClickHouse has them; the sink counts the insert once its checks after it pass.
    await waitFor(() => first.counters.inserts, { until: (n) => n >= 3, what: '3 inserts counted' });
    expect(first.counters.inserts).toBe(3);
    await first.stop();

    // A group with no commits: as if the sink crashed after every insert, before every commit.
    const g2 = randomName('g2');
    const second = await sink(topics, g2, opts);
    await waitFor(() => behind(topics.logs, g2), { until: caughtUp, what: 'redelivery committed' });
    expect(second.counters.inserts).toBe(3); // ClickHouse accepted the inserts (counted before the commit)…
    expect(await countEvents([org], { final: false })).toBe(30); // …and dropped them as duplicates
  }, 60_000);

  it('bisects a batch ClickHouse rejects: good rows land, each bad row is dead-lettered', async () => {
    // A table variant that allows client_device at most 7 characters (a CHECK constraint): longer devices
    // pass the JS mapping (any string is a device) but ClickHouse refuses the rows. (Not a FixedString(7)
    // column: the sink's rows reach the table through a view, whose conversion to a Nullable type turns a
    // value that does not fit into NULL instead of refusing it; migration 013.)
    const table = randomName('events_fixed');
    await store.command(`CREATE TABLE ${store.database}.${table} AS ${store.database}.${EVENTS_TABLE}`);
    await store.command(
      `ALTER TABLE ${store.database}.${table} ADD CONSTRAINT device_7 CHECK length(ifNull(client_device, '')) <= 7`,
    );
    const topics = await freshTopics(1);
    const org = randomName('umbrella');
    // 24 events whose own device fits the 7 characters (Mobile, Unknown), so only the two made long fail.
    const events = validLines
      .map((l) => JSON.parse(l) as Record<string, unknown> & { uuid: string; client: Record<string, unknown> })
      .filter((e) => String(e.client.device).length <= 7)
      .slice(0, 24);
    const bad = new Set([5, 13]);
    events[5]!.client = { ...events[5]!.client, device: 'Smartphone' };
    events[13]!.client = { ...events[13]!.client, device: 'Unknown tablet' };
    const lines = events.map((e) => JSON.stringify(e));
    await stream.append(
      topics.logs,
      lines.map((l, i) => rec(l, org, i)),
    );
    const group = randomName('g');
    const s = await sink(topics, group, { eventsTable: table, maxBatchRecords: 100, maxBatchWaitMs: 200 });

    await waitFor(() => behind(topics.logs, group), { until: caughtUp, what: 'batch committed' });
    const rows = await store.query<{ uuid: string }>(
      `SELECT uuid FROM ${store.database}.${table} FINAL WHERE org = {org:String}`,
      { org },
    );
    expect(rows.map((r) => r.uuid).sort()).toEqual(
      events
        .filter((_, i) => !bad.has(i))
        .map((e) => e.uuid)
        .sort(),
    );
    const letters = await readAll(topics.deadletter, 2);
    expect(letters.map((l) => Number(l.headers[Header.originalOffset])).sort((a, b) => a - b)).toEqual([5, 13]);
    for (const l of letters) {
      expect(l.value.toString()).toBe(lines[Number(l.headers[Header.originalOffset])]);
      expect(l.headers[Header.reason]).toMatch(/VIOLATED_CONSTRAINT/);
    }
    expect(s.counters.bisections).toBeGreaterThan(0);
    expect(s.counters.deadLettered).toBe(2);
  }, 60_000);

  it('holds the offsets while ClickHouse cannot take the batch, and delivers once it can', async () => {
    const table = randomName('events_later');
    const topics = await freshTopics(1);
    const org = randomName('hooli');
    await stream.append(
      topics.logs,
      validLines.slice(0, 10).map((l, i) => rec(l, org, i)),
    );
    const group = randomName('g');
    const s = await sink(topics, group, {
      eventsTable: table,
      retryPolicy: { initialMs: 20, multiplier: 1, maxMs: 20, retries: Infinity, jitter: 0 },
    });
    await waitFor(() => s.counters.handlerErrors, { until: (n) => n >= 2, what: 'failing inserts (no table yet)' });
    expect((await stream.committedOffsets(topics.logs, group)).get(0) ?? 0).toBe(0);
    expect(s.counters.deadLettered).toBe(0); // a missing table is not the records' fault
    await store.command(`CREATE TABLE ${store.database}.${table} AS ${store.database}.${EVENTS_TABLE}`);
    await waitFor(() => behind(topics.logs, group), {
      until: caughtUp,
      timeoutMs: 30_000,
      what: 'committed after the table appeared',
    });
    expect(await countEvents([org], { final: true, table })).toBe(10);
  }, 60_000);

  it('keeps retrying a store it cannot reach, commits nothing, and stops promptly when asked', async () => {
    // A real refused connection (nothing listens on port 1): a retriable failure.
    const unreachable = openStore({ url: 'http://127.0.0.1:1', database: store.database, dataDir, logger: log });
    const topics = await freshTopics(1);
    await stream.append(
      topics.logs,
      validLines.slice(0, 5).map((l, i) => rec(l, 'nobody', i)),
    );
    const group = randomName('g');
    const s = await startClickHouseSink({
      stream,
      store: unreachable,
      topics,
      group,
      logger: log,
      maxBatchWaitMs: 20,
      retryPolicy: { initialMs: 5, multiplier: 2, maxMs: 40, retries: Infinity, jitter: 0 },
    });
    try {
      // The first thing a sink asks the store is where its last batches ended (plans.ts).
      await waitFor(() => s.counters.planErrors, { until: (n) => n >= 5, what: 'retries of the batch-plan read' });
      expect(s.counters.handlerErrors).toBe(0); // retried with the sink's policy, not failed out of the handler
      expect(s.counters.deadLettered).toBe(0);
      expect((await stream.committedOffsets(topics.logs, group)).get(0) ?? 0).toBe(0);
    } finally {
      const t0 = Date.now();
      await s.stop();
      expect(Date.now() - t0).toBeLessThan(5000);
      await unreachable.close();
    }
    expect((await stream.committedOffsets(topics.logs, group)).get(0) ?? 0).toBe(0);
  }, 60_000);
});
