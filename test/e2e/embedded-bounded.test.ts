/**
 * The embedded log is bounded and never lossy, and the consumer side is seen
 * in /metrics, with the real receiver, the
 * real sink and real chdb in one process: while the sink is stalled (its store
 * down), retention keeps every segment the sink has not committed however old
 * it is, and at the disk cap deliveries get 503 with Retry-After; once the
 * store is back the sink drains, every acknowledged event is in ClickHouse
 * once, retention frees the log, and deliveries are acknowledged again.
 * /metrics, scraped throughout, shows the sink's lag growing while it is
 * stalled and falling to nothing after, and the log's bytes against its cap.
 */
import { mkdtempSync, rmSync, utimesSync, readdirSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClickHouseSink, type ClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import { event, uuid } from '../../consumers/clickhouse-sink/crash-replay.fixture.js';
import { createApp } from '../../cli/app.js';
import { parseConfig } from '../../cli/config/load.js';
import { HooklogError } from '../../platform/errors.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import { seededRandom } from '../support/random.js';
import { delivery } from '../fixtures/index.js';
import { randomName, waitFor } from '../support/wait.js';
import { max, total } from '../support/metrics.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-bounded-'));
const SECRET = 'bounded-secret-0123456789abcdef';
const SEGMENT_BYTES = 8 * 1024;
const MAX_BYTES = 96 * 1024;
const DAY = 86_400_000;
let store: Store;
let stream: EmbeddedStream;
let server: Server;
let base: string;
let sink: ClickHouseSink;
const sinkGroup = randomName('sink');
let storeDown = true;
const topics = topicNames(randomName('bounded'));
const org = randomName('acme');

beforeAll(async () => {
  store = openStore({ database: randomName('bounded'), dataDir, logger: log });
  await migrate(store, log);
  stream = await openEmbeddedStream({
    dataDir,
    logger: log,
    segmentBytes: SEGMENT_BYTES,
    maxBytes: MAX_BYTES,
    retentionHours: 1,
    cappedTopics: [topics.logs],
  });
  await stream.ensureTopics([
    { name: topics.logs, partitions: 2 },
    { name: topics.deadletter, partitions: 1 },
  ]);
  const config = parseConfig({
    data_dir: dataDir,
    server: { host: '127.0.0.1', port: 0 },
    event_hooks: [{ id: 'okta-main', org, auth: { header: 'authorization', secrets: [SECRET] } }],
  });
  server = createApp({
    config,
    stream,
    topics: { ...topicNames('unused'), logs: topics.logs, deadletter: topics.deadletter },
    probes: [],
    logger: log,
  }).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const addr = server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  // The sink's store is down until the test says otherwise: a stalled sink.
  const flaky: Store = Object.create(store) as Store;
  const down = () => new HooklogError('STORE_UNAVAILABLE', 'ClickHouse unreachable (injected)', { retriable: true });
  flaky.query = async (sql, params) => {
    if (storeDown) throw down();
    return store.query(sql, params);
  };
  flaky.insertJson = async (table, rows, opts) => {
    if (storeDown) throw down();
    return store.insertJson(table, rows, opts);
  };
  flaky.insertTsv = async (table, columns, body, opts) => {
    if (storeDown) throw down();
    return store.insertTsv(table, columns, body, opts);
  };
  flaky.command = async (sql, params) => {
    if (storeDown) throw down();
    return store.command(sql, params);
  };
  sink = await startClickHouseSink({
    stream,
    store: flaky,
    topics,
    group: sinkGroup,
    logger: log,
    maxBatchRecords: 200,
    maxBatchWaitMs: 50,
    retryPolicy: { initialMs: 10, multiplier: 2, maxMs: 100, retries: Infinity, jitter: 0 },
  });
}, 60_000);

afterAll(async () => {
  await sink?.stop();
  await new Promise((r) => server?.close(r));
  await stream?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const rand = seededRandom(31);
async function deliver(n: number): Promise<{ status: number; retryAfter: string | null; uuids: string[] }> {
  const events = Array.from(
    { length: n },
    (_, i) => JSON.parse(event(rand, org, i, uuid(rand)).value.toString()) as { uuid: string },
  );
  const res = await fetch(`${base}/hooks/events/okta-main`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: SECRET },
    body: JSON.stringify(delivery(org, 'okta-main', events)),
  });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), uuids: events.map((e) => e.uuid) };
}

const scrape = async () => (await fetch(`${base}/metrics`)).text();
const lagOf = { group: sinkGroup, topic: topics.logs };

const segments = () =>
  readdirSync(join(dataDir, 'stream'))
    .filter((f) => f.endsWith('.seg'))
    .map((f) => join(dataDir, 'stream', f));

describe('embedded log: bounded, never lossy', () => {
  it('keeps what a stalled sink has not committed past retention, refuses at the cap with 503, and recovers', async () => {
    const acked = new Set<string>();
    let refused: Awaited<ReturnType<typeof deliver>> | undefined;
    for (let i = 0; i < 400 && !refused; i++) {
      const r = await deliver(5);
      if (r.status === 204) r.uuids.forEach((u) => acked.add(u));
      else refused = r;
    }
    expect(refused?.status).toBe(503);
    expect(refused?.retryAfter).toBe('1');
    expect(stream.overCap).toBe(true);
    // Only consumers' own small writes (commits, segment snapshots) may go past the cap.
    expect(stream.bytes).toBeLessThanOrEqual(MAX_BYTES + SEGMENT_BYTES);
    expect(acked.size).toBeGreaterThan(100);
    expect(segments().length).toBeGreaterThan(4);

    // Far past retention, with the sink still stalled: nothing it has not committed may go.
    const old = new Date(Date.now() - 10 * DAY);
    for (const f of segments()) utimesSync(f, old, old);
    expect(await stream.enforceRetention(Date.now() + 10 * DAY)).toBe(0);
    expect((await deliver(5)).status).toBe(503);

    // What /metrics says meanwhile: the sink is behind by every acknowledged record, and further behind by the second.
    const first = await scrape();
    expect(total(first, 'hooklog_consumer_lag_records', lagOf)).toBe(acked.size);
    const lagSeconds = max(first, 'hooklog_consumer_lag_seconds', lagOf);
    expect(lagSeconds).toBeGreaterThan(0);
    await waitFor(async () => max(await scrape(), 'hooklog_consumer_lag_seconds', lagOf), {
      until: (n) => n > lagSeconds + 0.2,
      what: 'lag in seconds growing',
    });
    expect(total(first, 'hooklog_stream_embedded_over_cap')).toBe(1);
    expect(total(first, 'hooklog_stream_embedded_bytes')).toBeGreaterThan(MAX_BYTES - 2 * SEGMENT_BYTES);
    expect(total(first, 'hooklog_stream_embedded_max_bytes')).toBe(MAX_BYTES);
    expect(total(first, 'hooklog_sink_batch_plan_errors_total', { topic: topics.logs })).toBeGreaterThan(0);

    // The store comes back: the sink drains, retention frees the log, deliveries are taken again.
    storeDown = false;
    const count = async () =>
      Number(
        (
          await store.query<{ n: string }>(
            `SELECT count() AS n FROM ${store.database}.${EVENTS_TABLE} WHERE org = {org:String}`,
            { org },
          )
        )[0]!.n,
      );
    await waitFor(async () => await count(), {
      until: (v) => v === acked.size,
      timeoutMs: 60_000,
      what: `${acked.size} acknowledged events in ClickHouse`,
    });
    const stored = await store.query<{ uuid: string }>(
      `SELECT uuid FROM ${store.database}.${EVENTS_TABLE} WHERE org = {org:String}`,
      { org },
    );
    expect(new Set(stored.map((r) => r.uuid))).toEqual(acked);
    await waitFor(async () => (await deliver(5)).status, {
      until: (n) => n === 204,
      timeoutMs: 30_000,
      what: 'deliveries acknowledged again',
    });
    expect(stream.overCap).toBe(false);
    expect(stream.bytes).toBeLessThan(MAX_BYTES);
    await waitFor(
      async () => {
        const text = await scrape();
        return {
          records: total(text, 'hooklog_consumer_lag_records', lagOf),
          seconds: max(text, 'hooklog_consumer_lag_seconds', lagOf),
        };
      },
      { until: (lag) => lag.records === 0 && lag.seconds === 0, what: 'lag back to nothing' },
    );
    const after = await scrape();
    expect(total(after, 'hooklog_stream_embedded_over_cap')).toBe(0);
    expect(total(after, 'hooklog_sink_rows_inserted_total', { table: EVENTS_TABLE })).toBeGreaterThanOrEqual(
      acked.size,
    );
    expect(total(after, 'hooklog_sink_freshness_seconds_count', { table: EVENTS_TABLE })).toBeGreaterThanOrEqual(
      acked.size,
    );
  }, 120_000);
});
