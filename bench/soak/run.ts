/**
 * Soak bench (not part of `npm test`): hooklog run for a long time under chaos, then compared exactly.
 *
 *   npm run build && npx tsx bench/soak/run.ts [--minutes 60] [--sample-s 30] [--chaos on|off]
 *   [--kill-every-s 120-180] [--broker-restart-every-min 15]
 *   (npm run bench:soak -- …)
 *
 * A fleet of three real `hooklog start` processes (the built CLI) on a Kafka broker this bench starts (so it can
 * restart it), all with receivers, pollers and alerting; the first also runs the sink into embedded ClickHouse.
 * Two simulated orgs with a day of history and live System Log traffic (two events each every 500 ms), and hook
 * deliveries of five events every 100 ms sent round-robin to the live instances (a refused or failed delivery is
 * sent once more to the next, as the service retries). Chaos: every 2-3 minutes a random instance is killed with
 * SIGKILL or stopped with SIGTERM and started again; the broker is restarted every 15 minutes.
 *
 * Every `--sample-s`, per instance: RSS and heap used, event-loop delay p99 (prom-client's, from /metrics), open
 * file descriptors, the process's age; for the fleet: active ClickHouse parts and the files and bytes under the data
 * directories (the sink's ClickHouse, the audit spools). Printed as they are taken (stderr).
 *
 * At the end the traffic stops, the fleet drains, and the result is exact: every retained System Log event of both
 * orgs and every acknowledged hook event is in ClickHouse once (count FINAL; nothing missing, nothing extra), raw
 * rows equal the records on the logs topic (the sink wrote no record twice), and no polled event was appended twice.
 *
 * Memory growth (the issue's goal: under 5 MB an hour per instance after the first 10 minutes) is the slope of RSS
 * against the process's own age, over every sample taken at an age of 10 minutes or more (a process restarted by
 * the chaos starts from nothing again: its RSS over wall time is a saw, over its age a line if it leaks). With
 * `--chaos off` every process lives the whole run and the slope is over wall time after minute 10. Pooled over a
 * slot's processes, that slope also counts what a later process starts with (more history to read); so each process
 * that lived 10 minutes or more is reported too, over its own lifetime, with the slopes of heap used, heap total (V8's
 * reservation) and external memory (Buffers) beside RSS: growth that is in none of them is the allocator's.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { silentLogger } from '../../platform/log.js';
import { topicNames } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { delivery } from '../../test/fixtures/index.js';
import { addLive, orgsConfig, startOrgs, type FleetOrg } from '../../test/e2e/fleet.js';
import { startKafkaBroker, type KafkaBroker } from '../../test/kafka/broker.js';
import { Collector, duplicates } from '../../test/simulated-org/harness.js';
import { postDelivery, writeTestConfig } from '../../test/support/hooklog-config.js';
import { hookEvent, spawnHooklog, withOwnDataDir, type Instance } from '../../test/support/instances.js';
import { waitFor } from '../../test/support/wait.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    'sample-s': { type: 'string', default: '30' },
    chaos: { type: 'string', default: 'on' },
    'kill-every-s': { type: 'string', default: '120-180' },
    'broker-restart-every-min': { type: 'string', default: '15' },
  },
  strict: true,
});
const MINUTES = Number(args.minutes);
const SAMPLE_MS = Number(args['sample-s']) * 1000;
const CHAOS = args.chaos === 'on';
const [KILL_MIN_S, KILL_MAX_S] = (args['kill-every-s'] ?? '').split('-').map(Number) as [number, number];
const BROKER_RESTART_MS = Number(args['broker-restart-every-min']) * 60_000;
if (
  !(MINUTES > 0) ||
  !(SAMPLE_MS >= 1000) ||
  (args.chaos !== 'on' && args.chaos !== 'off') ||
  !(KILL_MIN_S > 0 && KILL_MAX_S >= KILL_MIN_S) ||
  !(BROKER_RESTART_MS > 0)
)
  throw new Error(
    '--minutes > 0, --sample-s >= 1, --chaos on|off, --kill-every-s MIN-MAX, --broker-restart-every-min > 0',
  );
process.env.HOOKLOG_CLI ??= 'built';
if (process.env.HOOKLOG_CLI === 'built' && !existsSync(new URL('../../dist/hooklog.js', import.meta.url)))
  throw new Error('bench/soak runs the built CLI: run `npm run build` first');

const say = (m: string) => process.stderr.write(`${m}\n`);
const out = (m: string) => process.stdout.write(`${m}\n`);
const PARTITIONS = 6;
const ROLES = 'receivers,pollers,alerting';
const GROWTH_AFTER_MS = 10 * 60_000;

interface Sample {
  readonly at: number;
  readonly slot: number;
  readonly pid: number;
  readonly ageMs: number;
  readonly rssMb: number;
  readonly heapMb: number | null;
  /** V8's heap as reserved (used or not) and the memory outside it (Buffers): with RSS, where growth sits. */
  readonly heapTotalMb: number | null;
  readonly externalMb: number | null;
  readonly loopP99Ms: number | null;
  readonly fds: number;
}

function rssMb(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

const metric = (text: string, name: string): number | null => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
};

/** Files and bytes under a directory (the data directories: chdb's parts, spools, sockets). */
function du(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      try {
        const s = statSync(p);
        if (s.isDirectory()) walk(p);
        else {
          files++;
          bytes += s.size;
        }
      } catch {
        // removed while we walked (a merge, a spool drained)
      }
    }
  };
  walk(dir);
  return { files, bytes };
}

/** Least-squares slope of y over x (per unit of x), or NaN with fewer than 3 points. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  if (points.length < 3) return NaN;
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? NaN : sxy / sxx;
}

async function main(): Promise<void> {
  say(
    `soak: ${MINUTES} min, chaos ${CHAOS ? `on (a kill or stop every ${KILL_MIN_S}-${KILL_MAX_S} s, broker restart every ${BROKER_RESTART_MS / 60_000} min)` : 'off'}; ${cpus().length} cores, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const broker: KafkaBroker = await startKafkaBroker({ jvm: 'server', startTimeoutMs: 180_000 });
  closers.push(() => broker.stop());
  const orgs: FleetOrg[] = await startOrgs(2, PARTITIONS, ['tok-0', 'tok-1', 'tok-2'], 500);
  closers.push(async () => void (await Promise.all(orgs.map((o) => o.sim.stop()))));
  const inst = writeTestConfig({ kafkaBrokers: broker.brokers });
  const base = parse(readFileSync(inst.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
  writeFileSync(
    inst.configPath,
    stringify({
      ...base,
      stream: {
        ...base.stream,
        partitions: PARTITIONS,
        kafka: { ...(base.stream!.kafka as object), session_timeout_ms: 6_000 },
      },
      orgs: orgsConfig(orgs, 1_000),
      alerting: {
        group: `alerting-${base.stream!.topic_prefix as string}`,
        rules: [
          {
            id: 'failed-sign-in',
            type: 'match',
            detection: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"',
            group_by: ['actor.alternateId'],
            dedup_period: '10m',
          },
        ],
      },
    }),
  );
  const topics = topicNames(base.stream!.topic_prefix as string);
  const sinkConfig = withOwnDataDir(inst.configPath, 'sink');
  const sinkDataDir = (parse(readFileSync(sinkConfig, 'utf8')) as { data_dir: string }).data_dir;
  const dataDirs = [sinkDataDir, (base as unknown as { data_dir: string }).data_dir];
  const sql = async (q: string): Promise<Array<Record<string, string>>> => {
    const answer = await queryViaAdminSocket(sinkDataDir, q);
    if (!answer) throw new Error("the sink's instance does not answer on its admin socket");
    return answer.rows as Array<Record<string, string>>;
  };

  const slots: Array<{ p: Instance; url: string | null; startedAt: number }> = [];
  closers.push(async () => void (await Promise.all(slots.map((s) => s.p.kill('SIGKILL')))));
  const spawnSlot = (i: number) =>
    spawnHooklog(
      `i${i}`,
      ['--config', i === 0 ? sinkConfig : inst.configPath, '--roles', i === 0 ? `${ROLES},sink` : ROLES],
      {
        ORG_TOKEN: `tok-${i}`,
      },
    );
  for (let i = 0; i < 3; i++) {
    const p = spawnSlot(i);
    slots.push({ p, url: await p.address(120_000), startedAt: Date.now() });
  }
  await Promise.all(slots.map((s) => s.p.started(120_000)));
  say('soak: fleet started');

  const acked = new Set<string>();
  let n = 0;
  let rr = 0;
  let refused = 0;
  let sending = true;
  const deliver = async () => {
    while (sending) {
      const events = Array.from({ length: 5 }, () => hookEvent(n++));
      const body = delivery(inst.org, inst.hookId, events);
      for (let attempt = 0; attempt < 2; attempt++) {
        const live = slots.filter((s) => s.url !== null);
        const t = live[rr++ % Math.max(1, live.length)];
        const status = t ? await postDelivery(t.url!, inst.hookId, body).catch(() => 0) : 0;
        if (status === 204) {
          for (const e of events) acked.add(e.uuid);
          break;
        }
        refused++;
      }
      await new Promise((r) => setTimeout(r, 100)); // the service's pace, not synchronisation
    }
  };
  const seq = { n: 0 };
  const arrivals = setInterval(() => addLive(orgs, 2, seq), 500);
  const sender = deliver();

  const started = Date.now();
  const endAt = started + MINUTES * 60_000;
  const samples: Sample[] = [];
  const chaosLog: string[] = [];
  let nextKill = started + (KILL_MIN_S + Math.random() * (KILL_MAX_S - KILL_MIN_S)) * 1000;
  let nextBrokerRestart = started + BROKER_RESTART_MS;
  let nextSample = started;
  out('minute,slot,pid,age_min,rss_mb,heap_mb,loop_p99_ms,fds,parts,data_files,data_mb,heap_total_mb,external_mb');
  while (Date.now() < endAt) {
    const now = Date.now();
    if (now >= nextSample) {
      nextSample += SAMPLE_MS;
      // null while the sink's instance is down.
      const parts = await sql("SELECT count() AS n FROM system.parts WHERE active AND database != 'system'").then(
        (rows) => Number(rows[0]?.n),
        () => null,
      );
      const files = dataDirs.map(du).reduce((a, b) => ({ files: a.files + b.files, bytes: a.bytes + b.bytes }));
      for (const [slot, s] of slots.entries()) {
        const pid = s.p.child.pid!;
        if (!s.p.running() || s.url === null) continue;
        let text = '';
        try {
          text = await (await fetch(`${s.url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
        } catch {
          // restarting
        }
        let fds: number;
        try {
          fds = readdirSync(`/proc/${pid}/fd`).length;
        } catch {
          continue; // it exited since
        }
        const heap = metric(text, 'hooklog_nodejs_heap_size_used_bytes');
        const loop = metric(text, 'hooklog_nodejs_eventloop_lag_p99_seconds');
        const heapTotal = metric(text, 'hooklog_nodejs_heap_size_total_bytes');
        const external = metric(text, 'hooklog_nodejs_external_memory_bytes');
        const sample: Sample = {
          at: now,
          slot,
          pid,
          ageMs: now - s.startedAt,
          rssMb: rssMb(pid),
          heapMb: heap === null ? null : heap / 1048576,
          heapTotalMb: heapTotal === null ? null : heapTotal / 1048576,
          externalMb: external === null ? null : external / 1048576,
          loopP99Ms: loop === null ? null : loop * 1000,
          fds,
        };
        samples.push(sample);
        out(
          [
            ((now - started) / 60_000).toFixed(1),
            slot,
            pid,
            (sample.ageMs / 60_000).toFixed(1),
            sample.rssMb.toFixed(1),
            sample.heapMb?.toFixed(1) ?? '',
            sample.loopP99Ms?.toFixed(1) ?? '',
            fds,
            parts ?? '',
            files.files,
            (files.bytes / 1048576).toFixed(1),
            sample.heapTotalMb?.toFixed(1) ?? '',
            sample.externalMb?.toFixed(1) ?? '',
          ].join(','),
        );
      }
    }
    if (CHAOS && now >= nextKill) {
      nextKill = now + (KILL_MIN_S + Math.random() * (KILL_MAX_S - KILL_MIN_S)) * 1000;
      const i = Math.floor(Math.random() * 3);
      const signal: NodeJS.Signals = Math.random() < 0.5 ? 'SIGKILL' : 'SIGTERM';
      const slot = slots[i]!;
      slot.url = null;
      await slot.p.kill(signal);
      const p = spawnSlot(i);
      const url = await p.address(120_000);
      slots[i] = { p, url, startedAt: Date.now() };
      chaosLog.push(`${((now - started) / 60_000).toFixed(1)} min: ${signal} i${i}`);
      say(`soak: ${chaosLog.at(-1)}`);
    }
    if (CHAOS && now >= nextBrokerRestart) {
      nextBrokerRestart = now + BROKER_RESTART_MS;
      await broker.restart();
      chaosLog.push(`${((now - started) / 60_000).toFixed(1)} min: broker restart`);
      say(`soak: ${chaosLog.at(-1)}`);
    }
    await new Promise((r) => setTimeout(r, 250)); // the scheduler's tick, not synchronisation
  }

  // Drain: no more traffic; everything acknowledged or retained lands once.
  sending = false;
  await sender;
  clearInterval(arrivals);
  say('soak: traffic stopped, draining');
  const expectPolled = orgs.reduce((k, o) => k + o.sim.retained(o.sim.logs).length, 0);
  // -1 while the sink's instance is restarting (the last chaos may have just hit it).
  const count = (where: string) => async () =>
    sql(`SELECT count() AS n FROM events FINAL WHERE ${where}`).then(
      (rows) => Number(rows[0]!.n),
      () => -1,
    );
  const polledIn = count(`org != '${inst.org}'`);
  const hooksIn = count(`org = '${inst.org}'`);
  await waitFor(polledIn, { until: (c) => c >= expectPolled, timeoutMs: 300_000, what: 'polled events landed' });
  await waitFor(hooksIn, { until: (c) => c >= acked.size, timeoutMs: 300_000, what: 'hook events landed' });

  let missing = 0;
  let extra = 0;
  for (const o of orgs) {
    const got = new Set((await sql(`SELECT uuid FROM events FINAL WHERE org = '${o.id}'`)).map((r) => r.uuid!));
    const want = new Set(o.sim.retained(o.sim.logs).map((e) => e.id));
    missing += [...want].filter((u) => !got.has(u)).length;
    extra += [...got].filter((u) => !want.has(u)).length;
  }
  const hookRows = new Set((await sql(`SELECT uuid FROM events FINAL WHERE org = '${inst.org}'`)).map((r) => r.uuid!));
  missing += [...acked].filter((u) => !hookRows.has(u)).length;
  const reader = await openKafkaStream({ brokers: [broker.brokers], clientId: 'soak-reader', logger: silentLogger() });
  const logs = await Collector.start(reader, topics.logs);
  const [raw] = await sql(`SELECT count() AS n FROM ${EVENTS_TABLE}`);
  await waitFor(() => logs.records.length, {
    until: (c) => c >= Number(raw!.n),
    timeoutMs: 120_000,
    what: 'the logs topic read',
  });
  const polledDup = duplicates(
    logs.records
      .filter((r) => r.headers['hooklog-source'] === 'system-log')
      .map((r) => JSON.parse(r.value.toString()).uuid as string),
  ).length;
  // Rows the sink wrote beyond the records on the topic: a batch inserted twice. Merges run (a soak must see its
  // parts as a user's store has them), and fold a hook event the service delivered twice into one row: fewer raw
  // rows than records is that, not a loss (the counts FINAL above are the loss check).
  const sinkDup = Math.max(0, Number(raw!.n) - logs.records.length);
  await logs.stop();
  await reader.close();

  for (const s of slots) await s.p.kill('SIGTERM');

  // Report.
  out('');
  out(
    `soak ${MINUTES} min, chaos ${CHAOS ? 'on' : 'off'}: ${acked.size} hook events acknowledged (${refused} deliveries refused or failed and sent again), ${expectPolled} System Log events retained`,
  );
  out(
    `exact: missing ${missing}, extra ${extra}, polled appended twice ${polledDup}, sink rows beyond the topic's records ${sinkDup} (raw rows ${raw!.n}, records ${logs.records.length})`,
  );
  for (let slot = 0; slot < 3; slot++) {
    const mine = samples.filter((s) => s.slot === slot);
    const old = CHAOS
      ? mine.filter((s) => s.ageMs >= GROWTH_AFTER_MS).map((s) => [s.ageMs / 3_600_000, s.rssMb] as const)
      : mine
          .filter((s) => s.at - started >= GROWTH_AFTER_MS)
          .map((s) => [(s.at - started) / 3_600_000, s.rssMb] as const);
    const loops = mine.map((s) => s.loopP99Ms).filter((v): v is number => v !== null);
    out(
      `i${slot}: RSS growth ${slope(old).toFixed(1)} MB/h over ${old.length} samples (${CHAOS ? 'by process age ≥ 10 min, pooled over the processes of the slot' : 'after minute 10'}), RSS max ${Math.max(...mine.map((s) => s.rssMb)).toFixed(0)} MB, heap max ${Math.max(...mine.map((s) => s.heapMb ?? 0)).toFixed(0)} MB, event-loop p99 max ${loops.length ? Math.max(...loops).toFixed(1) : '-'} ms, fds max ${Math.max(...mine.map((s) => s.fds))}`,
    );
  }
  // Per process, over its own lifetime: the pooled slope above mixes processes started at different points of the
  // run, so a process that starts bigger because the run has more history tilts it even when each process is flat
  // (or hides one that grows). Both are reported; neither replaces the other.
  for (const pid of [...new Set(samples.map((s) => s.pid))]) {
    const mine = samples.filter((s) => s.pid === pid);
    const old = mine.filter((s) => s.ageMs >= GROWTH_AFTER_MS);
    if (old.length < 3) continue;
    const first = old[0]!;
    const last = old.at(-1)!;
    const perHour = (pick: (s: Sample) => number | null) =>
      slope(old.flatMap((s) => (pick(s) === null ? [] : [[s.ageMs / 3_600_000, pick(s)!] as const]))).toFixed(1);
    out(
      `i${first.slot} pid ${pid}: age ${(first.ageMs / 60_000).toFixed(0)}-${(last.ageMs / 60_000).toFixed(0)} min (${old.length} samples): RSS ${first.rssMb.toFixed(0)} → ${last.rssMb.toFixed(0)} MB, ${perHour((s) => s.rssMb)} MB/h; heap used ${perHour((s) => s.heapMb)} MB/h, heap total ${perHour((s) => s.heapTotalMb)} MB/h, external ${perHour((s) => s.externalMb)} MB/h`,
    );
  }
  out(`chaos: ${chaosLog.length ? chaosLog.join('; ') : 'none'}`);
  out(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  if (missing || extra || polledDup || sinkDup) process.exitCode = 1;
}

/** What main started, stopped last first however it ends (a failed wait must not leave a fleet and a JVM behind). */
const closers: Array<() => Promise<void>> = [];
try {
  await main();
} finally {
  for (const close of closers.reverse()) await close().catch((err: unknown) => say(`soak: clean-up: ${String(err)}`));
}
