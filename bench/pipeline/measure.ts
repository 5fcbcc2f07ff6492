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
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin } from 'kafkajs';
import { startClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import { sinkSchema } from '../../consumers/clickhouse-sink/config.js';
import type { Logger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames, type Topics } from '../../platform/stream/headers.js';
import type { Stream, StreamRecord } from '../../platform/stream/types.js';
import { randomName } from '../../test/support/wait.js';
import { createQueue, createView, dropQueue, engineConsumers, type EngineVariant } from './baseline.js';
import { batches } from './events.js';
import { phases, type Phases, type Sample } from './timeline.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

export interface BenchContext {
  readonly records: readonly StreamRecord[];
  /** chdb's data directory: one per process, every mode's database lives in it. */
  readonly chdbDir: string;
  readonly brokers: string;
  /** For the stall diagnosis: consumer groups and offsets as the broker sees them. */
  readonly admin: Admin;
  /**
   * A measurement fails, naming what stalled, when no new row became visible
   * for this long (the untuned engine's first rows take about 8 s).
   */
  readonly stallMs: number;
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
  /** The drains' steady window, as fractions of N (timeline.ts). */
  readonly steadyWindow: readonly [number, number];
  /** The sink's batch (and the tuned engine's block) size: config `max_batch_records`. */
  readonly batchRecords: number;
}

export interface Measurement {
  /** Events per second, start to all N visible in ClickHouse. */
  readonly rate: number;
  /** For the drains: start-up and steady state apart (timeline.ts). */
  readonly phases?: Phases;
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

/**
 * The sink's batching: `max_batch_records` as the bench was told (by default the config's), and
 * `max_batch_wait_ms` as the config has it by default.
 */
const sinkBatch = (ctx: BenchContext) => ({
  maxBatchRecords: ctx.batchRecords,
  maxBatchWaitMs: sinkSchema.parse({}).max_batch_wait_ms,
});
/** An engine that reported exceptions and shows no row after this long has failed, not started slowly. */
const ENGINE_EXCEPTION_GRACE_MS = 15_000;

async function freshStore(ctx: BenchContext, label: string): Promise<Store> {
  const store = openStore({ database: randomName(`bench_${label}`), dataDir: ctx.chdbDir, logger: ctx.logger });
  await migrate(store, ctx.logger);
  return store;
}

async function dropStore(store: Store): Promise<void> {
  await store.command(`DROP DATABASE IF EXISTS ${store.database} SYNC`);
  await store.close();
}

/**
 * Rows in the events table, without FINAL: the bench's events are distinct, so this is the rows visible,
 * and it is read from the parts' row counts instead of merging keys every 50 ms (which would charge both
 * sides' CPU figures for the bench's own polling).
 */
async function countEvents(store: Store): Promise<number> {
  const [row] = await store.query<{ n: string }>(`SELECT count() AS n FROM ${store.database}.${EVENTS_TABLE}`);
  return Number(row?.n ?? 0);
}

/** What a measurement is waiting on, to name it when it stalls. */
interface Watch {
  /** A description of the consumer's state: group, offsets, counters. */
  diagnose(): Promise<string>;
  /** Checked every couple of seconds: a reason to give up at once (an engine failing every block), or null. */
  failed?(visible: number, elapsedMs: number): Promise<string | null>;
}

/**
 * When the first rows, and then all n, were visible (performance.now()).
 * Polled every 50 ms until the first rows, then every 100 ms, which bounds the timing error. Throws, with the watch's
 * diagnosis, as soon as no new row was visible for `ctx.stallMs`, so a consumer
 * that never starts costs a bounded wait and says why.
 */
interface Visible {
  readonly first: number;
  readonly all: number;
  /** Every poll, with the process's CPU time since the measurement's clocks started. */
  readonly samples: Sample[];
}

async function visibleAt(
  ctx: BenchContext,
  store: Store,
  n: number,
  watch: Watch,
  stop?: AbortSignal,
  cpu0: NodeJS.CpuUsage = process.cpuUsage(),
): Promise<Visible> {
  const t0 = performance.now();
  let first = 0;
  let last = 0;
  let progressAt = t0;
  let checkedAt = t0;
  const samples: Sample[] = [];
  for (;;) {
    stop?.throwIfAborted();
    const count = await countEvents(store);
    const now = performance.now();
    const cpu = process.cpuUsage(cpu0);
    samples.push({ t: now, rows: count, cpuUs: cpu.user + cpu.system });
    if (count > 0 && first === 0) first = now;
    if (count >= n) return { first, all: now, samples };
    if (count > last) {
      last = count;
      progressAt = now;
    }
    const stalled = now - progressAt > ctx.stallMs;
    let reason = stalled ? `no new row for ${Math.round((now - progressAt) / 1000)} s` : null;
    if (!reason && watch.failed && now - checkedAt > 2000) {
      checkedAt = now;
      reason = await watch.failed(count, now - t0);
    }
    if (reason) {
      const state = await watch
        .diagnose()
        .catch((err: unknown) => `(diagnosis failed: ${err instanceof Error ? err.message : String(err)})`);
      throw new Error(
        `stalled: ${count} of ${n} rows visible in ${store.database}.events after ${Math.round((now - t0) / 1000)} s (${reason}). ${state}`,
      );
    }
    // Every 50 ms until the first rows (the start-up's resolution), then every 100 ms: a poll costs the
    // process about 2 ms of CPU (chdb, busy machine), which both sides' CPU figures carry.
    await sleep(first === 0 ? 50 : 100);
  }
}

/**
 * A Kafka consumer group as the broker sees it: its state and members (no
 * group at all when its consumers never subscribed), its committed offset
 * and the topic's end offset per partition.
 */
export async function describeGroup(admin: Admin, group: string, topic: string): Promise<string> {
  const [described] = (await admin.describeGroups([group])).groups;
  const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const ends = await admin.fetchTopicOffsets(topic);
  const end = new Map(ends.map((p) => [p.partition, p.high]));
  const offsets = (committed?.partitions ?? [])
    .sort((a, b) => a.partition - b.partition)
    .map((p) => `p${p.partition} ${p.offset === '-1' ? 'none' : p.offset}/${end.get(p.partition) ?? '?'}`)
    .join(', ');
  const state =
    !described ||
    described.state === 'Dead' ||
    (described.state === 'Empty' && described.members.length === 0 && offsets === '')
      ? 'not on the broker (no consumer ever joined)'
      : `${described.state}, ${described.members.length} member(s)`;
  return `broker group ${group}: ${state}; committed/end offsets of ${topic}: ${offsets || 'none'}`;
}

/** The clocks a measurement starts: wall time and this process's CPU time. */
function start(): { t0: number; cpu0: NodeJS.CpuUsage } {
  return { t0: performance.now(), cpu0: process.cpuUsage() };
}

function measured(
  n: number,
  s: { t0: number; cpu0: NodeJS.CpuUsage },
  visible: Visible,
  extra: Partial<Measurement> = {},
): Measurement {
  const cpu = process.cpuUsage(s.cpu0);
  return {
    rate: n / ((visible.all - s.t0) / 1000),
    perCpuSecond: n / ((cpu.user + cpu.system) / 1e6),
    firstVisibleMs: visible.first - s.t0,
    ...extra,
  };
}

/** A drain's measurement: the whole, and its start-up and steady state apart. */
function drained(
  ctx: BenchContext,
  n: number,
  s: { t0: number; cpu0: NodeJS.CpuUsage },
  visible: Visible,
  extra: Partial<Measurement> = {},
): Measurement {
  return measured(n, s, visible, { ...extra, phases: phases(s.t0, n, visible.samples, ...ctx.steadyWindow) });
}

/** Untimed: exactly n rows, n distinct uuids. */
async function checkLoaded(store: Store, n: number): Promise<void> {
  const [row] = await store.query<{ rows: string; uuids: string }>(
    `SELECT count() AS rows, uniqExact(uuid) AS uuids FROM ${store.database}.events`,
  );
  if (Number(row?.rows) !== n || Number(row?.uuids) !== n) {
    throw new Error(`${store.database}.events holds ${row?.rows} rows / ${row?.uuids} uuids, expected ${n}`);
  }
}

/** For appends alone: the rate is to the last acknowledgement. */
function appended(n: number, s: { t0: number; cpu0: NodeJS.CpuUsage }): Measurement {
  const cpu = process.cpuUsage(s.cpu0);
  return { rate: n / ((performance.now() - s.t0) / 1000), perCpuSecond: n / ((cpu.user + cpu.system) / 1e6) };
}

/**
 * Appends every record in batches, `concurrency` appends awaited at a time, as
 * concurrent hook deliveries would. Fails, naming how far it got, when no
 * append was acknowledged for `ctx.stallMs`.
 */
async function appendAll(ctx: BenchContext, stream: Stream, topic: string): Promise<void> {
  const queue = batches(ctx.records, ctx.appendBatch);
  let next = 0;
  let acked = 0;
  let ackedAt = performance.now();
  const worker = async (): Promise<void> => {
    while (next < queue.length) {
      const batch = queue[next++]!;
      await stream.append(topic, batch);
      acked += batch.length;
      ackedAt = performance.now();
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      const idle = performance.now() - ackedAt;
      if (idle > ctx.stallMs)
        reject(
          new Error(
            `stalled: appends to ${topic}: ${acked} of ${ctx.records.length} records acknowledged, none for ${Math.round(idle / 1000)} s`,
          ),
        );
    }, 1000);
  });
  try {
    await Promise.race([Promise.all(Array.from({ length: ctx.appendConcurrency }, worker)), stalled]);
  } finally {
    clearInterval(timer);
  }
}

async function ensureTopics(ctx: BenchContext, stream: Stream, topics: Topics): Promise<Topics> {
  await stream.ensureTopics([
    { name: topics.logs, partitions: ctx.partitions },
    { name: topics.deadletter, partitions: ctx.partitions },
  ]);
  return topics;
}

/** Appends while the sink runs: first append to N rows visible. */
async function appendThroughSink(
  ctx: BenchContext,
  stream: Stream,
  prefix: string,
  label: string,
): Promise<Measurement> {
  const n = ctx.records.length;
  const store = await freshStore(ctx, label);
  const topics = await ensureTopics(ctx, stream, topicNames(prefix));
  const group = `${prefix}.sink`;
  const sink = await startClickHouseSink({ stream, store, topics, group, logger: ctx.logger, ...sinkBatch(ctx) });
  try {
    const s = start();
    // Rows are watched for from the first append, while the appends run: watched only after the last
    // was acknowledged, the first could never be seen sooner than the whole append took (~1.7 s for 50,000).
    const stop = new AbortController();
    const visibleSoon = visibleAt(ctx, store, n, sinkWatch(ctx, stream, sink, group, topics.logs), stop.signal);
    visibleSoon.catch(() => undefined); // awaited below, unless the appends fail first
    let acked: number;
    try {
      await appendAll(ctx, stream, topics.logs);
      acked = performance.now();
    } catch (err) {
      stop.abort();
      throw err;
    }
    const visible = await visibleSoon;
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
    const group = `${store.database}.engine`;
    await createQueue(store, variant, { brokers: ctx.brokers, topic: topics.logs, group });
    const s = start();
    await createView(store);
    const visible = await visibleAt(
      ctx,
      store,
      n,
      {
        diagnose: async () =>
          `${variant.label}: ${(await engineConsumers(store)).text}; ${await describeGroup(ctx.admin, group, topics.logs)}`,
        // An engine whose every block fails keeps retrying quietly; say so instead of waiting out the stall.
        failed: async (visible, elapsedMs) =>
          visible === 0 && elapsedMs > ENGINE_EXCEPTION_GRACE_MS && (await engineConsumers(store)).exceptions.length > 0
            ? `the engine reports exceptions and no row after ${Math.round(elapsedMs / 1000)} s`
            : null,
      },
      undefined,
      s.cpu0,
    );
    const m = drained(ctx, n, s, visible);
    await dropQueue(store);
    await checkLoaded(store, n);
    return m;
  } finally {
    await dropQueue(store).catch(() => undefined);
    await dropStore(store);
  }
}

/** The sink's side of a stall: its counters, and its group's offsets (the broker's view, or the embedded log's). */
function sinkWatch(ctx: BenchContext, stream: Stream, sink: { counters: object }, group: string, topic: string): Watch {
  return {
    diagnose: async () => {
      const counters = `sink counters ${JSON.stringify(sink.counters)}`;
      if (stream === ctx.kafka) return `${counters}; ${await describeGroup(ctx.admin, group, topic)}`;
      const committed = [...(await stream.committedOffsets(topic, group))].map(([p, o]) => `p${p} ${o}`).join(', ');
      return `${counters}; embedded group ${group} committed: ${committed || 'nothing'}`;
    },
  };
}

/** (d) hooklog's sink draining the same pre-filled topic: sink start to N rows visible. */
export async function measureSinkDrain(ctx: BenchContext, topics: Topics): Promise<Measurement> {
  const n = ctx.records.length;
  const store = await freshStore(ctx, 'drain');
  try {
    const s = start();
    const group = `${store.database}.sink`;
    const sink = await startClickHouseSink({
      stream: ctx.kafka,
      store,
      topics,
      group,
      logger: ctx.logger,
      ...sinkBatch(ctx),
    });
    try {
      const visible = await visibleAt(
        ctx,
        store,
        n,
        sinkWatch(ctx, ctx.kafka, sink, group, topics.logs),
        undefined,
        s.cpu0,
      );
      const m = drained(ctx, n, s, visible, { inserts: sink.counters.inserts });
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
