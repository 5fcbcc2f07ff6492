/**
 * Reconcile mode end to end on the real broker: a running hooklog receives the
 * simulated org's event hook over HTTP (the hook loses a few percent of its
 * deliveries and the org logs an event_hook.delivery failure for each), and
 * polls the same org in reconcile mode. A second org with the same traffic is
 * polled in continuous mode by the same hooklog, for the request count.
 *
 * Every retained event ends in ClickHouse exactly once; `hooklog coverage`
 * shows the dropped share within one event of the truth; the built-in
 * lost-delivery alert fires once per loss; reconcile made fewer requests than
 * continuous mode over the same period; `hooklog status` shows the reconcile
 * watch's position and last success on the org's system-log line.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { queryViaAdminSocket } from '../../cli/admin-socket.js';
import { kafkaBrokers } from '../kafka/inject.js';
import { HookSender, logEvent, SimulatedOrg, type StoredEvent } from '../simulated-org/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { waitFor } from '../support/wait.js';
import type { StatusLine } from '../../cli/status.js';

const TYPES = ['user.session.start', 'user.authentication.sso'];
const RUN_MS = 20_000;

describe('reconcile mode end to end (Kafka)', () => {
  const sims: SimulatedOrg[] = [];
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await Promise.all(sims.map((s) => s.stop()));
  });

  it('hooks that lose deliveries plus reconcile: every event once, coverage exact, one alert per loss, fewer requests', async () => {
    // Buckets large enough that neither mode is held back by its budget: the request counts are each mode's own.
    const bucket = { rateLimit: { logs: { limit: 600, windowMs: 60_000 } } };
    const [simA, simB] = await Promise.all([SimulatedOrg.start(bucket), SimulatedOrg.start(bucket)]);
    sims.push(simA!, simB!);
    const continuousOrg = `cont-${Math.random().toString(36).slice(2, 8)}`;
    const inst = writeTestConfig({
      kafkaBrokers: kafkaBrokers(),
      extra: {
        alerting: {
          enabled: true,
          group: `alerting-${Math.random().toString(36).slice(2, 8)}`,
          max_batch_wait_ms: 100,
        },
      },
    });
    const org = inst.org;
    const cfgText = readFileSync(inst.configPath, 'utf8');
    const cfg = parse(cfgText) as Record<string, unknown> & { data_dir: string };
    const orgs = [
      {
        id: org,
        base_url: simA!.url,
        auth: { ssws: { token: 'sim-token' } },
        request_timeout_ms: 5_000,
        system_log: {
          mode: 'reconcile',
          start: '1m',
          rate_limit_share: 0.5,
          reconcile: {
            event_types: TYPES,
            delay_ms: 2_000,
            cadence_ms: 4_000,
            lost_delivery_interval_ms: 2_000,
            lost_delivery_lookback_ms: 60_000,
          },
        },
      },
      {
        id: continuousOrg,
        base_url: simB!.url,
        auth: { ssws: { token: 'sim-token' } },
        request_timeout_ms: 5_000,
        system_log: { start: '1m', poll_interval_ms: 500, rate_limit_share: 0.5 },
      },
    ];
    writeFileSync(inst.configPath, stringify({ ...cfg, orgs }));
    daemon = await startDaemon(['--config', inst.configPath]);
    const url = daemon.url;
    const hook = new HookSender(simA!, {
      hookId: 'whoE2E0001',
      types: TYPES,
      dropRate: 0.05,
      seed: 9,
      batch: 4,
      post: (env) => postDelivery(url, inst.hookId, env),
    });

    // The same traffic in both orgs for RUN_MS; the hook delivers org A's as it happens.
    const startReq = { a: simA!.requests.length, b: simB!.requests.length };
    const started = Date.now();
    let n = 0;
    const sent: Promise<void>[] = [];
    while (Date.now() - started < RUN_MS) {
      const t = Date.now();
      const batch = Array.from({ length: 8 }, (_, i) => ({
        event: { ...logEvent(n + i), eventType: TYPES[(n + i) % 2] },
        published: t - ((n + i) % 5) * 100,
      }));
      n += batch.length;
      const stored: StoredEvent[] = simA!.addLogEvents(batch);
      simB!.addLogEvents(batch.map((b) => ({ ...b, event: { ...b.event, uuid: crypto.randomUUID() } })));
      sent.push(hook.send(stored));
      await new Promise((r) => setTimeout(r, 250));
    }
    await Promise.all(sent);
    const periodMs = Date.now() - started;
    const requests = { reconcile: simA!.requests.length - startReq.a, continuous: simB!.requests.length - startReq.b };

    const q = async (sql: string) => (await queryViaAdminSocket(cfg.data_dir, sql))?.rows ?? [];
    const expected = simA!.retained(simA!.logs);
    await waitFor(async () => Number((await q(`SELECT count() AS n FROM events WHERE org = '${org}'`))[0]?.n), {
      until: (v) => v === expected.length,
      what: `${expected.length} events of org A`,
      timeoutMs: 60_000,
    });
    const stored = (await q(`SELECT uuid FROM events WHERE org = '${org}'`)).map((r) => String(r.uuid));
    expect(new Set(stored).size).toBe(stored.length);
    expect(new Set(stored)).toEqual(new Set(expected.map((e) => e.id)));

    // The coverage report, as a user runs it while hooklog runs.
    const since = new Date(started - 120_000).toISOString();
    const json = await runCli([
      'coverage',
      '--config',
      inst.configPath,
      '--org',
      org,
      '--since',
      since,
      '--format',
      'json',
    ]);
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as {
      totals: {
        log_only: number;
        hooks_only: number;
        both: number;
        events: number;
        lost_deliveries: number;
        hook_p50_ms: number;
      };
    };
    expect(Math.abs(report.totals.log_only - hook.lost.length)).toBeLessThanOrEqual(1);
    expect(report.totals.events).toBe(hook.delivered.length + hook.lost.length);
    expect(report.totals.lost_deliveries).toBe(hook.lossEvents.length);
    const table = await runCli(['coverage', '--config', inst.configPath, '--org', org, '--since', since]);
    process.stderr.write(`hooklog coverage:\n${table.stdout}\n`);

    // `hooklog status` shows the reconcile watch's position (`reconcile:<org>`) and last success on org A's
    // system-log line, labelled mode reconcile; it once read only `system-log:<org>` and showed none.
    const status = await runCli(['status', '--config', inst.configPath, '--format', 'json']);
    expect(status.code, status.stderr).toBe(0);
    const lines = JSON.parse(status.stdout) as StatusLine[];
    const watch = lines.find((l) => l.org === org && l.source === 'system-log');
    expect(watch).toMatchObject({ mode: 'reconcile' });
    expect(watch?.last_success_at).not.toBeNull();
    expect(watch?.last_success_age_s).toBeLessThan(60);
    expect(watch?.cursor_age_s).toBeLessThan(60);
    expect(watch?.poller_lag_s).toBeLessThan(120);
    expect(lines.find((l) => l.org === continuousOrg && l.source === 'system-log')).toMatchObject({
      mode: 'continuous',
    });
    const statusTable = await runCli(['status', '--config', inst.configPath]);
    expect(statusTable.stdout).toMatch(new RegExp(`${org}\\s+│ system-log\\s+│ reconcile `));

    // One alert per loss.
    await waitFor(
      async () =>
        Number(
          (
            await q(
              `SELECT count() AS n FROM alerts FINAL WHERE org = '${org}' AND rule_id = 'hooklog.hook.delivery.lost'`,
            )
          )[0]?.n,
        ),
      {
        until: (v) => v === hook.lossEvents.length,
        what: `${hook.lossEvents.length} lost-delivery alerts`,
        timeoutMs: 30_000,
      },
    );
    const alerted = (
      await q(`SELECT event_ids FROM alerts FINAL WHERE org = '${org}' AND rule_id = 'hooklog.hook.delivery.lost'`)
    ).flatMap((r) => r.event_ids as string[]);
    expect(alerted.sort()).toEqual([...hook.lossEvents].sort());

    process.stderr.write(
      `reconcile e2e: ${n} events per org over ${periodMs} ms; hook ${hook.deliveries} deliveries, ${hook.lossEvents.length} lost ` +
        `(${hook.lost.length} events, ${((hook.lost.length / (hook.lost.length + hook.delivered.length)) * 100).toFixed(1)}%); ` +
        `reported log_only ${report.totals.log_only}, both ${report.totals.both}; requests: reconcile ${requests.reconcile}, continuous ${requests.continuous}\n`,
    );
    expect(hook.lossEvents.length).toBeGreaterThan(0);
    expect(requests.reconcile).toBeLessThan(requests.continuous);
    expect(simA!.violations).toEqual([]);
    expect(simA!.breaches).toEqual([]);
  }, 180_000);
});
