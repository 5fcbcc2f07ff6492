/**
 * Alerting throughput bench (not part of `npm test`):
 *
 *   npx tsx bench/alerting/run.ts [--events N] [--runs R] [--kafka] [--dedup-window-ms 600000]
 *   npm run bench:alerting -- --events 100000 --runs 5        (what BENCHMARKS.md quotes)
 *
 * Per run, a fresh logs topic is pre-filled with N events (workload.ts; untimed),
 * then read to the end by, one after another (order alternating per run):
 *   bare          a consume loop doing nothing with the records (the baseline)
 *   bare+parse    a consume loop that JSON-parses each record (what any consumer must do)
 *   alerting-50   the alerting consumer with 50 rules (27 Sigma + 23 hooklog rules from
 *                 consumers/alerting/content), checkpointing each batch atomically with its alerts
 * each in its own consumer group; a figure is N / (time from start to the last record handled).
 * Embedded log by default; --kafka uses KAFKA_BROKERS (a running broker).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { alertingSchema } from '../../consumers/alerting/config.js';
import { startAlerting } from '../../consumers/alerting/index.js';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { FIXTURES_DIR } from '../../test/fixtures/index.js';
import { CORPORA_DIR } from '../../test/support/corpus.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { formatTable, type Row } from '../pipeline/stats.js';
import { buildWorkload } from './workload.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
    kafka: { type: 'boolean', default: false },
    'dedup-window-ms': { type: 'string', default: '600000' },
  },
});
const N = Number(args.events);
const RUNS = Number(args.runs);
const log = silentLogger();
const PARTITIONS = 4;
// The Sigma corpus when it is beside the repo (27 Okta rules, as BENCHMARKS.md measured); otherwise the
// project's two fixture rules, with more of the hooklog content so the engine still holds about 50 rules.
const CORPUS_SIGMA = join(CORPORA_DIR, 'sigma');
const SIGMA = existsSync(CORPUS_SIGMA) ? CORPUS_SIGMA : join(FIXTURES_DIR, 'sigma');
const CONTENT = join(import.meta.dirname, '../../consumers/alerting/content/panther-okta.yaml');

async function bare(stream: Stream, topic: string, parse: boolean): Promise<number> {
  let seen = 0;
  const started = performance.now();
  const c = await stream.consume({
    topic,
    group: randomName('bare'),
    handler: async (b) => {
      if (parse) for (const r of b.records) JSON.parse(r.value.toString('utf8'));
      seen += b.records.length;
    },
  });
  await waitFor(() => seen, { until: (v) => v >= N, timeoutMs: 600_000, intervalMs: 5 });
  const ms = performance.now() - started;
  await c.stop();
  return (N / ms) * 1000;
}

async function alerting(stream: Stream, prefix: string): Promise<{ rate: number; alerts: number; rules: number }> {
  const config = alertingSchema.parse({
    group: randomName('alerting'),
    sigma_paths: [SIGMA],
    rule_files: [],
    clickhouse: false,
    rules: [],
    dedup_window_ms: Number(args['dedup-window-ms']),
  });
  // 27 Sigma rules + the first 23 hooklog rules of the Panther content = 50 (without the corpus: 2 + all 29).
  const { parse } = await import('yaml');
  const { readFileSync } = await import('node:fs');
  const rules = (parse(readFileSync(CONTENT, 'utf8')) as Record<string, unknown>[]).slice(
    0,
    SIGMA === CORPUS_SIGMA ? 23 : undefined,
  );
  const t = topicNames(prefix);
  const started = performance.now();
  const a = await startAlerting({
    config: { ...config, rules },
    stream,
    topicPrefix: prefix,
    partitions: PARTITIONS,
    logsTopic: t.logs,
    deadletterTopic: t.deadletter,
    logger: log,
  });
  await waitFor(() => a.counters.events, { until: (v) => v >= N, timeoutMs: 600_000, intervalMs: 5 });
  const ms = performance.now() - started;
  const out = { rate: (N / ms) * 1000, alerts: a.counters.alerts, rules: a.rules.length };
  await a.stop();
  return out;
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'hooklog-bench-alerting-'));
  const stream = args.kafka
    ? await openKafkaStream({
        brokers: (process.env['KAFKA_BROKERS'] ?? '127.0.0.1:39092').split(','),
        clientId: randomName('bench-alerting'),
        logger: log,
      })
    : await openEmbeddedStream({ dataDir: dir, logger: log });
  const records = buildWorkload(N);
  const rates: Record<string, number[]> = { bare: [], 'bare+parse': [], 'alerting-50': [] };
  try {
    for (let run = 0; run < RUNS; run++) {
      const prefix = randomName('ba');
      const t = topicNames(prefix);
      await stream.ensureTopics([
        { name: t.logs, partitions: PARTITIONS },
        { name: t.deadletter, partitions: 1 },
      ]);
      for (let i = 0; i < records.length; i += 5000) await stream.append(t.logs, records.slice(i, i + 5000));
      const order = run % 2 === 0 ? ['bare', 'bare+parse', 'alerting-50'] : ['alerting-50', 'bare+parse', 'bare'];
      for (const mode of order) {
        if (mode === 'alerting-50') {
          const r = await alerting(stream, prefix);
          rates[mode]!.push(r.rate);
          process.stderr.write(
            `run ${run + 1} ${mode}: ${Math.round(r.rate)} ev/s (${r.rules} rules, ${r.alerts} alerts)\n`,
          );
        } else {
          const r = await bare(stream, t.logs, mode === 'bare+parse');
          rates[mode]!.push(r);
          process.stderr.write(`run ${run + 1} ${mode}: ${Math.round(r)} ev/s\n`);
        }
      }
    }
  } finally {
    await stream.close();
    await rm(dir, { recursive: true, force: true });
  }
  const rows: Row[] = Object.entries(rates).map(([mode, r]) => ({ mode, rates: r, compare: true }));
  process.stdout.write(
    `\nalerting bench: ${N} events, ${RUNS} runs, ${args.kafka ? 'kafka' : 'embedded'} stream, ${PARTITIONS} partitions, ${cpus().length} cpus, load ${loadavg()[0]!.toFixed(2)}\n`,
  );
  process.stdout.write(formatTable(rows, ['bare', 'bare+parse']) + '\n');
}

await main();
