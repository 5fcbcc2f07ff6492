/**
 * `hooklog status` against a running hooklog (embedded log, chdb) with an
 * event hook and a polled org (the simulated org, System Log and legacy
 * Events): one line per org and source, through the admin socket, as JSON and
 * as a table. Each source's sink lag is read from the group that writes its
 * topic: the legacy events' lag once came from the events' group, which never
 * reads that topic, so it showed the topic's whole size.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { history, SimulatedOrg } from '../simulated-org/index.js';
import { runCli, startDaemon, stopDaemon, type Daemon } from '../support/cli.js';
import { postDelivery, writeTestConfig } from '../support/hooklog-config.js';
import { delivery } from '../fixtures/index.js';
import { seededRandom } from '../support/random.js';
import { waitFor } from '../support/wait.js';
import { event, uuid } from '../../consumers/clickhouse-sink/crash-replay.fixture.js';
import type { StatusLine } from '../../cli/status.js';

describe('hooklog status', () => {
  let sim: SimulatedOrg | undefined;
  let daemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await sim?.stop();
  });

  it('shows one line per org and source: last events, cursor age, lags, dead letters and refused hook deliveries', async () => {
    sim = await SimulatedOrg.start({});
    sim.addLogEvents(history({ count: 30, days: 1, now: Date.now(), kind: 'log', seed: 3 }));
    sim.addLegacyEvents(history({ count: 12, days: 1, now: Date.now(), kind: 'legacy', seed: 4 }));
    const inst = writeTestConfig({
      extra: {
        orgs: [
          {
            id: 'polled',
            base_url: sim.url,
            auth: { ssws: { token: 'sim-token' } },
            system_log: { start: '2d', poll_interval_ms: 200 },
            legacy_events: { enabled: true, start: '2d', poll_interval_ms: 200 },
          },
        ],
      },
    });
    daemon = await startDaemon(['--config', inst.configPath]);
    const rand = seededRandom(9);
    const events = Array.from(
      { length: 3 },
      (_, i) => JSON.parse(event(rand, inst.org, i, uuid(rand)).value.toString()) as object,
    );
    expect(
      await postDelivery(daemon.url, inst.hookId, delivery(inst.org, inst.hookId, [...events, { uuid: 'not-a-uuid' }])),
    ).toBe(204);

    const status = async () => {
      const r = await runCli(['--config', inst.configPath, 'status', '--format', 'json']);
      if (r.code !== 0) throw new Error(r.stderr);
      return JSON.parse(r.stdout) as StatusLine[];
    };
    const bothPaths = (s: StatusLine[]) => {
      const hook = s.find((l) => l.source === 'hook');
      const polled = s.find((l) => l.source === 'system-log');
      const legacy = s.find((l) => l.source === 'legacy-events');
      return Boolean(
        hook?.last_event_at &&
        polled?.last_event_at &&
        polled.cursor_age_s !== null &&
        legacy?.last_event_at &&
        legacy.sink_lag_records === 0 &&
        hook.hook_failures_1h === 1,
      );
    };
    const lines = await waitFor(status, { until: bothPaths, timeoutMs: 60_000, what: 'both paths in the status' });
    expect(lines.map((l) => `${l.org}/${l.source}`).sort()).toEqual([
      `${inst.org}/hook`,
      'polled/legacy-events',
      'polled/system-log',
    ]);
    const hook = lines.find((l) => l.source === 'hook')!;
    expect(Date.parse(hook.last_event_at!)).toBeGreaterThan(Date.now() - 120_000);
    expect(hook).toMatchObject({ cursor_age_s: null, poller_lag_s: null, dead_letters_1h: 1, hook_failures_1h: 1 });
    const polled = lines.find((l) => l.source === 'system-log')!;
    expect(polled.cursor_age_s).toBeLessThan(120);
    expect(polled.poller_lag_s).toBeGreaterThanOrEqual(0);
    expect(polled.poller_lag_s).toBeLessThan(2 * 86_400);
    expect(polled).toMatchObject({ dead_letters_1h: 0, hook_failures_1h: null });
    expect(polled.sink_lag_records).toBeGreaterThanOrEqual(0);

    const table = await runCli(['--config', inst.configPath, 'status']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/org\s+.*source\s+.*last_event_at/);
    expect(table.stdout).toContain('polled');
  }, 120_000);
});
