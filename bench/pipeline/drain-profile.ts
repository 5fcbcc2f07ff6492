/**
 * Where the sink's drain spends its CPU (not part of `npm test`; not a figure for BENCHMARKS.md):
 *
 *   KAFKA_BROKERS=… npx tsx bench/pipeline/drain-profile.ts [--events 20000] [--runs 2] [--profile DIR]
 *
 * Pre-fills one Kafka topic with N generated events (as run.ts does), then drains it with hooklog's
 * sink `--runs` times, each into a fresh database, and prints each drain's wall rate and events per
 * CPU-second of this process (Node and chdb's threads). With `--profile DIR`, each drain's main
 * thread is recorded with the V8 profiler (`DIR/drain-<run>.cpuprofile`, open in Chrome DevTools)
 * and its heaviest functions by self time are printed. Needs KAFKA_BROKERS.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../../platform/log.js';
import { openStore } from '../../platform/store/index.js';
import type { Topics } from '../../platform/stream/headers.js';
import { quietKafka } from '../../platform/stream/kafka/client.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { randomName } from '../../test/support/wait.js';
import { sinkSchema } from '../../consumers/clickhouse-sink/config.js';
import { buildWorkload } from './events.js';
import { deleteTopics, measureSinkDrain, prefill, type BenchContext } from './measure.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    runs: { type: 'string', default: '2' },
    profile: { type: 'string' },
  },
  strict: true,
});

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

/** The functions with the most samples of their own, as `share% name file:line`. */
function heaviest(profile: Profile, top = 25): string[] {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (const id of profile.samples) {
    const f = byId.get(id)!.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|wt\/[^/]+)\//, '')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  const total = profile.samples.length;
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, n]) => `${((100 * n) / total).toFixed(1).padStart(5)}% ${k}`);
}

async function main(): Promise<void> {
  const brokers = process.env.KAFKA_BROKERS;
  if (!brokers) throw new Error('KAFKA_BROKERS must name a running broker');
  const n = Number(args.events);
  const runs = Number(args.runs);
  const logger = createLogger({ level: process.env.HOOKLOG_LOG_LEVEL ?? 'warn', destination: process.stderr });
  const chdbDir = await mkdtemp(join(tmpdir(), 'hooklog-drain-profile-'));
  const admin = quietKafka({ brokers: brokers.split(','), clientId: 'hooklog-drain-profile' }).admin();
  await admin.connect();
  const anchor = openStore({ database: 'default', dataDir: chdbDir, logger });
  await anchor.ping();
  const kafka = await openKafkaStream({ brokers: brokers.split(','), clientId: randomName('drain-profile'), logger });
  const created: Topics[] = [];
  const session = new Session();
  session.connect();
  try {
    const ctx: BenchContext = {
      records: buildWorkload(n).records,
      chdbDir,
      brokers,
      admin,
      stallMs: 60_000,
      kafka,
      created,
      logger,
      appendBatch: 500,
      appendConcurrency: 4,
      partitions: 4,
      steadyWindow: [0.1, 0.9],
      batchRecords: sinkSchema.parse({}).max_batch_records,
    };
    const { topics } = await prefill(ctx);
    for (let run = 1; run <= runs; run++) {
      if (args.profile) {
        await session.post('Profiler.enable');
        await session.post('Profiler.start');
      }
      const m = await measureSinkDrain(ctx, topics);
      process.stdout.write(
        `drain ${run}: ${Math.round(m.rate)} ev/s, ${Math.round(m.perCpuSecond)} ev/CPU-s, ${m.inserts} inserts; ` +
          `start-up ${Math.round(m.phases!.startupMs)} ms, steady ${Math.round(m.phases!.steadyRate)} ev/s, ` +
          `${Math.round(m.phases!.steadyPerCpuSecond)} ev/CPU-s\n`,
      );
      if (args.profile) {
        const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
        await writeFile(join(args.profile, `drain-${run}.cpuprofile`), JSON.stringify(profile));
        process.stdout.write(`${heaviest(profile).join('\n')}\n`);
      }
    }
  } finally {
    session.disconnect();
    await kafka.close();
    await deleteTopics(admin, created);
    await admin.disconnect();
    await anchor.close();
    await rm(chdbDir, { recursive: true, force: true });
  }
}

await main();
