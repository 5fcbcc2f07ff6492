/**
 * `hooklog backfill` end to end on the real broker, beside a running hooklog
 * whose live System Log poller polls the same org: the backfill process is
 * killed with SIGKILL twice in the middle of its window and run again; the
 * window ends complete and exactly once (each event of it appended by the
 * backfill once: no page stored twice, none lost), and the org's rate-limit
 * bucket never saw more than the configured share in any window, the live
 * poller and the backfill together.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { RateBudget } from '../../platform/identity/rate-limit.js';
import { kafkaBrokers } from '../kafka/inject.js';
import { history, logEvent, SimulatedOrg } from '../simulated-org/index.js';
import { hooklogArgs, REPO_DIR, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';

const DAY = 86_400_000;

describe('hooklog backfill (Kafka)', () => {
  let sim: SimulatedOrg | undefined;
  let daemon: Daemon | undefined;
  let live: NodeJS.Timeout | undefined;
  afterAll(async () => {
    clearInterval(live);
    if (daemon) await stopDaemon(daemon);
    await sim?.stop();
  });

  it('survives kill -9 twice mid-window: complete and exactly once, within the rate share beside the live poller', async () => {
    const limit = 8;
    const share = 0.5;
    sim = await SimulatedOrg.start({ rateLimit: { logs: { limit, windowMs: 1000 } } });
    const now = Date.now();
    sim.addLogEvents(history({ count: 24_000, days: 6, now: now - DAY, kind: 'log', seed: 5 }));
    const org = `bf-${Math.random().toString(36).slice(2, 8)}`;
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: {
        sink: { group: `sink-${org}`, max_batch_wait_ms: 200 },
        orgs: [
          {
            id: org,
            base_url: sim.url,
            auth: { ssws: { token: 'sim-token' } },
            request_timeout_ms: 5_000,
            system_log: { start: '2h', poll_interval_ms: 200, rate_limit_share: share },
          },
        ],
      },
    });
    const dataDir = (parse(readFileSync(inst.configPath, 'utf8')) as { data_dir: string }).data_dir;
    daemon = await startDaemon(['--config', inst.configPath]);
    let n = 0;
    live = setInterval(() => sim!.addLogEvents([{ event: logEvent(n++), published: Date.now() - 200 }]), 100);

    const since = new Date(now - 5 * DAY).toISOString();
    const until = new Date(now - 2 * DAY).toISOString();
    const inWindow = sim.logs.all().filter((e) => e.published >= Date.parse(since) && e.published < Date.parse(until));
    expect(inWindow.length).toBeGreaterThan(10_000);
    const backfillRequests = () => sim!.requests.filter((r) => r.params.until === until && r.status === 200).length;
    const run = () => {
      const child = spawn(
        process.execPath,
        hooklogArgs([
          'backfill',
          '--config',
          inst.configPath,
          '--org',
          org,
          '--source',
          'logs',
          '--since',
          since,
          '--until',
          until,
        ]),
        { cwd: REPO_DIR, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      return { child, out: () => out, exited };
    };

    // Two lives killed mid-window (after 3 and after 8 pages), then one to the end.
    for (const pages of [3, 8]) {
      const b = run();
      await waitFor(() => backfillRequests(), {
        until: (v) => v >= pages,
        what: `${pages} backfill pages`,
        timeoutMs: 60_000,
      });
      b.child.kill('SIGKILL');
      await b.exited;
    }
    expect(backfillRequests()).toBeLessThan(Math.ceil(inWindow.length / 1000));
    const last = run();
    const code = await last.exited;
    expect(code, last.out()).toBe(0);
    expect(last.out()).toMatch(/backfill complete: \d+ events/);
    process.stderr.write(`backfill output (last run, not a TTY):\n${last.out()}\n`);

    const q = async (sql: string) => (await queryViaAdminSocket(dataDir, sql))?.rows ?? [];
    const range = `org = '${org}' AND published >= parseDateTime64BestEffort('${since}', 3) AND published < parseDateTime64BestEffort('${until}', 3)`;
    await waitFor(async () => Number((await q(`SELECT count() AS n FROM events WHERE ${range}`))[0]?.n), {
      until: (v) => v === inWindow.length,
      what: `${inWindow.length} events of the window in ClickHouse`,
      timeoutMs: 60_000,
    });
    // Each batch's arrivals rows come with its events rows' insert (migration 032's view), as a part of their
    // own written after theirs: a read between the two sees the events alone, so wait for the arrivals too.
    await waitFor(
      async () =>
        Number((await q(`SELECT uniqExact(uuid) AS n FROM arrivals WHERE ${range} AND path = 'backfill'`))[0]?.n),
      { until: (v) => v >= inWindow.length, what: `${inWindow.length} backfill arrivals`, timeoutMs: 60_000 },
    );
    const stored = new Set((await q(`SELECT uuid FROM events WHERE ${range}`)).map((r) => String(r.uuid)));
    expect(inWindow.filter((e) => !stored.has(e.id))).toEqual([]);
    // Each event of the window appended by the backfill exactly once across the three lives.
    const copies = await q(
      `SELECT sum(copies) AS c, count() AS u FROM (SELECT uuid, sum(copies) AS copies FROM arrivals WHERE ${range} AND path = 'backfill' GROUP BY uuid)`,
    );
    expect(copies[0]).toEqual({ c: String(inWindow.length), u: String(inWindow.length) });

    // The bucket: never more than the share per window, live poller and backfill together; no 429, no violation.
    const allowed = new RateBudget({ share }).allowedPerWindow(limit);
    const perWindow = [...sim.buckets.logs!.usedPerWindow.values()];
    process.stderr.write(
      `backfill: ${backfillRequests()} backfill pages, ${sim.requests.length} requests in all, busiest window ${Math.max(...perWindow)} of ${allowed} allowed\n`,
    );
    expect(Math.max(...perWindow)).toBeLessThanOrEqual(allowed);
    expect(sim.buckets.logs!.served429).toBe(0);
    expect(sim.violations).toEqual([]);
    expect(sim.breaches).toEqual([]);
  }, 240_000);
});
