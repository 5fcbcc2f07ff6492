/**
 * `hooklog status` against a running hooklog (embedded log, chdb) with an
 * event hook and a polled org (the simulated org, System Log and legacy
 * Events): one line per org and source, through the admin socket, as JSON and
 * as a table. Each source's sink lag is read from the group that writes its
 * topic: the legacy events' lag once came from the events' group, which never
 * reads that topic, so it showed the topic's whole size. A caught-up poller of
 * a quiet org shows a recent last success while its position ages; a stuck one
 * (every request answered 500) an old last success: both once showed only the
 * position's age, the same for either.
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
  let quietSim: SimulatedOrg | undefined;
  let quietDaemon: Daemon | undefined;
  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    await sim?.stop();
    if (quietDaemon) await stopDaemon(quietDaemon);
    await quietSim?.stop();
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
    expect(hook).toMatchObject({
      mode: null,
      cursor_age_s: null,
      poller_lag_s: null,
      dead_letters_1h: 1,
      hook_failures_1h: 1,
    });
    const polled = lines.find((l) => l.source === 'system-log')!;
    expect(polled.cursor_age_s).toBeLessThan(120);
    expect(polled.poller_lag_s).toBeGreaterThanOrEqual(0);
    expect(polled.poller_lag_s).toBeLessThan(2 * 86_400);
    expect(polled).toMatchObject({ mode: 'continuous', dead_letters_1h: 0, hook_failures_1h: null });
    expect(polled.sink_lag_records).toBeGreaterThanOrEqual(0);

    const table = await runCli(['--config', inst.configPath, 'status']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/org\s+.*source\s+.*last_event_at/);
    expect(table.stdout).toContain('polled');
  }, 120_000);

  it("tells a quiet org's poller (recent last success, position ageing) from a stuck one (old last success)", async () => {
    quietSim = await SimulatedOrg.start({});
    quietSim.addLegacyEvents(history({ count: 5, days: 1, now: Date.now(), kind: 'legacy', seed: 5 }));
    const inst = writeTestConfig({
      extra: {
        orgs: [
          {
            id: 'quiet',
            base_url: quietSim.url,
            auth: { ssws: { token: 'sim-token' } },
            system_log: { enabled: false },
            legacy_events: { enabled: true, start: '2d', poll_interval_ms: 200, success_record_interval_ms: 1_000 },
          },
        ],
      },
    });
    quietDaemon = await startDaemon(['--config', inst.configPath]);
    const legacyLine = async () => {
      const r = await runCli(['--config', inst.configPath, 'status', '--format', 'json']);
      if (r.code !== 0) throw new Error(r.stderr);
      const line = (JSON.parse(r.stdout) as StatusLine[]).find((l) => l.source === 'legacy-events');
      if (!line) throw new Error(`no legacy-events line in ${r.stdout}`);
      return line;
    };

    // Caught up on a quiet org: the position stays where it is, the poller keeps succeeding.
    const quiet = await waitFor(legacyLine, {
      until: (l) => (l.cursor_age_s ?? 0) >= 6,
      timeoutMs: 60_000,
      what: 'the position to be 6 s old',
    });
    expect(quiet.last_success_at).not.toBeNull();
    expect(quiet.last_success_age_s).toBeLessThanOrEqual(3);
    expect(Date.parse(quiet.checked_at)).toBeGreaterThan(Date.now() - 60_000);
    const sinceSuccessMs = Date.parse(quiet.checked_at) - Date.parse(quiet.last_success_at!);
    expect(quiet.last_success_age_s).toBe(Math.max(0, Math.round(sinceSuccessMs / 1000)));

    // Stuck: every request fails, so nothing succeeds any more and the last success ages with the position.
    quietSim.faults.random(1, [{ kind: 'status', status: 500 }]);
    const stuck = await waitFor(legacyLine, {
      until: (l) => (l.last_success_age_s ?? 0) >= 6,
      timeoutMs: 60_000,
      what: 'the last success to be 6 s old',
    });
    expect(stuck.cursor_age_s).toBeGreaterThanOrEqual(stuck.last_success_age_s!);
    expect(quietSim.faults.injected.get('status:500')).toBeGreaterThan(0);

    const table = await runCli(['--config', inst.configPath, 'status']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^Status checked at \d{4}-\d\d-\d\dT\S+Z\n/);
    expect(table.stdout).toMatch(/last_success_age_s\s+│ cursor_age_s/);
  }, 180_000);
});
