/**
 * One measurement per mode. Each gets a fresh ClickHouse database (migrated
 * by hooklog's own migrations, so every mode writes the same `events` table)
 * and fresh topics, and removes them afterwards. Rates are N / elapsed
 * seconds, where elapsed ends when `SELECT count() FROM db.events` reaches N;
 * after that (untimed) the rows are checked to be N distinct uuids, so a
 * figure can never come from a partial or doubled load.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import { startClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import type { Logger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames, type Topics } from '../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { createQueue, createView, dropQueue, type EngineVariant } from './baseline.js';
import { batches } from './events.js';

export interface BenchContext {
  readonly records: readonly StreamRecord[];
  /** chdb's data directory: one per process, every mode's database lives in it. */
  readonly chdbDir: string;
  readonly brokers: string;
  /** hooklog's Kafka stream, shared by the Kafka modes (topics and groups are per measurement). */
  readonly kafka: Stream;
  /** Kafka topics made so far, deleted at the end (see deleteTopics). */
  readonly created: Topics[];
  readonly logger: Logger;
  /** Records per append call (a hook delivery's worth), and append calls in flight at once. */
  readonly appendBatch: number;
  readonly appendConcurrency: number;
  /** Partitions of every topic: hooklog's default. */
  readonly partitions: number;
}

export interface Measurement {
  /** Events per second, start to all N visible in ClickHouse. */
  readonly rate: number;
  /** For the append modes: events per second until the last append was acknowledged. */
  readonly appendRate?: number;
  /**
   * Events per CPU-second of this process (Node and chdb's threads alike; the
   * broker's JVM is not counted). Far less sensitive than wall time to other
   * load on the machine, and it prices the work itself.
   */
  readonly perCpuSecond: number;
  /** From the start to the first rows visible: start-up (group join, first batch wait). */
  readonly firstVisibleMs?: number;
  /** For hooklog's sink: inserts it made (N / inserts = its mean batch). */
  readonly inserts?: number;
}

/** The sink's defaults (config `max_batch_records`, `max_batch_wait_ms`). */
const SINK_BATCH = { maxBatchRecords: 5000, maxBatchWaitMs: 1000 };
const VISIBLE_TIMEOUT_MS = 600_000;

async function freshStore(ctx: BenchContext, label: string): Promise<Store> {
  const store = openStore({ database: randomName(`bench_${label}`), dataDir: ctx.chdbDir, logger: ctx.logger });
  await migrate(store, ctx.logger);
  return store;
}

async function dropStore(store: Store): Promise<void> {
  await store.command(`DROP DATABASE IF EXISTS ${store.database} SYNC`);
  await store.close();
}

async function countEvents(store: Store): Promise<number> {
  const [row] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.events`);
  return Number(row?.n ?? 0);
}

/**
 * When the first rows, and then all n, were visible (performance.now()).
 * Polled every 50 ms, which bounds the timing error.
 */
async function visibleAt(store: Store, n: number): Promise<{ first: number; all: number }> {
  let first = 0;
  await waitFor(
    async () => {
      const count = await countEvents(store);
      if (count > 0 && first === 0) first = performance.now();
      return count >= n;
    },
    { timeoutMs: VISIBLE_TIMEOUT_MS, intervalMs: 50, what: `${n} rows in ${store.database}.events` },
  );
  return { first, all: performance.now() };
}

/** The clocks a measurement starts: wall time and this process's CPU time. */
function start(): { t0: number; cpu0: NodeJS.CpuUsage } {
  return { t0: performance.now(), cpu0: process.cpuUsage() };
}

function measured(n: number, s: { t0: number; cpu0: NodeJS.CpuUsage }, visible: { first: number; all: number }, extra: Partial<Measurement> = {}): Measurement {
  const cpu = process.cpuUsage(s.cpu0);
  return { rate: n / ((visible.all - s.t0) / 1000), perCpuSecond: n / ((cpu.user + cpu.system) / 1e6), firstVisibleMs: visible.first - s.t0, ...extra };
}

/** Untimed: exactly n rows, n distinct uuids. */
async function checkLoaded(store: Store, n: number): Promise<void> {
  const [row] = await store.query<{ rows: string; uuids: string }>(`SELECT count() AS rows, uniqExact(uuid) AS uuids FROM ${store.database}.events`);
  if (Number(row?.rows) !== n || Number(row?.uuids) !== n) {
    throw new Error(`${store.database}.events holds ${row?.rows} rows / ${row?.uuids} uuids, expected ${n}`);
  }
}

/** For appends alone: the rate is to the last acknowledgement. */
function appended(n: number, s: { t0: number; cpu0: NodeJS.CpuUsage }): Measurement {
  const cpu = process.cpuUsage(s.cpu0);
  return { rate: n / ((performance.now() - s.t0) / 1000), perCpuSecond: n / ((cpu.user + cpu.system) / 1e6) };
}

/** Appends every record in batches, `concurrency` appends awaited at a time, as concurrent hook deliveries would. */
async function appendAll(ctx: BenchContext, stream: Stream, topic: string): Promise<void> {
  const queue = batches(ctx.records, ctx.appendBatch);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < queue.length) await stream.append(topic, queue[next++]!);
  };
  await Promise.all(Array.from({ length: ctx.appendConcurrency }, worker));
}

async function ensureTopics(ctx: BenchContext, stream: Stream, topics: Topics): Promise<Topics> {
  await stream.ensureTopics([{ name: topics.logs, partitions: ctx.partitions }, { name: topics.deadletter, partitions: ctx.partitions }]);
  return topics;
}

/** Appends while the sink runs: first append to N rows visible. */
async function appendThroughSink(ctx: BenchContext, stream: Stream, prefix: string, label: string): Promise<Measurement> {
  const n = ctx.records.length;
  const store = await freshStore(ctx, label);
  const topics = await ensureTopics(ctx, stream, topicNames(prefix));
  const sink = await startClickHouseSink({ stream, store, topics, group: `${prefix}.sink`, logger: ctx.logger, ...SINK_BATCH });
  try {
    const s = start();
    await appendAll(ctx, stream, topics.logs);
    const acked = performance.now();
    const visible = await visibleAt(store, n);
    await checkLoaded(store, n);
    return measured(n, s, visible, { appendRate: n / ((acked - s.t0) / 1000), inserts: sink.counters.inserts });
  } finally {
    await sink.stop();
    await dropStore(store);
  }
}

/** (a) The embedded log in a fresh data directory. */
export async function measureEmbedded(ctx: BenchContext): Promise<Measurement> {
  const dir = await mkdtemp(join(tmpdir(), 'hooklog-bench-embedded-'));
  const stream = await openEmbeddedStream({ dataDir: dir, logger: ctx.logger });
  try {
    return await appendThroughSink(ctx, stream, 'bench', 'embedded');
  } finally {
    await stream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Appends alone, no sink: what the embedded log takes when nothing reads it. */
export async function measureEmbeddedAppendOnly(ctx: BenchContext): Promise<Measurement> {
  const dir = await mkdtemp(join(tmpdir(), 'hooklog-bench-embedded-'));
  const stream = await openEmbeddedStream({ dataDir: dir, logger: ctx.logger });
  try {
    const topics = await ensureTopics(ctx, stream, topicNames('bench'));
    const s = start();
    await appendAll(ctx, stream, topics.logs);
    return appended(ctx.records.length, s);
  } finally {
    await stream.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** (b) Kafka, fresh topics. */
export async function measureKafka(ctx: BenchContext): Promise<Measurement> {
  const prefix = randomName('bench_append');
  ctx.created.push(topicNames(prefix));
  return appendThroughSink(ctx, ctx.kafka, prefix, 'kafka');
}

/**
 * A fresh Kafka topic holding all N records, produced by hooklog's producer
 * (acks=all, gzip) as in production. Its rate is Kafka appends with no sink.
 */
export async function prefill(ctx: BenchContext): Promise<{ topics: Topics; append: Measurement }> {
  const topics = topicNames(randomName('bench_prefilled'));
  ctx.created.push(topics);
  await ensureTopics(ctx, ctx.kafka, topics);
  const s = start();
  await appendAll(ctx, ctx.kafka, topics.logs);
  return { topics, append: appended(ctx.records.length, s) };
}

/** (c) The Kafka engine draining a pre-filled topic: view creation to N rows visible. */
export async function measureEngine(ctx: BenchContext, variant: EngineVariant, topics: Topics): Promise<Measurement> {
  const n = ctx.records.length;
  const store = await freshStore(ctx, 'engine');
  try {
    await createQueue(store, variant, { brokers: ctx.brokers, topic: topics.logs, group: `${store.database}.engine` });
    const s = start();
    await createView(store);
    const visible = await visibleAt(store, n);
    const m = measured(n, s, visible);
    await dropQueue(store);
    await checkLoaded(store, n);
    return m;
  } finally {
    await dropQueue(store).catch(() => undefined);
    await dropStore(store);
  }
}

/** (d) hooklog's sink draining the same pre-filled topic: sink start to N rows visible. */
export async function measureSinkDrain(ctx: BenchContext, topics: Topics): Promise<Measurement> {
  const n = ctx.records.length;
  const store = await freshStore(ctx, 'drain');
  try {
    const s = start();
    const sink = await startClickHouseSink({ stream: ctx.kafka, store, topics, group: `${store.database}.sink`, logger: ctx.logger, ...SINK_BATCH });
    try {
      const visible = await visibleAt(store, n);
      const m = measured(n, s, visible, { inserts: sink.counters.inserts });
      await checkLoaded(store, n);
      return m;
    } finally {
      await sink.stop();
    }
  } finally {
    await dropStore(store);
  }
}

/**
 * Deletes the topics the bench created. Only once hooklog's Kafka stream is
 * closed: kafkajs keeps refreshing metadata for every topic it has produced
 * to, and a deleted one fails those refreshes (UNKNOWN_TOPIC_OR_PARTITION),
 * which stalls sends to the topics that do exist.
 */
export async function deleteTopics(admin: Admin, created: readonly Topics[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const names = created.flatMap((t) => [t.logs, t.deadletter]).filter((t) => existing.has(t));
  if (names.length > 0) await admin.deleteTopics({ topics: names, timeout: 30_000 });
}
