/**
 * Event-hook receiver bench (not part of `npm test`):
 *
 *   npx tsx bench/event-hooks/run.ts [--stream kafka|embedded] [--runs 3] [--cell-ms 2000]
 *        [--sizes 1,10,50] [--concurrency 1,4,16,64] [--rate 1000] [--rate-ms 4000]
 *   (npm run bench:event-hooks -- …)
 *
 * The receiver runs in a child process (server.ts: stream + topics + Koa app as
 * `hooklog start` builds them, no sink). Per run and per delivery size:
 *   fixed rate    `--rate` events/s offered open-loop for `--rate-ms`: p50/p99 acknowledgement latency
 *   receiver      closed loop at each concurrency for `--cell-ms`: events/s acknowledged, p50/p99
 *                 (the deliveries are built before the cell, each sent once)
 *   baseline      the same events appended straight to the stream (baseline.ts), same sizes and concurrency
 *   http floor    the same deliveries to a bare node:http handler in the receiver's process that appends their
 *                 events cut at known offsets and answers 204 (server.ts): what HTTP costs before any work
 * Receiver, floor and baseline cells rotate in order per run. The goal figure is CPU per event: the receiver
 * process's (read from its /metrics) against the appending process's in the baseline cells, each on its
 * own process, so the load generator and the broker (which share the cores) stay out of it and the
 * ratio holds on any machine. Uses KAFKA_BROKERS
 * when set, otherwise starts a broker of its own. Every run's cells go to
 * stderr; the summary (medians over runs, min-max) to stdout.
 * RECEIVER_NODE_ARGS (space-separated) go to the receiver's node, e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the receiver alone.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../platform/log.js';
import { renderMetrics } from '../../platform/metrics.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { startKafkaBroker, type KafkaBroker } from '../../test/kafka/broker.js';
import { validLogEvents } from '../../test/fixtures/index.js';
import { sample } from '../../receivers/event-hooks/testing.js';
import { closedLoopAppend, recordBatches } from './baseline.js';
import { DeliveryFactory, FLOOR_PATH, closedLoop, fixedRate, type CellResult, type Target } from './load.js';
import { int, median, ms, percentile, range, table } from './stats.js';

const { values: args } = parseArgs({
  options: {
    stream: { type: 'string', default: 'kafka' },
    runs: { type: 'string', default: '3' },
    'cell-ms': { type: 'string', default: '2000' },
    sizes: { type: 'string', default: '1,10,50' },
    concurrency: { type: 'string', default: '1,4,16,64' },
    rate: { type: 'string', default: '1000' },
    'rate-ms': { type: 'string', default: '4000' },
  },
  strict: true,
});
const list = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
const MODE = args.stream === 'embedded' ? 'embedded' : 'kafka';
const RUNS = list(args.runs)[0] ?? 3;
const CELL_MS = list(args['cell-ms'])[0] ?? 2000;
const SIZES = list(args.sizes);
const CONCURRENCY = list(args.concurrency);
const RATE = list(args.rate)[0] ?? 1000;
const RATE_MS = list(args['rate-ms'])[0] ?? 4000;
const SECRET = 'bench-secret-0123456789abcdef';
const ORG = 'bench-org';
const HOOK = 'bench';
const say = (m: string) => process.stderr.write(`${m}\n`);

interface Cell {
  r: CellResult;
  /** CPU-seconds of the process under test: the receiver, or the appending process for the baseline. */
  cpuSeconds: number;
  /** CPU-seconds of this process while it only generated load (receiver cells); 0 for baseline cells. */
  generatorSeconds: number;
  /** CPU-seconds of the whole machine (every process: broker, generator, receiver, the rest). */
  machineSeconds: number;
  /** Records per produce request of the process under test's appends (how well they coalesced). */
  recordsPerRequest: number;
}

/** A process's CPU-seconds and its appends' produce requests and records so far, from its metrics text. */
interface Meters {
  cpu: number;
  requests: number;
  records: number;
}
const metersOf = (text: string): Meters => ({
  cpu: sample(text, 'hooklog_process_cpu_seconds_total'),
  requests: sample(text, 'hooklog_kafka_produce_requests_total'),
  records: sample(text, 'hooklog_kafka_produced_records_total'),
});
const perRequest = (a: Meters, b: Meters) => (b.records - a.records) / Math.max(1, b.requests - a.requests);
/** This process's (the baseline's appender): its produce counters; its CPU is metered apart. */
const ownMeters = async () => metersOf((await renderMetrics()).body);

/**
 * Busy CPU-seconds of the whole machine so far (Linux /proc/stat; NaN elsewhere). With the load
 * generator and the broker on the same cores, the closed-loop ratio is a ratio of the machine's
 * CPU per event, so each cell records where that CPU went.
 */
function machineBusySeconds(): number {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0); // idle + iowait
    return (cpu.reduce((a, b) => a + b, 0) - idle) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/** Runs `work`, recording this process's and the machine's CPU over it. */
async function metered<T>(work: () => Promise<T>): Promise<{ value: T; ownSeconds: number; machineSeconds: number }> {
  const own = process.cpuUsage();
  const machine = machineBusySeconds();
  const value = await work();
  const used = process.cpuUsage(own);
  return { value, ownSeconds: (used.user + used.system) / 1e6, machineSeconds: machineBusySeconds() - machine };
}
const key = (kind: string, size: number, conc: number) => `${kind}/${size}/${conc}`;

async function startReceiver(config: Record<string, unknown>): Promise<{ url: string; stop: () => Promise<void> }> {
  const server = fileURLToPath(new URL('./server.ts', import.meta.url));
  const nodeArgs = (process.env.RECEIVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', server, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /\{"url":"([^"]+)"/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  return {
    url,
    stop: () =>
      new Promise((r) => {
        child.once('exit', () => r());
        child.kill('SIGTERM');
      }),
  };
}

async function receiverMeters(url: string): Promise<Meters> {
  return metersOf(await (await fetch(`${url}/metrics`)).text());
}

async function main(): Promise<void> {
  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-bench-hooks-'));
  let broker: KafkaBroker | null = null;
  let brokers = process.env.KAFKA_BROKERS ?? '';
  if (MODE === 'kafka' && !brokers) {
    say('starting a Kafka broker…');
    broker = await startKafkaBroker({ jvm: 'server' });
    brokers = broker.brokers;
  }
  const prefix = `bench-${Date.now().toString(36)}`;
  const receiver = await startReceiver({
    data_dir: join(dir, 'receiver'),
    log_level: 'warn',
    server: { host: '127.0.0.1', port: 0 },
    stream: {
      topic_prefix: prefix,
      partitions: 4,
      ...(MODE === 'kafka' ? { kafka: { brokers: brokers.split(','), client_id: `${prefix}-receiver` } } : {}),
    },
    event_hooks: [{ id: HOOK, org: ORG, auth: { header: 'authorization', secrets: [SECRET] } }],
  });
  const stream: Stream =
    MODE === 'kafka'
      ? await openKafkaStream({ brokers: brokers.split(','), clientId: `${prefix}-baseline`, logger })
      : await openEmbeddedStream({ dataDir: join(dir, 'baseline'), logger });
  const baselineTopic = `${prefix}.baseline`;
  await stream.ensureTopics([{ name: baselineTopic, partitions: 4 }]);
  const target: Target = { url: `${receiver.url}/hooks/events/${HOOK}`, header: 'authorization', secret: SECRET };
  const floor: Target = { ...target, url: `${receiver.url}${FLOOR_PATH}`, floor: true };
  const templates = validLogEvents();
  const factories = new Map(SIZES.map((s) => [s, new DeliveryFactory(templates, s, ORG, HOOK)]));
  const batches = new Map(
    SIZES.map((s) => [
      s,
      recordBatches(new DeliveryFactory(templates, s, ORG, HOOK), ORG, HOOK, Math.max(50, Math.ceil(5000 / s))),
    ]),
  );
  // Deliveries to have built before a closed-loop cell: half again what the fastest cell of that size
  // sent so far, at least 20,000 events a second's worth (the first cells).
  const fastest = new Map<number, number>();
  const ready = (size: number) =>
    Math.ceil((Math.max(20_000, 1.5 * (fastest.get(size) ?? 0)) * (CELL_MS / 1000)) / size);
  const cells = new Map<string, Cell[]>();
  const take = (k: string, c: Cell) => (cells.get(k) ?? cells.set(k, []).get(k)!).push(c);
  const line = (k: string, c: Cell) =>
    say(
      `  ${k.padEnd(16)} ${int(c.r.eventsPerSec).padStart(7)} ev/s  p50 ${ms(percentile(c.r.latencies, 50))} ms  p99 ${ms(percentile(c.r.latencies, 99))} ms  failures ${JSON.stringify(c.r.failures)}  cpu µs/ev: own ${us(c, c.cpuSeconds)} generator ${us(c, c.generatorSeconds)} machine ${us(c, c.machineSeconds)}`,
    );
  try {
    say(`${MODE} stream; ${cpus().length} CPUs; receiver ${receiver.url}; warming up…`);
    await closedLoop(target, factories.get(SIZES[0]!)!, 4, 1000);
    await closedLoop(floor, factories.get(SIZES[0]!)!, 4, 1000);
    await closedLoopAppend(stream, baselineTopic, batches.get(SIZES[0]!)!, 4, 1000);
    const loads: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      say(`run ${run}/${RUNS}`);
      for (const size of SIZES) {
        const f = factories.get(size)!;
        const m0 = await receiverMeters(receiver.url);
        const fr = await metered(() => fixedRate(target, f, RATE, RATE_MS));
        const m1 = await receiverMeters(receiver.url);
        const c: Cell = {
          r: fr.value,
          cpuSeconds: m1.cpu - m0.cpu,
          generatorSeconds: fr.ownSeconds,
          machineSeconds: fr.machineSeconds,
          recordsPerRequest: perRequest(m0, m1),
        };
        take(key('rate', size, 0), c);
        line(key('rate', size, 0), c);
        for (const conc of CONCURRENCY) {
          // Deliveries to `t`, the receiver's process metered (receiver and floor cells).
          const viaHttp = async (t: Target): Promise<Cell> => {
            f.fill(ready(size));
            const live = f.builtLive;
            const before = await receiverMeters(receiver.url);
            const m = await metered(() => closedLoop(t, f, conc, CELL_MS));
            const after = await receiverMeters(receiver.url);
            if (f.builtLive > live) say(`  (${f.builtLive - live} deliveries were built during the cell)`);
            fastest.set(size, Math.max(fastest.get(size) ?? 0, m.value.eventsPerSec));
            return {
              r: m.value,
              cpuSeconds: after.cpu - before.cpu,
              generatorSeconds: m.ownSeconds,
              machineSeconds: m.machineSeconds,
              recordsPerRequest: perRequest(before, after),
            };
          };
          const steps: Array<[string, () => Promise<Cell>]> = [
            [key('receiver', size, conc), () => viaHttp(target)],
            [key('floor', size, conc), () => viaHttp(floor)],
            [
              key('baseline', size, conc),
              async () => {
                const before = await ownMeters();
                const m = await metered(() =>
                  closedLoopAppend(stream, baselineTopic, batches.get(size)!, conc, CELL_MS),
                );
                return {
                  r: m.value,
                  cpuSeconds: m.ownSeconds,
                  generatorSeconds: 0,
                  machineSeconds: m.machineSeconds,
                  recordsPerRequest: perRequest(before, await ownMeters()),
                };
              },
            ],
          ];
          // Each kind of cell takes the first, second and third place in turn over the runs.
          for (let i = 0; i < (run - 1) % steps.length; i++) steps.push(steps.shift()!);
          for (const [k, measure] of steps) {
            const cell = await measure();
            take(k, cell);
            line(k, cell);
          }
        }
      }
      loads.push(loadavg()[0]!);
    }
    report(cells, loads);
  } finally {
    await receiver.stop();
    await stream.close();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU microseconds per event acknowledged in the cell. */
const eventsOf = (c: Cell) => (c.r.eventsPerSec * c.r.elapsedMs) / 1000;
const perEvent = (c: Cell, seconds: number) => (seconds * 1e6) / eventsOf(c);
const us = (c: Cell, seconds: number) => int(perEvent(c, seconds));

function report(cells: Map<string, Cell[]>, loads: number[]): void {
  const out = (t: string) => process.stdout.write(`${t}\n`);
  const get = (k: string) => cells.get(k) ?? [];
  const p = (cs: Cell[], q: number) => median(cs.map((c) => percentile(c.r.latencies, q)));
  const fails = (cs: Cell[]) => cs.reduce((n, c) => n + Object.values(c.r.failures).reduce((a, b) => a + b, 0), 0);
  const perCpu = (cs: Cell[]) => median(cs.map((c) => (c.r.eventsPerSec * c.r.elapsedMs) / 1000 / c.cpuSeconds));
  out(
    `\n${MODE} stream, ${cpus().length} CPUs, ${RUNS} runs, ${CELL_MS} ms per cell; 1-minute load average after each run: ${loads.map((l) => l.toFixed(2)).join(', ')}`,
  );
  out(
    `medians over runs [min-max]; latency = send to 204; ev/cpu-s = events per CPU-second of the receiver process (baseline: of the appending process)\n`,
  );
  out(`offered ${int(RATE)} events/s, open loop, ${RATE_MS} ms:`);
  out(
    table(
      ['events/delivery', 'achieved ev/s', 'p50 ms', 'p99 ms', 'non-204', 'ev/cpu-s'],
      SIZES.map((s) => {
        const cs = get(key('rate', s, 0));
        return [
          String(s),
          range(cs.map((c) => c.r.eventsPerSec)),
          ms(p(cs, 50)),
          ms(p(cs, 99)),
          String(fails(cs)),
          int(perCpu(cs)),
        ];
      }),
    ),
  );
  let best = 0;
  for (const s of SIZES) {
    out(`\n${s} event(s) per delivery, closed loop:`);
    out(
      table(
        [
          'concurrency',
          'receiver ev/s',
          'p50 ms',
          'p99 ms',
          'non-204',
          'ev/cpu-s',
          'baseline ev/s',
          'p50 ms',
          'p99 ms',
          'ev/cpu-s',
          'receiver/baseline',
        ],
        CONCURRENCY.map((c) => {
          const rc = get(key('receiver', s, c));
          const bc = get(key('baseline', s, c));
          const rr = median(rc.map((x) => x.r.eventsPerSec));
          const br = median(bc.map((x) => x.r.eventsPerSec));
          if (fails(rc) === 0) best = Math.max(best, rr);
          return [
            String(c),
            range(rc.map((x) => x.r.eventsPerSec)),
            ms(p(rc, 50)),
            ms(p(rc, 99)),
            String(fails(rc)),
            int(perCpu(rc)),
            range(bc.map((x) => x.r.eventsPerSec)),
            ms(p(bc, 50)),
            ms(p(bc, 99)),
            int(perCpu(bc)),
            `${(rr / br).toFixed(2)}x`,
          ];
        }),
      ),
    );
  }
  // Where the machine's CPU went per event, closed loop. The generator and the broker share the cores with
  // the receiver, so even a receiver costing no more than the baseline's appender is held below 1.0x by the
  // generator: `ceiling` is the ratio such a receiver would get, (baseline machine) / (baseline machine +
  // generator), when both are bound by the machine's CPU.
  out('\nCPU µs per event, closed loop (medians over runs):');
  const med = (cs: Cell[], f: (c: Cell) => number) => median(cs.map(f));
  out(
    table(
      [
        'events/delivery',
        'concurrency',
        'receiver',
        'generator',
        'rest',
        'machine',
        'http floor',
        'baseline appender',
        'rest',
        'machine',
        'ceiling',
      ],
      SIZES.flatMap((s) =>
        CONCURRENCY.map((conc) => {
          const rc = get(key('receiver', s, conc));
          const bc = get(key('baseline', s, conc));
          const rRecv = med(rc, (c) => perEvent(c, c.cpuSeconds));
          const rGen = med(rc, (c) => perEvent(c, c.generatorSeconds));
          const rMach = med(rc, (c) => perEvent(c, c.machineSeconds));
          const fc = get(key('floor', s, conc));
          const bApp = med(bc, (c) => perEvent(c, c.cpuSeconds));
          const bMach = med(bc, (c) => perEvent(c, c.machineSeconds));
          return [
            String(s),
            String(conc),
            int(rRecv),
            int(rGen),
            int(rMach - rRecv - rGen),
            int(rMach),
            int(med(fc, (c) => perEvent(c, c.cpuSeconds))),
            int(bApp),
            int(bMach - bApp),
            int(bMach),
            `${(bMach / (bMach + rGen)).toFixed(2)}x`,
          ];
        }),
      ),
    ),
  );
  // A produce request costs about the same whatever it carries (encoding, the codec's set-up, the round trip), so
  // a side whose appends coalesce into fewer requests pays less per event: the group commit (send-queue.ts) sends
  // whatever queued while the previous request was in flight.
  out("\nrecords per produce request, closed loop (medians over runs): how well each side's appends coalesced");
  out(
    table(
      ['events/delivery', 'concurrency', 'receiver', 'http floor', 'direct append'],
      SIZES.flatMap((s) =>
        CONCURRENCY.map((conc) => [
          String(s),
          String(conc),
          ...['receiver', 'floor', 'baseline'].map((k) =>
            med(get(key(k, s, conc)), (c) => c.recordsPerRequest).toFixed(1),
          ),
        ]),
      ),
    ),
  );
  // The figure that holds on any machine: CPU per event of the receiver process against CPU per event of
  // the process appending the same records straight to the stream, each measured on its own process (the
  // load generator, the broker and whatever else the machine runs excluded).
  out("\nreceiver CPU per event ÷ direct append CPU per event, closed loop (medians over runs of each cell's ratio):");
  const ratioOf = (a: string, b: string) => (s: number, conc: number) =>
    median(
      get(key(a, s, conc)).map((ac, i) => {
        const bc = get(key(b, s, conc))[i];
        return bc ? perEvent(ac, ac.cpuSeconds) / perEvent(bc, bc.cpuSeconds) : NaN;
      }),
    );
  const ratio = ratioOf('receiver', 'baseline');
  out(
    table(
      ['events/delivery', ...CONCURRENCY.map((c) => `concurrency ${c}`)],
      SIZES.map((s) => [String(s), ...CONCURRENCY.map((c) => `${ratio(s, c).toFixed(2)}x`)]),
    ),
  );
  // The same ratio in two factors: the floor's cells answer the same deliveries over the same HTTP and append the
  // same records, doing none of the receiver's own work.
  const floorFailures = SIZES.reduce(
    (n, s) => n + CONCURRENCY.reduce((m, c) => m + fails(get(key('floor', s, c))), 0),
    0,
  );
  const own = ratioOf('receiver', 'floor');
  const http = ratioOf('floor', 'baseline');
  out(
    "\nthe ratio in two factors (CPU per event, medians over runs of each cell's ratio): receiver ÷ HTTP floor " +
      "(hooklog's own work: auth, validation, dedupe, permits, telemetry) and HTTP floor ÷ direct append (what HTTP costs):",
  );
  out(
    table(
      ['events/delivery', ...CONCURRENCY.flatMap((c) => [`c${c} receiver/floor`, `c${c} floor/append`])],
      SIZES.map((s) => [
        String(s),
        ...CONCURRENCY.flatMap((c) => [`${own(s, c).toFixed(2)}x`, `${http(s, c).toFixed(2)}x`]),
      ]),
    ),
  );
  out(`(the floor's non-204 answers: ${floorFailures}; any would make its figures meaningless)`);
  for (const s of SIZES.filter((x) => x === 10 || x === 50)) {
    const loaded = CONCURRENCY.filter((c) => c >= 16);
    // Without a loaded cell there is nothing to judge (Math.max of nothing would read as met).
    if (loaded.length === 0) {
      out(`goal at ${s} events per delivery: not judged (no concurrency of 16 or more was run)`);
      continue;
    }
    const worst = Math.max(...loaded.map((c) => ratio(s, c)));
    out(
      `goal receiver CPU/event <= 1.3x a direct append's at ${s} events per delivery (concurrency ${loaded.join(', ')}): worst ${worst.toFixed(2)}x -> ${worst <= 1.3 ? 'met' : 'NOT met'}`,
    );
  }
  const worstP99AtRate = Math.max(...SIZES.map((s) => p(get(key('rate', s, 0)), 99)));
  out(
    `\ngoal p99 < 100 ms at ${int(RATE)} ev/s: worst p99 over delivery sizes ${ms(worstP99AtRate)} ms -> ${worstP99AtRate < 100 ? 'met' : 'NOT met'}`,
  );
  out(
    `goal >= 10,000 ev/s sustained: best closed-loop median without a single non-204 ${int(best)} ev/s -> ${best >= 10_000 ? 'met' : 'NOT met'}`,
  );
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
