/**
 * Errors by kind, on the embedded stream and real chdb: what can never succeed
 * (a record over the size limit, one that is not an event, a row ClickHouse
 * refuses) is dead-lettered with its error code and raw bytes and the
 * partition moves on; what may succeed later (the store down) is retried with
 * the policy's backoff, commits nothing meanwhile, and lands once when it can.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { total } from '../../test/support/metrics.js';
import { seededRandom } from '../../test/support/random.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { HooklogError } from '../../platform/errors.js';
import { silentLogger } from '../../platform/log.js';
import { renderMetrics } from '../../platform/metrics.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { Header, topicNames, type Topics } from '../../platform/stream/headers.js';
import type { ConsumedRecord, Consumer, Stream, StreamRecord } from '../../platform/stream/types.js';
import { event, uuid } from './crash-replay.fixture.js';
import { startClickHouseSink, type ClickHouseSink, type ClickHouseSinkOptions } from './index.js';
import { TRUNCATED_HEADER } from '../../platform/store/table-writer.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { viewRestore } from './events-input.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-sink-errors-'));
const rand = seededRandom(1207);
let store: Store;
let stream: EmbeddedStream;
const running: Array<ClickHouseSink | Consumer> = [];

beforeAll(async () => {
  store = openStore({ database: randomName('errs'), dataDir, logger: log });
  await migrate(store, log);
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

async function freshTopics(): Promise<Topics> {
  const topics = topicNames(randomName('hl'));
  await stream.ensureTopics([
    { name: topics.logs, partitions: 1 },
    { name: topics.deadletter, partitions: 1 },
  ]);
  return topics;
}

function events(org: string, n: number): StreamRecord[] {
  return Array.from({ length: n }, (_, i) => event(rand, org, i, uuid(rand)));
}

async function sink(
  over: Partial<ClickHouseSinkOptions> & Pick<ClickHouseSinkOptions, 'topics' | 'group'>,
): Promise<ClickHouseSink> {
  const s = await startClickHouseSink({
    stream,
    store,
    logger: log,
    maxBatchRecords: 50,
    maxBatchWaitMs: 20,
    consumeDeadletter: false,
    ...over,
  });
  running.push(s);
  return s;
}

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

const committed = async (topic: string, group: string) => (await stream.committedOffsets(topic, group)).get(0) ?? 0;
const rows = async (table: string, org: string) =>
  Number(
    (
      await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.${table} WHERE org = {org:String}`, {
        org,
      })
    )[0]!.n,
  );

describe('sink errors by kind', () => {
  it('dead-letters what can never succeed, with its error code and raw bytes, and moves on', async () => {
    // client_device at most 7 characters (a CHECK constraint): ClickHouse itself refuses a longer device.
    const table = randomName('events_strict');
    await store.command(`CREATE TABLE ${store.database}.${table} AS ${store.database}.${EVENTS_TABLE}`);
    await store.command(
      `ALTER TABLE ${store.database}.${table} ADD CONSTRAINT device_7 CHECK length(ifNull(client_device, '')) <= 7`,
    );
    const topics = await freshTopics();
    const org = randomName('acme');
    const records = events(org, 40);
    const huge = JSON.parse(records[3]!.value.toString()) as Record<string, unknown>;
    huge.debugContext = { debugData: { blob: 'x'.repeat(5000) } };
    records[3] = { ...records[3]!, value: Buffer.from(JSON.stringify(huge)) };
    records[17] = { ...records[17]!, value: Buffer.from('{"uuid": "not closed') };
    const refused = JSON.parse(records[30]!.value.toString()) as { client: Record<string, unknown> };
    refused.client.device = 'Smartphone';
    records[30] = { ...records[30]!, value: Buffer.from(JSON.stringify(refused)) };
    await stream.append(topics.logs, records);
    const group = randomName('g');
    const s = await sink({ topics, group, eventsTable: table, maxRecordBytes: 4096 });

    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 40,
      what: 'partition committed to its end',
    });
    expect(await rows(table, org)).toBe(37);
    const letters = await readAll(topics.deadletter, 3);
    const byOffset = new Map(letters.map((l) => [Number(l.headers[Header.originalOffset]), l]));
    expect([...byOffset.keys()].sort((a, b) => a - b)).toEqual([3, 17, 30]);
    for (const [offset, l] of byOffset) expect(l.value.equals(records[offset]!.value)).toBe(true);
    expect(byOffset.get(3)!.headers[Header.reason]).toMatch(
      /^RECORD_INVALID: record of \d+ bytes is over sink.max_record_bytes \(4096\)/,
    );
    expect(byOffset.get(17)!.headers[Header.reason]).toMatch(/^RECORD_INVALID: value is not valid JSON/);
    expect(byOffset.get(30)!.headers[Header.reason]).toMatch(
      /^STORE_REJECTED_ROW: ClickHouse VIOLATED_CONSTRAINT \(469\)/,
    );
    expect(s.counters.deadLettered).toBe(3);
  });

  it('bisects and dead-letters rows refused with codes outside the old hand list; the rest lands, the partition moves on', async () => {
    // The table's own rules over a row's values: a CHECK constraint (VIOLATED_CONSTRAINT, 469) and a
    // function that divides by zero for one value (ILLEGAL_DIVISION, 153). Both used to come out as
    // STORE_QUERY_FAILED: the batch was offered again forever and the partition never moved.
    const table = randomName('events_ruled');
    const t = `${store.database}.${table}`;
    await store.command(`CREATE TABLE ${t} AS ${store.database}.${EVENTS_TABLE}`);
    await store.command(`ALTER TABLE ${t} ADD CONSTRAINT no_rooted CHECK ifNull(client_device, '') != 'Rooted'`);
    await store.command(
      `ALTER TABLE ${t} ADD CONSTRAINT os_ok CHECK intDiv(1, 1 - position(ifNull(client_os, ''), 'ZeroOS')) != 0`,
    );
    const topics = await freshTopics();
    const org = randomName('umbrella');
    const records = events(org, 40);
    const withClient = (i: number, client: Record<string, unknown>) => {
      const v = JSON.parse(records[i]!.value.toString()) as { client: Record<string, unknown> };
      Object.assign(v.client, client);
      records[i] = { ...records[i]!, value: Buffer.from(JSON.stringify(v)) };
    };
    withClient(5, { device: 'Rooted' });
    withClient(22, { userAgent: { os: 'ZeroOS 1.0' } });
    withClient(23, { device: 'Phone', userAgent: { os: 'Linux' } }); // a neighbour with client fields that passes
    await stream.append(topics.logs, records);
    const group = randomName('g');
    const s = await sink({ topics, group, eventsTable: table });

    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 40,
      what: 'partition committed to its end',
    });
    expect(await rows(table, org)).toBe(38);
    const letters = await readAll(topics.deadletter, 2);
    const byOffset = new Map(letters.map((l) => [Number(l.headers[Header.originalOffset]), l]));
    expect([...byOffset.keys()].sort((a, b) => a - b)).toEqual([5, 22]);
    for (const [offset, l] of byOffset) expect(l.value.equals(records[offset]!.value)).toBe(true);
    expect(byOffset.get(5)!.headers[Header.reason]).toMatch(
      /^STORE_REJECTED_ROW: ClickHouse VIOLATED_CONSTRAINT \(469\)/,
    );
    expect(byOffset.get(22)!.headers[Header.reason]).toMatch(
      /^STORE_REJECTED_ROW: ClickHouse ILLEGAL_DIVISION \(153\)/,
    );
    expect(s.counters.bisections).toBeGreaterThan(0);
    expect(s.counters.deadLettered).toBe(2);
    expect(s.counters.insertRetries).toBe(0);
    expect(s.counters.handlerErrors).toBe(0);
  });

  it('retries a real transient refusal (TOO_MANY_PARTS), shows it as lag, dead-letters nothing, lands all once it passes', async () => {
    // Merges "behind": one part in each month the events fall in, and the table throws from the first part on.
    const table = randomName('events_parts');
    const t = `${store.database}.${table}`;
    await store.command(`CREATE TABLE ${t} AS ${store.database}.${EVENTS_TABLE}`);
    await store.command(`ALTER TABLE ${t} MODIFY SETTING parts_to_throw_insert = 1, parts_to_delay_insert = 1`);
    await store.command(
      `INSERT INTO ${t} (org, uuid, published, event_type) VALUES ` +
        "('other', 'a', '2026-10-25 00:00:00', 'x'), ('other', 'b', '2026-11-05 00:00:00', 'x')",
    );
    const topics = await freshTopics();
    const org = randomName('hooli');
    await stream.append(topics.logs, events(org, 30));
    const group = randomName('g');
    const s = await sink({
      topics,
      group,
      eventsTable: table,
      retryPolicy: { initialMs: 5, multiplier: 2, maxMs: 40, retries: Infinity, jitter: 0 },
    });
    await waitFor(() => s.counters.insertRetries, {
      until: (n) => n >= 5,
      what: 'inserts retried while the table refuses parts',
    });
    const lag = total((await renderMetrics()).body, 'hooklog_consumer_lag_records', { group, topic: topics.logs });
    expect(lag).toBe(30);
    expect(await committed(topics.logs, group)).toBe(0);
    expect(s.counters.deadLettered).toBe(0);
    expect(s.counters.bisections).toBe(0);

    await store.command(`ALTER TABLE ${t} MODIFY SETTING parts_to_throw_insert = 3000, parts_to_delay_insert = 1000`);
    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 30,
      what: 'committed once parts are allowed',
    });
    expect(await rows(table, org)).toBe(30);
    expect(s.counters.deadLettered).toBe(0);
  });

  it('cuts short a dead letter the stream refuses whole, rather than block the partition', async () => {
    const topics = await freshTopics();
    const org = randomName('globex');
    // A dead-letter topic with a record-size limit, as a Kafka topic has (max.message.bytes).
    const limited: Stream = {
      kind: stream.kind,
      ensureTopics: (specs) => stream.ensureTopics(specs),
      appendAtomically: (writes) => stream.appendAtomically(writes),
      consume: (opts) => stream.consume(opts),
      committedOffsets: (topic, group) => stream.committedOffsets(topic, group),
      latestOffsets: (topic) => stream.latestOffsets(topic),
      readLatestByKey: (topic) => stream.readLatestByKey(topic),
      follow: (topic) => stream.follow(topic),
      watch: (topic, listener) => stream.watch(topic, listener),
      claim: (owner, current) => stream.claim(owner, current),
      assign: (o) => stream.assign(o),
      ping: () => stream.ping(),
      close: async () => undefined,
      append: async (topic, recs) => {
        if (topic === topics.deadletter && recs.some((r) => r.value.length > 70_000)) {
          throw new HooklogError('RECORD_INVALID', 'MESSAGE_TOO_LARGE (injected limit of the dead-letter topic)');
        }
        return stream.append(topic, recs);
      },
    };
    const records = events(org, 5);
    records[2] = { ...records[2]!, value: Buffer.alloc(100_000, 0x7b) };
    await stream.append(topics.logs, records);
    const group = randomName('g');
    await sink({ topics, group, stream: limited, maxRecordBytes: 50_000 });
    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 5,
      what: 'partition committed to its end',
    });
    const [letter] = await readAll(topics.deadletter, 1);
    expect(letter!.headers[TRUNCATED_HEADER]).toBe('100000');
    expect(letter!.value.equals(records[2]!.value.subarray(0, 64 * 1024))).toBe(true);
    expect(await rows(EVENTS_TABLE, org)).toBe(4);
  });

  it('holds the partition while the events input view is missing, and lands everything once it is back', async () => {
    // A Null table with no view behind it would take the rows and keep none (migrations 013, 032): never commit then.
    await store.command(`DROP VIEW ${store.database}.${EVENTS_TABLE}_input_mv`);
    const topics = await freshTopics();
    const org = randomName('vandelay');
    await stream.append(topics.logs, events(org, 20));
    const group = randomName('g');
    try {
      const s = await sink({ topics, group });
      await waitFor(() => s.counters.handlerErrors, {
        until: (n) => n >= 3,
        what: 'batches failing while the view is missing',
      });
      expect(await committed(topics.logs, group)).toBe(0);
      expect(s.counters.deadLettered).toBe(0);
    } finally {
      // What the error says to do: the statement of the last migration that made the view (037's, with its columns).
      await store.command(viewRestore(store.database, `${EVENTS_TABLE}_input_mv`).sql);
    }
    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 20,
      what: 'committed once the view is back',
    });
    expect(await rows(EVENTS_TABLE, org)).toBe(20);
  });

  it('holds the partition while the arrivals view is missing, and lands the arrivals once it is back', async () => {
    // Without migration 032's view the events would land and their arrivals nowhere: never commit then.
    const db = store.database;
    await store.command(`DROP VIEW ${db}.${EVENTS_TABLE}_arrivals_mv`);
    const topics = await freshTopics();
    const org = randomName('kramerica');
    await stream.append(topics.logs, events(org, 20));
    const group = randomName('g');
    const arrivals = async () =>
      (
        await store.query<{ n: string; c: string }>(
          `SELECT count() AS n, toString(sum(copies)) AS c FROM ${db}.arrivals WHERE org = {org:String}`,
          { org },
        )
      )[0];
    try {
      const s = await sink({ topics, group });
      await waitFor(() => s.counters.handlerErrors, {
        until: (n) => n >= 3,
        what: 'batches failing while the view is missing',
      });
      expect(await committed(topics.logs, group)).toBe(0);
      expect(await rows(EVENTS_TABLE, org)).toBe(20); // the events went in; the check after the insert held them
      expect(await arrivals()).toEqual({ n: '0', c: '0' });
    } finally {
      await store.command(viewRestore(db, `${EVENTS_TABLE}_arrivals_mv`).sql);
    }
    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 20,
      what: 'committed once the view is back',
    });
    // The same insert again: dropped as a repeat in the events table, handed on to the view all the same, once.
    expect(await rows(EVENTS_TABLE, org)).toBe(20);
    expect(await arrivals()).toEqual({ n: '20', c: '20' });
  });

  it('retries while the store is down, commits nothing meanwhile, and lands everything once when it is back', async () => {
    let down = true;
    const flaky: Store = Object.create(store) as Store;
    const unavailable = () =>
      new HooklogError('STORE_UNAVAILABLE', 'ClickHouse unreachable (injected)', { retriable: true });
    flaky.query = async (sql, params) => {
      if (down) throw unavailable();
      return store.query(sql, params);
    };
    flaky.insertJson = async (table, rs, opts) => {
      if (down) throw unavailable();
      return store.insertJson(table, rs, opts);
    };
    flaky.insertTsv = async (table, columns, body, opts) => {
      if (down) throw unavailable();
      return store.insertTsv(table, columns, body, opts);
    };
    const topics = await freshTopics();
    const org = randomName('initech');
    await stream.append(topics.logs, events(org, 30));
    const group = randomName('g');
    const s = await sink({
      topics,
      group,
      store: flaky,
      retryPolicy: { initialMs: 5, multiplier: 2, maxMs: 40, retries: Infinity, jitter: 0 },
    });
    await waitFor(() => s.counters.planErrors, { until: (n) => n >= 5, what: 'retries while the store is down' });
    expect(await committed(topics.logs, group)).toBe(0);
    expect(s.counters.deadLettered).toBe(0);
    down = false;
    await waitFor(async () => await committed(topics.logs, group), {
      until: (n) => n === 30,
      what: 'committed once the store is back',
    });
    expect(await rows(EVENTS_TABLE, org)).toBe(30);
    expect(s.counters.deadLettered).toBe(0);
  });
});
