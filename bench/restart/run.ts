/**
 * Restart bench (not part of `npm test`; issue 38's "restart → first 204 < 1 s for every role mix, and no 204
 * slower than ack_timeout_ms during a restart under load"):
 *
 *   npm run build && npm run bench:restart -- [--runs 5] [--events 20000] [--senders 2] [--streams embedded,kafka]
 *   [--mixes all,receivers,receivers+sink,receivers+pollers+alerting]
 *
 * Kafka: KAFKA_BROKERS=host:port, else a broker is started (test/kafka/broker.ts). Each (stream, role mix) gets
 * a config of its own (data_dir, topics, database); every process runs embedded ClickHouse where its roles
 * need the store, as in the issue's fleet. Untimed set-up per (stream, mix): a first `hooklog start` (built
 * CLI, a fixed port) takes --events events in deliveries of 100 and, where it runs the sink, stores them.
 * Then per run, timed: hook load starts (--senders senders, each one delivery of one event at a time, 20 ms
 * apart, a 3 s time-out, as the service sends), the process is stopped (SIGTERM) and, once it has exited,
 * started again on the same port and data; the load goes on until 2 s after the new process logged
 * `hooklog started`. Figures per run:
 *   start → 204        from the new process's spawn to the end of the first 204 it answered
 *   SIGTERM → 204      from the stop signal to that 204 (includes the old process's ordered stop)
 *   slowest 204        the longest answer of any 204 from the stop signal to the end of the window
 *   late 204s          204s answered after server.ack_timeout_ms (2 s): must be 0
 *   503s, refused      what the load got meanwhile (503s carry Retry-After; refused: nothing listened)
 *   loop held          the new process's start_loop_busy_max_ms / start_loop_delay_max_ms (cli/loop-stalls.ts)
 * Prints each run to stderr and, per (stream, mix), medians and p95 (nearest rank) over --runs to stdout, with
 * the goals, the load average before and after and the hypervisor's steal (bench/machine.ts). Figures are only
 * valid on a machine doing nothing else.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import { delivery } from '../../test/fixtures/index.js';
import { startKafkaBroker, type KafkaBroker } from '../../test/kafka/broker.js';
import { startHookLoad, type Attempt } from '../../test/support/hook-load.js';
import { postDelivery, writeTestConfig, type TestInstance } from '../../test/support/hooklog-config.js';
import { hookEvent, spawnHooklog, type Instance } from '../../test/support/instances.js';
import { waitFor } from '../../test/support/wait.js';
import { freePort } from '../../test/e2e/hook-registration.js';
import { BUSY_STEAL, stealMeter } from '../machine.js';

const MIXES: Record<string, string> = {
  all: 'receivers,pollers,sink,alerting',
  receivers: 'receivers',
  'receivers+sink': 'receivers,sink',
  'receivers+pollers+alerting': 'receivers,pollers,alerting',
};

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    events: { type: 'string', default: '20000' },
    senders: { type: 'string', default: '2' },
    streams: { type: 'string', default: 'embedded,kafka' },
    mixes: { type: 'string', default: Object.keys(MIXES).join(',') },
  },
  strict: true,
});
const int = (name: string, v: string | undefined, min = 1) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${v}`);
  return n;
};
const RUNS = int('runs', args.runs);
const EVENTS = int('events', args.events, 0);
const SENDERS = int('senders', args.senders);
const STREAMS = args.streams.split(',').map((s) => {
  if (s !== 'embedded' && s !== 'kafka') throw new Error(`--streams: embedded or kafka, got ${s}`);
  return s;
});
const MIX_NAMES = args.mixes.split(',').map((m) => {
  if (!(m in MIXES)) throw new Error(`--mixes: one of ${Object.keys(MIXES).join(', ')}, got ${m}`);
  return m;
});
const ACK_TIMEOUT_MS = 2000;
const GOAL_FIRST_204_MS = 1000;
/** How long the load goes on after the new process has started: 204s answered then still count. */
const AFTER_START_MS = 2000;

// The instances run the compiled CLI, as `npm start` does: tsx's transpiler would add to their start.
process.env.HOOKLOG_CLI = 'built';
if (!existsSync(new URL('../../dist/hooklog.js', import.meta.url)))
  throw new Error('bench/restart runs the built CLI: run `npm run build` first');
const say = (m: string) => process.stderr.write(`${m}\n`);

interface RunFigures {
  readonly startTo204: number;
  readonly termTo204: number;
  readonly slowest204: number;
  readonly late204: number;
  readonly n503: number;
  readonly refused: number;
  readonly other: number;
  readonly busy: number;
  readonly delay: number;
}

/** Nearest-rank percentile of the finite values. */
function pct(values: readonly number[], p: number): number {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

function setPort(configPath: string, port: number): void {
  const config = parse(readFileSync(configPath, 'utf8')) as { server: Record<string, unknown> };
  writeFileSync(configPath, stringify({ ...config, server: { ...config.server, port }, log_level: 'info' }));
}

async function preload(url: string, inst: TestInstance): Promise<void> {
  for (let sent = 0; sent < EVENTS; sent += 100) {
    const events = Array.from({ length: Math.min(100, EVENTS - sent) }, (_, i) => hookEvent(sent + i));
    const body = delivery(inst.org, inst.hookId, events);
    // As the service does, a 503 is retried (a busy broker); untimed set-up.
    let status = 0;
    for (let attempt = 0; attempt < 5 && status !== 204; attempt++)
      status = await postDelivery(url, inst.hookId, body).catch(() => 0);
    if (status !== 204) throw new Error(`preload: a delivery got ${status} five times`);
  }
}

async function oneRun(
  name: string,
  args_: string[],
  url: string,
  inst: TestInstance,
  running: Instance,
): Promise<{ next: Instance; figures: RunFigures }> {
  const load = startHookLoad({ url: () => url, hookId: inst.hookId, org: inst.org, senders: SENDERS });
  // A little load before the stop, so the stop happens with deliveries in flight.
  await waitFor(() => load.attempts.filter((a) => a.outcome === 204).length >= 5 || undefined, {
    timeoutMs: 30_000,
    what: 'load acknowledged before the stop',
    seen: () => load.attempts.slice(-5),
  });
  const termAt = load.now();
  await running.kill('SIGTERM');
  const spawnAt = load.now();
  const next = spawnHooklog(name, args_);
  try {
    await next.started(120_000);
    // The measuring window's end, not a synchronisation: 204s answered in it count.
    await new Promise((r) => setTimeout(r, AFTER_START_MS));
  } finally {
    await load.stop();
  }
  const window: readonly Attempt[] = load.attempts.filter((a) => a.sentMs + a.ms >= termAt);
  const acked = window.filter((a) => a.outcome === 204);
  const first = acked
    .filter((a) => a.sentMs >= spawnAt)
    .map((a) => a.sentMs + a.ms)
    .sort((a, b) => a - b)[0];
  const line = next.lines().find((l) => l.msg === 'hooklog started') ?? {};
  return {
    next,
    figures: {
      startTo204: first === undefined ? NaN : first - spawnAt,
      termTo204: first === undefined ? NaN : first - termAt,
      slowest204: Math.max(0, ...acked.map((a) => a.ms)),
      late204: acked.filter((a) => a.ms > ACK_TIMEOUT_MS).length,
      n503: window.filter((a) => a.outcome === 503).length,
      refused: window.filter((a) => a.outcome === 'refused').length,
      other: window.filter((a) => a.outcome !== 204 && a.outcome !== 503 && a.outcome !== 'refused').length,
      busy: Number(line.start_loop_busy_max_ms ?? NaN),
      delay: Number(line.start_loop_delay_max_ms ?? NaN),
    },
  };
}

async function main(): Promise<void> {
  const before = loadavg();
  const steal = stealMeter();
  let broker: KafkaBroker | null = null;
  let brokers = process.env.KAFKA_BROKERS ?? '';
  if (STREAMS.includes('kafka') && !brokers) {
    say('starting a Kafka broker…');
    broker = await startKafkaBroker({ jvm: 'server' });
    brokers = broker.brokers;
  }
  const rows: string[] = [];
  try {
    for (const stream of STREAMS)
      for (const mix of MIX_NAMES) {
        const inst = writeTestConfig(stream === 'kafka' ? { kafkaBrokers: brokers } : {});
        const port = await freePort();
        setPort(inst.configPath, port);
        const url = `http://127.0.0.1:${port}`;
        const procArgs = ['--config', inst.configPath, '--roles', MIXES[mix]!];
        let running = spawnHooklog(`${stream}/${mix}`, procArgs);
        try {
          await running.started(120_000);
          await preload(url, inst);
          const runs: RunFigures[] = [];
          for (let r = 0; r < RUNS; r++) {
            const { next, figures } = await oneRun(`${stream}/${mix}#${r + 1}`, procArgs, url, inst, running);
            running = next;
            runs.push(figures);
            say(`${stream} ${mix} run ${r + 1}: ${JSON.stringify(figures)}`);
          }
          const col = (f: keyof RunFigures) => runs.map((x) => x[f]);
          const firstMs = col('startTo204');
          const late = col('late204').reduce((a, b) => a + b, 0);
          const slowest = Math.max(...col('slowest204'));
          rows.push(
            [
              stream.padEnd(8),
              mix.padEnd(26),
              `${pct(firstMs, 50).toFixed(0)} / ${pct(firstMs, 95).toFixed(0)}`.padStart(12),
              `${pct(col('termTo204'), 50).toFixed(0)} / ${pct(col('termTo204'), 95).toFixed(0)}`.padStart(12),
              slowest.toFixed(0).padStart(8),
              String(late).padStart(5),
              String(col('n503').reduce((a, b) => a + b, 0)).padStart(5),
              String(col('refused').reduce((a, b) => a + b, 0)).padStart(7),
              `${pct(col('busy'), 50)} / ${Math.max(...col('busy'))}`.padStart(9),
              `${pct(col('delay'), 50)} / ${Math.max(...col('delay'))}`.padStart(11),
              pct(firstMs, 95) < GOAL_FIRST_204_MS && late === 0 && slowest <= ACK_TIMEOUT_MS ? 'met' : 'NOT met',
            ].join('  '),
          );
        } finally {
          await running.kill('SIGTERM');
        }
      }
  } finally {
    await broker?.stop();
  }
  const stolen = steal.stop();
  const after = loadavg();
  process.stdout.write(
    [
      `restart bench: ${RUNS} run(s) per row, ${EVENTS} events stored before, ${SENDERS} senders; ms; median / p95`,
      `machine: ${cpus().length} cores, load ${before[0]!.toFixed(2)} before, ${after[0]!.toFixed(2)} after; steal ${
        stolen === undefined ? 'n/a' : `${(stolen * 100).toFixed(1)}%${stolen > BUSY_STEAL ? ' (busy: not valid)' : ''}`
      }`,
      `goals: start → 204 p95 < ${GOAL_FIRST_204_MS} ms; no 204 slower than ack_timeout_ms (${ACK_TIMEOUT_MS} ms)`,
      [
        'stream  ',
        'mix'.padEnd(26),
        'start→204'.padStart(12),
        'SIGTERM→204'.padStart(12),
        'slowest'.padStart(8),
        ' late',
        ' 503s',
        'refused',
        'busy ms'.padStart(9),
        'delay ms'.padStart(11),
        'goal',
      ].join('  '),
      ...rows,
      '',
    ].join('\n'),
  );
}

await main();
