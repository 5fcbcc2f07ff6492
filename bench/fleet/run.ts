/**
 * Fleet bench (not part of `npm test`; needs a Kafka broker: KAFKA_BROKERS=host:port):
 *
 *   npm run build && KAFKA_BROKERS=127.0.0.1:9092 npx tsx bench/fleet/run.ts [--orgs 1000] [--runs 5] [--seconds 60]
 *   [--poll-interval-ms 10000]
 *
 * Real `hooklog start` processes against one simulated org server that
 * answers for every org (light traffic: a few live events a second over all
 * orgs). Per run:
 *   1. one instance polling all orgs: RSS, CPU, and every org's cursor age
 *      (how long since its position was last confirmed; from /metrics, sampled
 *      every 5 s) p99, against the poll interval;
 *   2. the same orgs over three instances: the same figures, then `kill -9`
 *      of one: the time until every org it polled is polled by another
 *      (poller hand-over), and the cursor-age p99 over the rest of the window;
 *      then SIGTERM of another: its hand-over time;
 *   3. time from `kill -9` to the first hook acknowledged (204) by a
 *      restarted instance, in Kafka and in embedded mode.
 * Prints each run to stderr and the medians (min, max) to stdout with the
 * machine's load average, before and after. Goals (issue 11): one instance
 * under 500 MB RSS with cursor-age p99 under twice the poll interval;
 * hand-over within 15 s of kill -9 and 3 s of SIGTERM; hooks within 5 s.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import { SimulatedOrg, logEvent } from '../../test/simulated-org/index.js';
import { delivery } from '../../test/fixtures/index.js';
import { postDelivery, writeTestConfig, type TestInstance } from '../../test/support/hooklog-config.js';
import { hookEvent, spawnHooklog, type Instance } from '../../test/support/instances.js';
import { waitFor } from '../../test/support/wait.js';
import { summarize } from '../pipeline/stats.js';
import { partitionFor } from '../../platform/stream/embedded/partitioner.js';

const { values: args } = parseArgs({
  options: {
    orgs: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '60' },
    'poll-interval-ms': { type: 'string', default: '10000' },
  },
  strict: true,
});
const int = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
};
const ORGS = int('orgs', args.orgs);
const RUNS = int('runs', args.runs);
const SECONDS = int('seconds', args.seconds);
const POLL_MS = int('poll-interval-ms', args['poll-interval-ms']);
const BROKERS = process.env.KAFKA_BROKERS;
if (!BROKERS) throw new Error('bench/fleet needs a Kafka broker: KAFKA_BROKERS=host:port');
// The instances run the compiled CLI, as `npm start` does: tsx's transpiler would add to their memory and CPU.
process.env.HOOKLOG_CLI ??= 'built';
if (process.env.HOOKLOG_CLI === 'built' && !existsSync(new URL('../../dist/hooklog.js', import.meta.url)))
  throw new Error('bench/fleet runs the built CLI: run `npm run build` first');
const say = (m: string) => process.stderr.write(`${m}\n`);
const out = (m: string) => process.stdout.write(`${m}\n`);
const PARTITIONS = 12;
const TICK_HZ = 100; // Linux USER_HZ: /proc/<pid>/stat times are in 1/100 s

/** RSS (MB) and CPU seconds used so far by a process, from /proc. */
function usage(pid: number): { rssMb: number; cpuS: number } {
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rssMb: rss, cpuS: (Number(f[11]) + Number(f[12])) / TICK_HZ };
}

/** Every org's cursor age (seconds) on one instance's /metrics. */
async function cursorAges(url: string): Promise<number[]> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^hooklog_poller_cursor_age_seconds\{[^}]*\} (\S+)$/gm)].map((m) => Number(m[1]));
}

function p99(values: readonly number[]): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.99))]!;
}

function fleetConfig(sim: SimulatedOrg, opts: { kafka: boolean }): TestInstance {
  const inst = writeTestConfig(opts.kafka ? { kafkaBrokers: BROKERS } : {});
  const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
  const orgs = Array.from({ length: ORGS }, (_, i) => ({
    id: `bench-org-${i}`,
    base_url: sim.url,
    auth: { ssws: { token: '${ORG_TOKEN}' } },
    system_log: { start: '1h', poll_interval_ms: POLL_MS },
  }));
  writeFileSync(
    inst.configPath,
    stringify({ ...base, log_level: 'info', stream: { ...base.stream, partitions: PARTITIONS }, orgs }),
  );
  return inst;
}

const pollersRoles = ['--roles', 'receivers,pollers'];

/** Samples RSS, CPU and cursor ages of the given instances for `ms`. */
async function observe(instances: Array<{ p: Instance; url: string }>, ms: number) {
  const startCpu = instances.map((i) => usage(i.p.child.pid!).cpuS);
  const ages: number[] = [];
  let rss = 0;
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 5_000)); // sampling period of the measurement
    for (const i of instances) ages.push(...(await cursorAges(i.url)));
    rss = Math.max(
      rss,
      instances.reduce((n, i) => n + usage(i.p.child.pid!).rssMb, 0),
    );
  }
  const cpu = instances.reduce((n, i, k) => n + usage(i.p.child.pid!).cpuS - startCpu[k]!, 0) / (ms / 1000);
  return { rssMb: rss, cpuCores: cpu, ageP99S: p99(ages) };
}

/** Cursor partitions an instance's pollers hold now, from its pollers_assigned / pollers_revoked lines. */
function held(p: Instance): Set<number> {
  const h = new Set<number>();
  for (const l of p.lines()) {
    if (l.msg === 'pollers_assigned') for (const x of l.partitions as number[]) h.add(x);
    if (l.msg === 'pollers_revoked') for (const x of l.partitions as number[]) h.delete(x);
  }
  return h;
}

/** Time from `since` until the survivors' pollers hold every partition `gone` held (their pollers start at once). */
async function handOver(gone: ReadonlySet<number>, survivors: readonly Instance[], since: number): Promise<number> {
  const at = await waitFor(
    () => {
      const taken = new Map<number, number>();
      for (const p of survivors) {
        for (const l of p.lines()) {
          const t = Date.parse(String(l.time));
          if (l.msg === 'pollers_assigned' && t >= since)
            for (const x of l.partitions as number[]) if (!taken.has(x)) taken.set(x, t);
        }
      }
      return [...gone].every((x) => taken.has(x)) ? Math.max(...[...gone].map((x) => taken.get(x)!)) : undefined;
    },
    {
      timeoutMs: 60_000,
      intervalMs: 20,
      what: 'the hand-over',
      seen: () => ({ gone: [...gone], held: survivors.map((p) => [...held(p)]) }),
    },
  );
  return at - since;
}

/** kill -9, restart at once, and time until the restarted instance acknowledges a hook. */
async function restartToHook(
  inst: TestInstance,
  p: Instance,
  roles: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ ms: number; next: Instance }> {
  const killedAt = Date.now();
  await p.kill('SIGKILL');
  const next = spawnHooklog('restarted', ['--config', inst.configPath, ...roles], env);
  const url = await next.address(30_000);
  const body = delivery(inst.org, inst.hookId, [hookEvent(0)]);
  await waitFor(async () => await postDelivery(url, inst.hookId, body).catch(() => 0), {
    until: (n) => n === 204,
    timeoutMs: 30_000,
    intervalMs: 50,
    what: 'a hook acknowledged',
  });
  return { ms: Date.now() - killedAt, next };
}

async function started(name: string, inst: TestInstance, roles: readonly string[], env: NodeJS.ProcessEnv) {
  const p = spawnHooklog(name, ['--config', inst.configPath, ...roles], env);
  const url = await p.address(120_000);
  await p.started(300_000);
  return { p, url };
}

async function oneRun(run: number, into: Map<string, number[]>) {
  const put = (k: string, v: number) => void (into.get(k) ?? into.set(k, []).get(k)!).push(v);
  const sim = await SimulatedOrg.start({
    auth: { ssws: ['tok-0', 'tok-1', 'tok-2'] },
    rateLimit: { logs: false, events: false },
  });
  const arrivals = setInterval(
    () => sim.addLogEvents(Array.from({ length: 5 }, (_, i) => ({ event: logEvent(i), published: Date.now() }))),
    1_000,
  );
  const procs: Instance[] = [];
  try {
    // 1. One instance, every org.
    const one = fleetConfig(sim, { kafka: true });
    const solo = await started('solo', one, pollersRoles, { ORG_TOKEN: 'tok-0' });
    procs.push(solo.p);
    const o1 = await observe([solo], SECONDS * 1000);
    put('1 instance: RSS MB', o1.rssMb);
    put('1 instance: CPU cores', o1.cpuCores);
    put('1 instance: cursor age p99 / poll interval', (o1.ageP99S * 1000) / POLL_MS);
    // 3. kill -9 → first hook of the restarted instance (Kafka).
    const k = await restartToHook(one, solo.p, pollersRoles, { ORG_TOKEN: 'tok-0' });
    procs.push(k.next);
    put('kill -9 → first hook, Kafka (ms)', k.ms);
    await k.next.kill('SIGTERM');

    // 2. Three instances, the same number of orgs (a fresh prefix: nothing owned yet).
    const three = fleetConfig(sim, { kafka: true });
    const fleet: Array<{ p: Instance; url: string }> = [];
    for (let i = 0; i < 3; i++) fleet.push(await started(`i${i}`, three, pollersRoles, { ORG_TOKEN: `tok-${i}` }));
    procs.push(...fleet.map((f) => f.p));
    const needed = new Set(
      Array.from({ length: ORGS }, (_, i) => partitionFor(`system-log:bench-org-${i}`, PARTITIONS)),
    );
    await waitFor(
      () => {
        const union = new Set(fleet.flatMap((f) => [...held(f.p)]));
        return (
          [...needed].every((x) => union.has(x)) &&
          fleet.every((f) => f.p.lines().some((l) => l.msg === 'pollers_assigned'))
        );
      },
      {
        timeoutMs: 60_000,
        what: 'the orgs spread over the three',
        seen: () => ({ needed: [...needed], held: fleet.map((f) => [...held(f.p)]) }),
      },
    );
    const o3 = await observe(fleet, SECONDS * 1000);
    put('3 instances: RSS MB (sum)', o3.rssMb);
    put('3 instances: CPU cores (sum)', o3.cpuCores);
    put('3 instances: cursor age p99 / poll interval', (o3.ageP99S * 1000) / POLL_MS);
    const gone0 = held(fleet[0]!.p);
    const killedAt = Date.now();
    await fleet[0]!.p.kill('SIGKILL');
    if (gone0.size > 0)
      put('poller hand-over after kill -9 (ms)', await handOver(gone0, [fleet[1]!.p, fleet[2]!.p], killedAt));
    const after = await observe(fleet.slice(1), SECONDS * 1000);
    put('after kill -9: cursor age p99 / poll interval', (after.ageP99S * 1000) / POLL_MS);
    const gone1 = held(fleet[1]!.p);
    const termAt = Date.now();
    await fleet[1]!.p.kill('SIGTERM');
    if (gone1.size > 0) put('poller hand-over after SIGTERM (ms)', await handOver(gone1, [fleet[2]!.p], termAt));
    await fleet[2]!.p.kill('SIGTERM');

    // 3. kill -9 → first hook of the restarted instance (embedded: the log's lock passes to it).
    const emb = writeTestConfig({});
    const e = await started('embedded', emb, ['--roles', 'receivers,sink'], {});
    procs.push(e.p);
    const ke = await restartToHook(emb, e.p, ['--roles', 'receivers,sink'], {});
    procs.push(ke.next);
    put('kill -9 → first hook, embedded (ms)', ke.ms);
    say(`run ${run}: ${[...into].map(([k2, v]) => `${k2} ${v.at(-1)!.toFixed(2)}`).join('; ')}`);
  } finally {
    clearInterval(arrivals);
    for (const p of procs) await p.kill('SIGKILL');
    await sim.stop();
  }
}

async function main(): Promise<void> {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  say(
    `bench/fleet: ${ORGS} orgs, poll interval ${POLL_MS} ms, ${SECONDS} s windows, ${RUNS} runs; load average ${load}; ${cpus().length} cpus`,
  );
  const figures = new Map<string, number[]>();
  for (let run = 1; run <= RUNS; run++) await oneRun(run, figures);
  out(`bench/fleet: ${ORGS} orgs, poll interval ${POLL_MS} ms, ${SECONDS} s windows, brokers ${BROKERS}`);
  out(
    `load average before: ${load}; after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${cpus().length} cpus`,
  );
  out('| figure | median | min | max | runs |');
  out('|---|---|---|---|---|');
  for (const [k, v] of figures) {
    const s = summarize(v);
    out(`| ${k} | ${s.median.toFixed(2)} | ${s.min.toFixed(2)} | ${s.max.toFixed(2)} | ${s.runs} |`);
  }
}

await main();
