/**
 * The watch, in-process against the simulated org with a real embedded
 * stream: gauges per hook, and a finding appended once per finding, the same event from every instance watching
 * the org (so the store and the alert fold them into one).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { silentLogger } from '../../platform/log.js';
import { registry } from '../../platform/metrics.js';
import { Collector, openTestStream, type TestStream } from '../../test/simulated-org/harness.js';
import { HookManagementApi, SimulatedOrg } from '../../test/simulated-org/index.js';
import { waitFor } from '../../test/support/wait.js';
import { desiredHooks } from './desired.js';
import { registrationBody } from './service.js';
import { startHookWatch, type HookWatch } from './watch.js';

const SECRET = 'event-hook-secret-0123456789';

let sim: SimulatedOrg | undefined;
let ts: TestStream | undefined;
let collector: Collector | undefined;
const watches: HookWatch[] = [];
afterEach(async () => {
  for (const w of watches.splice(0)) await w.stop();
  await collector?.stop();
  await ts?.close();
  await sim?.stop();
});

async function gaugeValue(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const values = (await registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

describe('hook watch', () => {
  it('reports each hook, and appends a confirmed finding once, the same event from every watcher', async () => {
    // Two watchers at 50 ms read each hook family about 40 times a second: the simulated org's default bucket (100 a
    // minute, of which the management budget's share allows 29) would make a slow run wait out a minute's window.
    // This org's cannot be spent in a run.
    sim = await SimulatedOrg.start({ rateLimit: { management: { limit: 100_000, windowMs: 60_000 } } });
    const api = new HookManagementApi(sim);
    sim.use(api);
    ts = await openTestStream();
    const org = `watch-${Math.random().toString(36).slice(2, 8)}`;
    const config = parseConfig(
      {
        hook_registration: { public_url: 'https://hooklog.example.com' },
        orgs: [{ id: org, base_url: sim.url, auth: { ssws: { token: 'sim-token' } } }],
        event_hooks: [
          { id: 'main', org, auth: { secrets: [SECRET] }, register: { event_types: ['user.session.start'] } },
        ],
        token_hooks: [{ id: 'tokens', org, auth: { type: 'header', secrets: [SECRET] }, register: {} }],
      },
      {},
    );
    // Registered as apply would have, verified; the token hook never registered.
    const event = api.hooks.create('event', registrationBody(desiredHooks(config)[0]!));
    if (!('kind' in event) || event.kind !== 'event') throw new Error('not created');
    event.verificationStatus = 'VERIFIED';

    collector = await Collector.start(ts.stream, ts.topics.logs);
    const start = () =>
      watches.push(
        startHookWatch({ config, stream: ts!.stream, topic: ts!.topics.logs, logger: silentLogger(), intervalMs: 50 }),
      );
    start();
    start(); // a second instance watching the same org
    const labels = { org, kind: 'event', hook: 'main' };
    await waitFor(async () => await gaugeValue('hooklog_hook_verified', labels), {
      until: (n) => n === 1,
      what: 'verified=1',
    });
    expect(await gaugeValue('hooklog_hook_active', labels)).toBe(1);
    expect(await gaugeValue('hooklog_hook_matches_config', labels)).toBe(1);
    expect(await gaugeValue('hooklog_hook_registered', { org, kind: 'token', hook: 'tokens' })).toBe(0);

    // The missing token hook: one event per watcher, one uuid.
    const drifts = () =>
      collector!.values().filter((v) => v.eventType === 'hooklog.hook.drift') as Array<{
        uuid: string;
        outcome: { reason: string };
        target: Array<{ alternateId: string }>;
      }>;
    await waitFor(() => drifts().length, { until: (n) => n === 2, what: 'the missing token hook, from both watchers' });
    expect(new Set(drifts().map((d) => d.uuid)).size).toBe(1);
    expect(drifts()[0]).toMatchObject({ outcome: { reason: 'missing' }, target: [{ alternateId: 'tokens' }] });

    // Deactivated by hand: seen, confirmed, appended once per watcher however many passes follow.
    event.status = 'INACTIVE';
    api.hooks.touch(event);
    await waitFor(async () => await gaugeValue('hooklog_hook_active', labels), {
      until: (n) => n === 0,
      what: 'active=0',
    });
    const passes = watches[0]!.passes;
    await waitFor(() => watches[0]!.passes, { until: (n) => n >= passes + 5, what: 'five more passes' });
    const deactivated = drifts().filter((d) => d.outcome.reason === 'deactivated');
    expect(deactivated).toHaveLength(2);
    expect(new Set(deactivated.map((d) => d.uuid)).size).toBe(1);
    expect(sim.violations).toEqual([]);
  });

  it('a 429 whose Reset is 2 s away holds the watch until that Reset, not the rest of the window it saw before', async () => {
    // One window an hour: a watch waiting for the end of the window it saw before would stop for the rest of the run.
    sim = await SimulatedOrg.start({ rateLimit: { management: { limit: 100_000, windowMs: 3_600_000 } } });
    const api = new HookManagementApi(sim);
    sim.use(api);
    ts = await openTestStream();
    const org = `watch-${Math.random().toString(36).slice(2, 8)}`;
    const config = parseConfig(
      {
        hook_registration: { public_url: 'https://hooklog.example.com' },
        orgs: [{ id: org, base_url: sim.url, auth: { ssws: { token: 'sim-token' } } }],
        token_hooks: [{ id: 'tokens', org, auth: { type: 'header', secrets: [SECRET] }, register: {} }],
      },
      {},
    );
    const watch = startHookWatch({
      config,
      stream: ts.stream,
      topic: ts.topics.logs,
      logger: silentLogger(),
      intervalMs: 50,
    });
    watches.push(watch);
    await waitFor(() => watch.passes, { until: (n) => n >= 2, what: 'two passes' });
    api.faults.next({ kind: '429', reset: { inMs: 2_000 } });
    const limited = await waitFor(() => sim!.requests.find((r) => r.status === 429), { what: 'the 429' });
    const passes = watch.passes;
    await waitFor(() => watch.passes, {
      until: (n) => n >= passes + 3,
      what: 'three passes after the 429',
      timeoutMs: 10_000,
    });
    const resetMs = Math.ceil((limited.at + 2_000) / 1000) * 1000;
    const after = sim.requests.filter((r) => r.at > limited.at);
    expect(after[0]!.at).toBeGreaterThanOrEqual(resetMs);
    expect(after[0]!.at - resetMs).toBeLessThan(2_000);
    expect(sim.violations).toEqual([]);
  });
});
