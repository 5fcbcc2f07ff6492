/**
 * Token hook latency bench (not part of `npm test`):
 *
 *   npx tsx bench/token-hook/run.ts [--rates 500,1000,2000] [--slices 5] [--slice-s 1] [--warmup-s 2]
 *   [--initial-warmup-s 10] [--runs 3] [--risk on] [--modes baseline,hooklog] [--stall-trace on]
 *   (npm run bench:token-hook -- …)
 *
 * The servers run what users run. At its start the bench bundles server.ts, and with it every hooklog module and
 * dependency it loads, into one ES module file (dist/bench/token-hook-server.js) by the CLI's own build
 * (cli/build.ts `bundle`: the options dist/hooklog.js is made with), and forks plain node on that file. Before, each
 * server ran the sources through tsx: ESM loader hooks resolving and transforming every module, some hundreds of
 * module files instead of one, code shaped by tsx's transform rather than by the build; none of which a user's
 * process pays, and which fell on the hooklog side more than on the bare handler's (the more code, the more loader),
 * so the ratios below measured the loader as well as hooklog. All four modes come from the one bundle, so both sides
 * of every ratio load the same way; the bare handler itself is unchanged (a node:http callback, no hooklog code on
 * its path). `SERVER_NODE_ARGS` still reach each server's node, which gets no tsx (its execArgv is set, not
 * inherited from this process).
 *
 * One server process per mode (server.ts), all up for the whole run:
 *   baseline  bare node:http answering the same JSON
 *   hooklog   the Koa app, 20 rules, a 10 000-row lookup table, audit trail on
 * and, with --modes baseline,decide,no-audit,hooklog, what hooklog's cost is made of:
 *   decide    bare node:http answering what `decide` makes of the body (the decision alone)
 *   no-audit  hooklog without the audit trail
 * so hooklog − decide is what remains per request besides the decision (auth, routing, the fast path,
 * the audit path, telemetry), and hooklog − no-audit the audit path's share of it.
 * Each server first gets an initial warm-up (JIT tiering, lazily loaded code,
 * first segment files: a freshly started process answers far slower than a
 * running one), then for each rate both are warmed up, then loaded open-loop from this process
 * (load.ts) in alternating slices — baseline, hooklog, hooklog, baseline, … —
 * (with more modes, each slice round visits them all, in an order that reverses every round)
 * so that whatever else the machine is doing falls on both alike; each
 * mode's latencies are pooled over its slices. `--risk on`: both servers
 * also hold 10 000 users' risk states and two risk rules come first (the
 * baseline answers what hooklog answers with them). One process loads while one
 * serves: two processes for two cores. Prints every run to stderr and, per
 * rate, the medians over runs, hooklog's beside the baseline's. `--stall-trace on` has every server print each
 * event-loop stall over 5 ms split into on CPU / waiting for a CPU / blocked (stall-trace.ts): a diagnostic
 * whose per-millisecond procfs read costs CPU, so a traced run's figures are not results.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BUSY_STEAL, describeSteal, stealMeter, stealPercent } from '../machine.js';
import { summarize } from '../pipeline/stats.js';
import { quantile, runLoad } from './load.js';
import type { ServerSample } from './sample.js';
import { bundle } from '../../cli/build.js';
import { BENCH_SECRET, RISK_USERS, TABLE_ROWS, benchRequest, writeTable } from './workload.js';

const { values: args } = parseArgs({
  options: {
    rates: { type: 'string', default: '500,1000,2000' },
    slices: { type: 'string', default: '5' },
    'slice-s': { type: 'string', default: '1' },
    'warmup-s': { type: 'string', default: '2' },
    'initial-warmup-s': { type: 'string', default: '10' },
    runs: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'baseline,hooklog' },
    risk: { type: 'string', default: 'off' },
    'stall-trace': { type: 'string', default: 'off' },
  },
  strict: true,
});
const RATES = args.rates.split(',').map(Number);
const SLICES = Number(args.slices);
const SLICE_MS = Number(args['slice-s']) * 1000;
const WARMUP_MS = Number(args['warmup-s']) * 1000;
const INITIAL_WARMUP_MS = Number(args['initial-warmup-s']) * 1000;
const RUNS = Number(args.runs);
if (
  RATES.some((r) => !Number.isInteger(r) || r < 1 || r > 20_000) ||
  !Number.isInteger(SLICES) ||
  SLICES < 1 ||
  !(SLICE_MS > 0) ||
  !(WARMUP_MS >= 0) ||
  !(INITIAL_WARMUP_MS >= 0) ||
  !Number.isInteger(RUNS) ||
  RUNS < 1 ||
  (args.risk !== 'on' && args.risk !== 'off') ||
  (args['stall-trace'] !== 'on' && args['stall-trace'] !== 'off')
) {
  throw new Error(
    '--rates are integers 1..20000, --slices >= 1, --slice-s > 0, --warmup-s >= 0, --runs >= 1, --risk on|off, --stall-trace on|off',
  );
}
const ALL_MODES = ['baseline', 'decide', 'no-audit', 'hooklog'] as const;
type Mode = (typeof ALL_MODES)[number];
const MODES = (args.modes ?? '').split(',') as Mode[];
if (!MODES.includes('baseline') || MODES.some((m) => !ALL_MODES.includes(m)) || new Set(MODES).size !== MODES.length)
  throw new Error(`--modes: baseline and any of ${ALL_MODES.slice(1).join(', ')}, each once`);
const say = (msg: string) => process.stderr.write(`${msg}\n`);

interface Server {
  readonly port: number;
  sample(): Promise<ServerSample>;
  stop(): Promise<void>;
}

const SERVER_SOURCE = fileURLToPath(new URL('./server.ts', import.meta.url));
/** Where the bench bundles server.ts (dist/ as the CLI: platform/assets.ts finds the package root above it). */
const SERVER_BUNDLE = fileURLToPath(new URL('../../dist/bench/token-hook-server.js', import.meta.url));

async function startServer(mode: Mode, dir: string, table: string, request: string): Promise<Server> {
  const child: ChildProcess = fork(
    SERVER_BUNDLE,
    [
      '--mode',
      mode,
      '--dir',
      join(dir, `${mode}-${Date.now()}`),
      '--table',
      table,
      '--request',
      request,
      '--risk',
      args.risk,
      '--stall-trace',
      args['stall-trace'],
    ],
    {
      // SERVER_NODE_ARGS (space-separated) go to every server's node, e.g. a CPU profile of each mode:
      // SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (written when the server exits).
      // Set, not inherited: this process runs under tsx, the servers must not.
      execArgv: (process.env.SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${mode} server did not start within 60 s`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      const m = /READY (\d+)/.exec(chunk.toString());
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return {
    port,
    sample: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as ServerSample));
        child.send('cpu');
      }),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** One answer, to check both modes answer the same bytes before measuring. */
async function probe(port: number, body: Buffer): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/hooks/token/bench`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: BENCH_SECRET },
    body,
    signal: AbortSignal.timeout(3000),
  });
  if (res.status !== 200) throw new Error(`probe answered ${res.status}`);
  return res.text();
}

interface Measurement {
  readonly throughput: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /**
   * Median of the per-slice p99s: on a shared host a slice the machine
   * stalled spoils the pooled p99; this shows the typical slice.
   */
  readonly sliceP99Ms: number;
  readonly cpuPerRequestUs: number;
  readonly lost: number;
  /** The server's GC pause time over the slices, per second of load, ms. */
  readonly gcMsPerS: number;
  /** The server's longest GC pause and longest event-loop stall during any slice, ms. */
  readonly gcMaxMs: number;
  readonly stallMaxMs: number;
}

interface Pool {
  lat: Float64Array[];
  ok: number;
  ms: number;
  cpuUs: number;
  lost: number;
  gcMs: number;
  gcMaxMs: number;
  stallMaxMs: number;
}

/** One rate of one run: warm-up, then SLICES alternating slices per mode, latencies pooled per mode. */
async function measureRate(
  servers: Partial<Record<Mode, Server>>,
  rate: number,
  body: Buffer,
  expectLength: number,
): Promise<Record<Mode, Measurement>> {
  const load = (mode: Mode, durationMs: number) =>
    runLoad({
      port: servers[mode]!.port,
      path: '/hooks/token/bench',
      body,
      rate,
      durationMs,
      expectLength,
      headers: { 'content-type': 'application/json', authorization: BENCH_SECRET },
    });
  for (const mode of MODES) if (WARMUP_MS > 0) await load(mode, WARMUP_MS);
  const pooled = Object.fromEntries(
    MODES.map((m) => [
      m,
      { lat: [] as Float64Array[], ok: 0, ms: 0, cpuUs: 0, lost: 0, gcMs: 0, gcMaxMs: 0, stallMaxMs: 0 },
    ]),
  ) as Record<Mode, Pool>;
  for (let slice = 0; slice < SLICES; slice++) {
    for (const mode of slice % 2 === 0 ? MODES : [...MODES].reverse()) {
      const before = await servers[mode]!.sample();
      const r = await load(mode, SLICE_MS);
      const p = pooled[mode];
      const after = await servers[mode]!.sample();
      p.cpuUs += after.cpuUs - before.cpuUs;
      p.gcMs += after.gcMs - before.gcMs;
      p.gcMaxMs = Math.max(p.gcMaxMs, after.gcMaxMs);
      p.stallMaxMs = Math.max(p.stallMaxMs, after.stallMaxMs);
      p.lat.push(r.latencies);
      p.ok += r.ok;
      p.ms += SLICE_MS; // answered per second of offered load (a backlog shows in latency and `lost`)
      p.lost += r.failed + r.refused;
    }
  }
  const result = {} as Record<Mode, Measurement>;
  for (const mode of MODES) {
    const p = pooled[mode];
    const all = new Float64Array(p.ok);
    let at = 0;
    for (const l of p.lat) {
      all.set(l, at);
      at += l.length;
    }
    all.sort();
    const sliceP99s = p.lat.map((l) => quantile(l.slice().sort(), 0.99));
    result[mode] = {
      throughput: (p.ok * 1000) / p.ms,
      p50Ms: quantile(all, 0.5),
      p99Ms: quantile(all, 0.99),
      maxMs: quantile(all, 1),
      sliceP99Ms: summarize(sliceP99s).median,
      cpuPerRequestUs: p.cpuUs / Math.max(1, p.ok),
      lost: p.lost,
      gcMsPerS: (p.gcMs * 1000) / p.ms,
      gcMaxMs: p.gcMaxMs,
      stallMaxMs: p.stallMaxMs,
    };
  }
  return result;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-bench-token-'));
  const table = writeTable(dir);
  const body = benchRequest();
  const request = join(dir, 'request.json');
  writeFileSync(request, body);
  const bundled = performance.now();
  await bundle(SERVER_SOURCE, SERVER_BUNDLE);
  say(
    `servers: ${relative(process.cwd(), SERVER_BUNDLE)}, bundled as the CLI is (cli/build.ts) in ${Math.round(performance.now() - bundled)} ms`,
  );
  const results = new Map<string, Measurement[]>();
  const steals: Array<number | undefined> = [];
  say(
    `token-hook bench: rates ${RATES.join(', ')} req/s, ${SLICES} alternating ${SLICE_MS / 1000} s slices per mode after ${WARMUP_MS / 1000} s warm-up (${INITIAL_WARMUP_MS / 1000} s at 1000 req/s after start), ${RUNS} runs; 20 rules${args.risk === 'on' ? ` + 2 risk rules over ${RISK_USERS} users` : ''}, ${TABLE_ROWS} lookup rows; ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  try {
    for (let run = 1; run <= RUNS; run++) {
      const servers: Partial<Record<Mode, Server>> = {};
      for (const mode of MODES) servers[mode] = await startServer(mode, dir, table, request);
      try {
        const answers = await Promise.all(MODES.map((m) => probe(servers[m]!.port, body)));
        if (answers.some((a) => a !== answers[0]))
          throw new Error(`the modes answer different bytes:\n${answers.join('\n')}`);
        if (INITIAL_WARMUP_MS > 0) {
          for (const mode of MODES) {
            await runLoad({
              port: servers[mode]!.port,
              path: '/hooks/token/bench',
              body,
              rate: 1000,
              durationMs: INITIAL_WARMUP_MS,
              expectLength: Buffer.byteLength(answers[0]!),
              headers: { 'content-type': 'application/json', authorization: BENCH_SECRET },
            });
          }
        }
        for (const rate of RATES) {
          const steal = stealMeter();
          const m = await measureRate(servers, rate, body, Buffer.byteLength(answers[0]!));
          const stole = steal.stop();
          steals.push(stole);
          for (const mode of MODES) {
            results.set(`${mode}@${rate}`, [...(results.get(`${mode}@${rate}`) ?? []), m[mode]]);
            const x = m[mode];
            say(
              `run ${run} ${mode.padEnd(8)} ${String(rate).padStart(5)} req/s: ${Math.round(x.throughput)} ok/s, p50 ${x.p50Ms.toFixed(2)} ms, p99 ${x.p99Ms.toFixed(2)} ms (slice median ${x.sliceP99Ms.toFixed(2)}), max ${x.maxMs.toFixed(1)} ms, ${Math.round(x.cpuPerRequestUs)} µs CPU/req, lost ${x.lost}; server: GC ${x.gcMsPerS.toFixed(1)} ms/s, longest GC ${x.gcMaxMs.toFixed(1)} ms, longest loop stall ${x.stallMaxMs.toFixed(1)} ms (load ${loadavg()[0]!.toFixed(2)}, ${describeSteal(stole)})`,
            );
          }
        }
      } finally {
        await Promise.all(MODES.map((m) => servers[m]!.stop()));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${formatTable(results)}\n`);
  const busy = steals.filter((x) => x !== undefined && x > BUSY_STEAL).length;
  process.stdout.write(
    `hypervisor steal per measured rate and run: ${steals.map(stealPercent).join(', ')}` +
      (busy > 0
        ? ` -- ${busy} of ${steals.length} above ${BUSY_STEAL * 100}%: taken on a busy machine, they do not count towards a goal\n`
        : '\n'),
  );
  if (MODES.length > 2) process.stdout.write(`\n${formatCosts(results)}\n`);
}

/** What hooklog's CPU per request is made of, by differences of the modes measured (medians over runs). */
function formatCosts(results: Map<string, Measurement[]>): string {
  const cpu = (mode: Mode, rate: number) =>
    MODES.includes(mode) ? summarize(results.get(`${mode}@${rate}`)!.map((m) => m.cpuPerRequestUs)).median : NaN;
  const lines = ['CPU µs per request: what hooklog pays beyond the bare handler, by part (medians over runs)'];
  for (const rate of RATES) {
    const [base, dec, noAudit, full] = (['baseline', 'decide', 'no-audit', 'hooklog'] as const).map((m) =>
      cpu(m, rate),
    );
    const part = (name: string, v: number) => (Number.isNaN(v) ? [] : [`${name} ${v.toFixed(0)}`]);
    lines.push(
      `  ${rate} req/s: ` +
        [
          ...part('bare handler', base!),
          ...part('decision (decide - baseline)', dec! - base!),
          ...part('beyond the decision (hooklog - decide)', full! - dec!),
          ...part('of which the audit path (hooklog - no-audit)', full! - noAudit!),
          ...part('hooklog', full!),
        ].join(', '),
    );
  }
  return lines.join('\n');
}

function formatTable(results: Map<string, Measurement[]>): string {
  const header = [
    'rate',
    'mode',
    'ok/s',
    'p50 ms',
    'p99 ms (min-max)',
    'slice p99 ms',
    'max ms',
    'CPU µs/req',
    'lost',
    'p99 vs baseline',
    'slice p99 vs baseline',
  ];
  const rows: string[][] = [];
  for (const rate of RATES) {
    const base = summarize(results.get(`baseline@${rate}`)!.map((m) => m.p99Ms)).median;
    const sliceBase = summarize(results.get(`baseline@${rate}`)!.map((m) => m.sliceP99Ms)).median;
    const versus = (v: number, b: number) => `${(v / b).toFixed(2)}x (${v >= b ? '+' : ''}${(v - b).toFixed(2)} ms)`;
    for (const mode of MODES) {
      const ms = results.get(`${mode}@${rate}`)!;
      const med = (f: (m: Measurement) => number) => summarize(ms.map(f));
      const p99 = med((m) => m.p99Ms);
      rows.push([
        String(rate),
        mode,
        med((m) => m.throughput).median.toFixed(0),
        med((m) => m.p50Ms).median.toFixed(2),
        `${p99.median.toFixed(2)} (${p99.min.toFixed(2)}-${p99.max.toFixed(2)})`,
        med((m) => m.sliceP99Ms).median.toFixed(2),
        med((m) => m.maxMs).median.toFixed(1),
        med((m) => m.cpuPerRequestUs).median.toFixed(0),
        String(ms.reduce((a, m) => a + m.lost, 0)),
        mode === 'baseline' ? '-' : versus(p99.median, base),
        mode === 'baseline' ? '-' : versus(med((m) => m.sliceP99Ms).median, sliceBase),
      ]);
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

await main();
