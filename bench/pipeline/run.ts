/**
 * Pipeline throughput bench (not part of `npm test`):
 *
 *   npx tsx bench/pipeline/run.ts [--events N] [--runs R] [--batch 500] [--concurrency 4] [--stall-s 60]
 *                                 [--broker-defaults] [--batch-records N] [--steady 0.1,0.9]
 *   npm run bench:pipeline -- --events 200000 --runs 5       (what BENCHMARKS.md quotes)
 *
 * The broker: without KAFKA_BROKERS the bench starts its own, pinning the settings the drains depend on
 * (broker-settings.ts: group.initial.rebalance.delay.ms 0, the test brokers' value); with
 * --broker-defaults that broker runs Kafka's own defaults instead (3 s). Either way, and on a broker named
 * by KAFKA_BROKERS, the settings are read back from the broker and printed before the figures. The
 * drains' ratios must agree on both kinds of broker: what a setting costs one side only shows in the
 * start-up column, never in the steady state.
 *
 * Per run, with N generated events (events.ts):
 *   embedded        append to the embedded log with the sink running; first append → N rows visible
 *   kafka           the same through a fresh Kafka topic
 *   (appends alone, with no sink reading, are timed too: the embedded log's, and the Kafka pre-fill's)
 *   then a fresh topic is pre-filled with the N events (untimed), and drained by:
 *   kafka-engine *  ClickHouse's Kafka table engine + materialized view (baseline.ts); view creation → N visible
 *   sink drain      hooklog's sink; sink start → N visible
 * The drains run one after another, never at once, in an order that alternates per run. Each drain is
 * also split (timeline.ts) into its start-up (start → first rows visible: group join, first fetch, first
 * insert) and its steady state (rows per second, and per CPU-second, between the polls that first saw
 * 10% and 90% of N; --steady changes the window): the goal figures are the steady ones.
 * Uses KAFKA_BROKERS when set, otherwise starts a broker of its own (test/kafka/broker.ts).
 * Prints every run's figures to stderr and the summary table (medians, min, max, ratios) to stdout.
 * A measurement that sees no new row for --stall-s seconds fails the bench with what stalled: the
 * sink's counters, or the engine's consumers (system.kafka_consumers: assignment, offsets,
 * exceptions), and the consumer group and its offsets as the broker sees them. The events are
 * generated (events.ts), so the bench needs nothing outside the repo.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { quietKafka } from '../../platform/stream/kafka/client.js';
import { createLogger } from '../../platform/log.js';
import { openStore } from '../../platform/store/index.js';
import type { Topics } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { startKafkaBroker, type KafkaBroker } from '../../test/kafka/broker.js';
import { randomName } from '../../test/support/wait.js';
import { sinkSchema } from '../../consumers/clickhouse-sink/config.js';
import { engineVariants } from './baseline.js';
import { BENCH_BROKER, KAFKA_DEFAULTS, describeBroker } from './broker-settings.js';
import type { Phases } from './timeline.js';
import { buildWorkload } from './events.js';
import {
  deleteTopics,
  measureEmbedded,
  measureEmbeddedAppendOnly,
  measureEngine,
  measureKafka,
  measureSinkDrain,
  prefill,
  type BenchContext,
  type Measurement,
} from './measure.js';
import { formatTable, type Row } from './stats.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '200000' },
    runs: { type: 'string', default: '5' },
    /** Records per append, and appends in flight. */
    batch: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '4' },
    /** A measurement fails when no new row became visible for this long. */
    'stall-s': { type: 'string', default: '60' },
    /** Start the bench's own broker with Kafka's defaults (group.initial.rebalance.delay.ms 3000) instead. */
    'broker-defaults': { type: 'boolean', default: false },
    /** The sink's max_batch_records and the tuned engine's kafka_max_block_size. Default: the sink config's. */
    'batch-records': { type: 'string' },
    /** The drains' steady window, as fractions of N. */
    steady: { type: 'string', default: '0.1,0.9' },
  },
  strict: true,
});
const N = positiveInt('events', args.events);
const RUNS = positiveInt('runs', args.runs);
const BATCH_RECORDS = positiveInt(
  'batch-records',
  args['batch-records'] ?? String(sinkSchema.parse({}).max_batch_records),
);
const ENGINE_VARIANTS = engineVariants(BATCH_RECORDS);
const STEADY = steadyWindow(args.steady);

function steadyWindow(v: string | undefined): readonly [number, number] {
  const [from, to] = (v ?? '').split(',').map(Number);
  if (!(from! >= 0 && to! <= 1 && from! < to!))
    throw new Error(`--steady must be two fractions a,b with 0 <= a < b <= 1, got ${v}`);
  return [from!, to!];
}

function positiveInt(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
}

const DRAIN = 'sink drain (pre-filled kafka)';
const say = (msg: string) => process.stderr.write(`${msg}\n`);
const fmt = (m: Measurement) =>
  `${Math.round(m.rate).toLocaleString('en-US')} ev/s` +
  (Number.isFinite(m.perCpuSecond) ? ` (${Math.round(m.perCpuSecond).toLocaleString('en-US')} per CPU-second)` : '') +
  (m.firstVisibleMs !== undefined ? `; first rows visible after ${Math.round(m.firstVisibleMs)} ms` : '') +
  (m.appendRate ? `; appends acked at ${Math.round(m.appendRate).toLocaleString('en-US')} ev/s` : '') +
  (m.inserts ? `; ${m.inserts} inserts, ${Math.round(N / m.inserts)} rows each on average` : '') +
  (m.phases
    ? `; start-up ${Math.round(m.phases.startupMs)} ms, steady ${Math.round(m.phases.steadyRate).toLocaleString('en-US')} ev/s` +
      ` (${Math.round(m.phases.steadyPerCpuSecond).toLocaleString('en-US')} per CPU-second) over ` +
      `${Math.round(m.phases.window[0] * 100)}-${Math.round(m.phases.window[1] * 100)}% of N`
    : '');

async function main(): Promise<void> {
  // Warnings only: a sink retrying or dead-lettering during a run must be seen, not timed silently.
  const logger = createLogger({ level: process.env.HOOKLOG_LOG_LEVEL ?? 'warn', destination: process.stderr });
  let broker: KafkaBroker | null = null;
  let brokers = process.env.KAFKA_BROKERS;
  if (brokers && args['broker-defaults'])
    throw new Error("--broker-defaults starts the bench's own broker with Kafka's defaults: unset KAFKA_BROKERS");
  if (!brokers) {
    const pinned = args['broker-defaults'] ? KAFKA_DEFAULTS : BENCH_BROKER;
    say(
      `starting a Kafka broker with ${Object.entries(pinned)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}…`,
    );
    broker = await startKafkaBroker({ serverProperties: pinned, jvm: 'server' });
    brokers = broker.brokers;
  }
  const chdbDir = await mkdtemp(join(tmpdir(), 'hooklog-bench-chdb-'));
  const admin = quietKafka({ brokers: brokers.split(','), clientId: 'hooklog-bench-admin' }).admin();
  await admin.connect();
  const brokerSettings = await describeBroker(admin);
  say(brokerSettings);
  // Each mode opens and closes a store of its own (the sink writes to its
  // store's database); closing a chdb session can shut the engine down under
  // the next one, so this one holds the engine open for the whole run.
  const anchor = openStore({ database: 'default', dataDir: chdbDir, logger });
  await anchor.ping();
  const created: Topics[] = [];
  const kafka = await openKafkaStream({ brokers: brokers.split(','), clientId: randomName('hooklog-bench'), logger });
  try {
    const t = performance.now();
    const workload = buildWorkload(N);
    say(
      `${N} events over 20 orgs, ${(workload.bytes / 2 ** 20).toFixed(1)} MiB of JSON, built in ${Math.round(performance.now() - t)} ms; brokers ${brokers}; ${cpus().length} CPUs`,
    );
    const ctx: BenchContext = {
      records: workload.records,
      chdbDir,
      brokers,
      admin,
      stallMs: positiveInt('stall-s', args['stall-s']) * 1000,
      kafka,
      created,
      logger,
      appendBatch: positiveInt('batch', args.batch),
      appendConcurrency: positiveInt('concurrency', args.concurrency),
      partitions: 4,
      steadyWindow: STEADY,
      batchRecords: BATCH_RECORDS,
    };
    const results = new Map<string, Measurement[]>();
    const loads: number[] = [];
    const take = (run: number, mode: string, m: Measurement): void => {
      say(`run ${run}/${RUNS} ${mode}: ${fmt(m)}`);
      (results.get(mode) ?? results.set(mode, []).get(mode)!).push(m);
    };

    for (let run = 1; run <= RUNS; run++) {
      const emb = await measureEmbedded(ctx);
      take(run, 'embedded', emb);
      take(run, 'embedded: appends acked', { rate: emb.appendRate!, perCpuSecond: NaN });
      const kaf = await measureKafka(ctx);
      take(run, 'kafka', kaf);
      take(run, 'kafka: appends acked', { rate: kaf.appendRate!, perCpuSecond: NaN });
      take(run, 'embedded: appends acked, no sink', await measureEmbeddedAppendOnly(ctx));
      const { topics, append } = await prefill(ctx);
      take(run, 'kafka: appends acked, no sink', append);

      const drains: Array<[string, () => Promise<Measurement>]> = [
        ...ENGINE_VARIANTS.map((v): [string, () => Promise<Measurement>] => [
          v.label,
          () => measureEngine(ctx, v, topics),
        ]),
        [DRAIN, () => measureSinkDrain(ctx, topics)],
      ];
      if (run % 2 === 0) drains.reverse();
      for (const [mode, measure] of drains) take(run, mode, await measure());
      loads.push(loadavg()[0]!);
      say(`run ${run}/${RUNS} done; 1-minute load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs`);
    }

    const pick = (mode: string, f: (m: Measurement) => number) => results.get(mode)!.map(f);
    const endToEnd = ['embedded', 'kafka', DRAIN, ...ENGINE_VARIANTS.map((v) => v.label)];
    const appendsOnly = [
      'embedded: appends acked',
      'embedded: appends acked, no sink',
      'kafka: appends acked',
      'kafka: appends acked, no sink',
    ];
    const baselines = ENGINE_VARIANTS.map((v) => v.label);
    const out = (text: string) => process.stdout.write(`${text}\n`);
    out(
      `\nN = ${N} events, ${RUNS} runs, ${cpus().length} CPUs; 1-minute load average after each run: ${loads.map((l) => l.toFixed(2)).join(', ')}`,
    );
    out(`${broker ? "the bench's own broker" : `the broker at ${brokers}`}:\n${brokerSettings}`);
    out(
      `sink max_batch_records ${BATCH_RECORDS} (= tuned engine kafka_max_block_size); steady window ${STEADY[0]}..${STEADY[1]} of N`,
    );
    const drains = [DRAIN, ...baselines];
    const phase = (mode: string, f: (p: Phases) => number) => results.get(mode)!.map((m) => f(m.phases!));
    out("\ndrains, steady state (the goal figures): events/s between the polls that first saw the window's ends\n");
    out(
      formatTable(
        drains.map((mode): Row => ({ mode, rates: phase(mode, (p) => p.steadyRate), compare: true })),
        baselines,
      ),
    );
    out('\ndrains, steady state: events per CPU-second of the bench process over the same window\n');
    out(
      formatTable(
        drains.map((mode): Row => ({ mode, rates: phase(mode, (p) => p.steadyPerCpuSecond), compare: true })),
        baselines,
        'ev/cpu-s',
      ),
    );
    out('\ndrains, start-up: ms from start (sink start, view creation) to the first rows visible\n');
    out(
      formatTable(
        drains.map((mode): Row => ({ mode, rates: phase(mode, (p) => p.startupMs), compare: false })),
        [],
        'ms',
      ),
    );
    out(
      '\nevents/s, start to all N visible in ClickHouse (appends: to the last acknowledgement); ratios are median / median\n',
    );
    out(
      formatTable(
        [
          ...endToEnd.map((mode): Row => ({ mode, rates: pick(mode, (m) => m.rate), compare: true })),
          ...appendsOnly.map((mode): Row => ({ mode, rates: pick(mode, (m) => m.rate), compare: false })),
        ],
        baselines,
      ),
    );
    out('\nevents per CPU-second of the bench process (Node + chdb threads; the broker JVM not counted)\n');
    out(
      formatTable(
        endToEnd.map((mode): Row => ({ mode, rates: pick(mode, (m) => m.perCpuSecond), compare: true })),
        baselines,
        'ev/cpu-s',
      ),
    );
    const raw = Object.fromEntries([...results].map(([k, v]) => [k, v.map((m) => Math.round(m.rate))]));
    out(`\nraw ev/s: ${JSON.stringify(raw)}`);
  } catch (err) {
    // Said before the clean-up, which may itself hang on whatever stalled.
    say(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    failed = true;
  } finally {
    await step('close the Kafka stream', () => kafka.close());
    if (!broker) await step('delete the topics', () => deleteTopics(admin, created)); // our own broker goes with its data
    await step('disconnect the Kafka admin', () => admin.disconnect());
    await step('close chdb', () => anchor.close());
    await step('remove the chdb directory', () => rm(chdbDir, { recursive: true, force: true }));
    await step('stop the broker', async () => broker?.stop());
  }
  if (failed) process.exit(1);
}

let failed = false;

/** One clean-up step, bounded: a step that hangs is named and skipped, so the bench always ends. */
async function step(what: string, run: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), 30_000);
  });
  try {
    if ((await Promise.race([run(), timeout])) === 'timeout')
      say(`clean-up: ${what} did not finish within 30 s; skipped`);
  } catch (err) {
    say(`clean-up: ${what} failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

// A failure outside main's await chain (a client's background error) must end the bench with its message, not silently.
for (const event of ['unhandledRejection', 'uncaughtException'] as const) {
  process.on(event, (err: unknown) => {
    say(`bench failed (${event}): ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  });
}

main().then(
  // chdb and kafkajs keep handles open after close; the figures are out, so leave.
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
