/**
 * The watch, in-process against the simulated org with a real embedded
 * stream: gauges per hook, and a finding appended once per finding, the same event from every instance watching
 * the org (so the store and the alert fold them into one).
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
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
let silent: Server | undefined;
afterEach(async () => {
  for (const w of watches.splice(0)) await w.stop();
  silent?.closeAllConnections();
  silent?.close();
  silent = undefined;
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
    // Registered as apply would have, verified; the token hook not yet.
    const event = api.hooks.create('event', registrationBody(desiredHooks(config)[0]!));
    if (!('kind' in event) || event.kind !== 'event') throw new Error('not created');
    event.verificationStatus = 'VERIFIED';

    collector = await Collector.start(ts.stream, ts.topics.logs);
    const dataDir = mkdtempSync(join(tmpdir(), 'hook-watch-'));
    const start = () =>
      watches.push(
        startHookWatch({
          config,
          stream: ts!.stream,
          topic: ts!.topics.logs,
          logger: silentLogger(),
          intervalMs: 50,
          seenPath: join(dataDir, `seen-${watches.length === 2 ? 0 : watches.length}.json`),
        }),
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

    // The token hook, never registered (no apply yet), is no finding however many passes see it absent.
    const drifts = () =>
      collector!.values().filter((v) => v.eventType === 'hooklog.hook.drift') as Array<{
        uuid: string;
        outcome: { reason: string };
        target: Array<{ alternateId: string }>;
      }>;
    const settled = watches[0]!.passes;
    await waitFor(() => watches[0]!.passes, { until: (n) => n >= settled + 5, what: 'five more passes' });
    expect(drifts()).toEqual([]);

    // Applied, then deleted by hand: now it is missing, one event per watcher, one uuid.
    const token = api.hooks.create('inline', registrationBody(desiredHooks(config)[1]!));
    if (!('kind' in token)) throw new Error('not created');
    const tokenLabels = { org, kind: 'token', hook: 'tokens' };
    await waitFor(async () => await gaugeValue('hooklog_hook_registered', tokenLabels), {
      until: (n) => n === 1,
      what: 'the token hook registered',
    });
    const seenBoth = watches[1]!.passes;
    await waitFor(() => watches[1]!.passes, { until: (n) => n >= seenBoth + 2, what: 'the second watcher seeing it' });
    token.status = 'INACTIVE';
    expect(api.hooks.remove(token)).toBeNull();
    await waitFor(() => drifts().length, { until: (n) => n === 2, what: 'the missing token hook, from both watchers' });
    expect(new Set(drifts().map((d) => d.uuid)).size).toBe(1);
    expect(drifts()[0]).toMatchObject({ outcome: { reason: 'missing' }, target: [{ alternateId: 'tokens' }] });
    // Remembered across a restart: a watcher started now, with the same data_dir, finds it missing too.
    start();
    await waitFor(() => drifts().length, {
      until: (n) => n === 3,
      what: 'the missing token hook, from the restarted watcher',
    });
    expect(drifts()[2]).toMatchObject({ outcome: { reason: 'missing' } });

    // Deactivated by hand: seen, confirmed, appended once per watcher (three now) however many passes follow.
    event.status = 'INACTIVE';
    api.hooks.touch(event);
    await waitFor(async () => await gaugeValue('hooklog_hook_active', labels), {
      until: (n) => n === 0,
      what: 'active=0',
    });
    const deactivations = () => drifts().filter((d) => d.outcome.reason === 'deactivated');
    await waitFor(() => deactivations().length, { until: (n) => n === 3, what: 'the deactivation, from each watcher' });
    const passes = watches[2]!.passes;
    await waitFor(() => watches[2]!.passes, { until: (n) => n >= passes + 5, what: 'five more passes' });
    const deactivated = deactivations();
    expect(deactivated).toHaveLength(3);
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

  it('stops at once with a pass in flight: its read is aborted, not waited for (SIGTERM)', async () => {
    // An org that takes requests and never answers: the read would wait out request_timeout_ms, then retry.
    const arrived: string[] = [];
    silent = createServer((req) => arrived.push(`${req.method} ${req.url}`));
    await new Promise<void>((r) => silent!.listen(0, '127.0.0.1', r));
    ts = await openTestStream();
    const config = parseConfig(
      {
        hook_registration: { public_url: 'https://hooklog.example.com' },
        orgs: [
          {
            id: 'acme',
            base_url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
            auth: { ssws: { token: 'sim-token' } },
            request_timeout_ms: 20_000,
          },
        ],
        event_hooks: [
          { id: 'main', org: 'acme', auth: { secrets: [SECRET] }, register: { event_types: ['user.session.start'] } },
        ],
      },
      {},
    );
    const watch = startHookWatch({
      config,
      stream: ts.stream,
      topic: ts.topics.logs,
      logger: silentLogger(),
      intervalMs: 60_000,
    });
    await waitFor(() => arrived, { until: (a) => a.length >= 1, what: "the watch's read at the org" });
    const t0 = performance.now();
    await watch.stop();
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(watch.passes).toBe(1);
    expect(arrived).toEqual(['GET /api/v1/eventHooks']);
  }, 90_000);
});
