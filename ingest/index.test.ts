/**
 * Many orgs in one process: one p-queue slot for all of them, one failing org
 * (refused credentials, a server that only errs) never stalls a healthy one;
 * health per org as metrics, including the silent-org signal.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { registry } from '../platform/metrics.js';
import {
  capturingLogger,
  Collector,
  duplicates,
  FAST_POLICIES,
  openTestStream,
  orgConfig,
  type TestStream,
} from '../test/simulated-org/harness.js';
import { history, logEvent, SimulatedOrg } from '../test/simulated-org/index.js';
import { waitFor } from '../test/support/wait.js';
import { startIngest, type Ingest } from './index.js';

async function metricValue(name: string, org: string): Promise<number | undefined> {
  const m = (await registry.getSingleMetric(name)?.get())?.values.find((v) => v.labels.org === org);
  return m?.value;
}

describe('ingest: many orgs', () => {
  let ts: TestStream | undefined;
  let ingest: Ingest | undefined;
  const sims: SimulatedOrg[] = [];
  let collector: Collector | undefined;
  afterEach(async () => {
    await ingest?.stop();
    await collector?.stop();
    await Promise.all(sims.splice(0).map((s) => s.stop()));
    await ts?.close();
  });

  it('a failing org never stalls a healthy one, even with a single request slot', async () => {
    ts = await openTestStream();
    collector = await Collector.start(ts.stream, ts.topics.logs);
    const [healthy, refused, broken] = await Promise.all(
      [1, 2, 3].map(() => SimulatedOrg.start({ rateLimit: { logs: false } })),
    );
    sims.push(healthy!, refused!, broken!);
    healthy!.addLogEvents(history({ count: 4_000, days: 3, now: Date.now(), kind: 'log' }));
    broken!.addLogEvents(history({ count: 100, days: 3, now: Date.now(), kind: 'log' }));
    broken!.faults.random(1, [
      { kind: 'status', status: 500, errorCode: 'E0000009' },
      { kind: 'status', status: 502 },
    ]);
    const a = orgConfig(healthy!, { id: 'healthy', system_log: { start: '5d', poll_interval_ms: 200 } });
    const b = orgConfig(refused!, {
      id: 'refused',
      auth: { ssws: { token: 'wrong-token' } },
      system_log: { poll_interval_ms: 200 },
    });
    const c = orgConfig(broken!, { id: 'broken', system_log: { poll_interval_ms: 200 } });
    const { logger, lines } = capturingLogger();
    ingest = await startIngest({
      orgs: [b, c, a],
      stream: ts.stream,
      topics: ts.topics,
      logger,
      policies: FAST_POLICIES,
      maxConcurrentRequests: 1,
    });

    await waitFor(() => collector!.records.length, {
      until: (n) => n >= 4_000,
      what: "the healthy org's events",
      timeoutMs: 20_000,
    });
    await waitFor(() => refused!.requests.length >= 2 && broken!.requests.length >= 5, {
      what: 'the failing orgs to keep retrying',
      seen: () => ({
        'refused!.requests.length': refused!.requests.length,
        'broken!.requests.length': broken!.requests.length,
      }),
    });
    expect(duplicates(collector.ids('uuid'))).toEqual([]);
    expect(collector.records.every((r) => r.key === 'healthy')).toBe(true);

    const byOrg = new Map(ingest.pollers.map((p) => [p.org, p]));
    expect(byOrg.get('refused')!.health().blocked).toBeGreaterThanOrEqual(1);
    expect(byOrg.get('refused')!.health().lastSuccessMs).toBeNull();
    expect(byOrg.get('healthy')!.health()).toMatchObject({ blocked: 0, events: 4_000 });
    // One clear error for the refused org, not one per retry.
    const blocked = lines().filter((l) => l.msg === 'poller_blocked' && l.org === 'refused');
    expect(blocked).toHaveLength(1);
    expect((blocked[0]!.err as { message: string }).message).toMatch(/credentials refused \(401 E0000011/);
    expect(lines().filter((l) => l.msg === 'poller_request_retry' && l.org === 'broken').length).toBeGreaterThanOrEqual(
      3,
    );
    expect(healthy!.violations).toEqual([]);
  });

  it('reports health per org: last success, lag, cursor age, and the silent-org signal', async () => {
    ts = await openTestStream();
    collector = await Collector.start(ts.stream, ts.topics.logs);
    const sim = await SimulatedOrg.start({ rateLimit: { logs: { limit: 50, windowMs: 1000 } } });
    sims.push(sim);
    const newest = Date.now() - 3_600_000;
    sim.addLogEvents([
      { event: logEvent(0), published: newest - 1000, persistedAt: newest },
      { event: logEvent(1), published: newest, persistedAt: newest },
    ]);
    const org = orgConfig(sim, {
      id: 'quiet',
      system_log: { start: '2d', poll_interval_ms: 100, silent_after_ms: 1_000 },
    });
    ingest = await startIngest({
      orgs: [org],
      stream: ts.stream,
      topics: ts.topics,
      logger: capturingLogger().logger,
      policies: FAST_POLICIES,
    });
    await waitFor(() => collector!.records.length, { until: (n) => n === 2, what: 'two events' });

    const h = ingest.pollers[0]!.health();
    expect(h.lastSuccessMs).toBeGreaterThan(Date.now() - 2_000);
    expect(h.lagMs).toBeGreaterThanOrEqual(3_600_000);
    expect(h.lagMs).toBeLessThan(3_600_000 + 10_000);
    expect(await metricValue('hooklog_poller_lag_seconds', 'quiet')).toBeGreaterThanOrEqual(3_600);
    expect(await metricValue('hooklog_poller_last_success_timestamp_seconds', 'quiet')).toBeGreaterThan(
      Date.now() / 1000 - 5,
    );
    expect(await metricValue('hooklog_poller_rate_limit_remaining', 'quiet')).toBeLessThan(50);
    // limit 50 × the default share: some of this window's allowance used, never more than all of it.
    const used = await metricValue('hooklog_poller_rate_limit_budget_used_ratio', 'quiet');
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(1);
    // Caught up, the same next link is confirmed on every poll: the cursor stays young.
    await waitFor(async () => await metricValue('hooklog_poller_silent', 'quiet'), {
      until: (n) => n === 1,
      what: 'the silent signal',
      timeoutMs: 5_000,
    });
    expect(await metricValue('hooklog_poller_cursor_age_seconds', 'quiet')).toBeLessThan(1);
    sim.addLogEvents([{ event: logEvent(2), published: Date.now() }]);
    await waitFor(async () => await metricValue('hooklog_poller_silent', 'quiet'), {
      until: (n) => n === 0,
      what: 'the signal to clear',
    });
    expect(ingest.pollers[0]!.health().lagMs).toBeLessThan(5_000);
    expect(await registry.metrics()).toMatch(/hooklog_poller_events_total\{[^}]*org="quiet"[^}]*\} 3/);
    await ingest.stop();
    ingest = undefined;
    expect(await metricValue('hooklog_poller_lag_seconds', 'quiet')).toBeUndefined(); // a stopped poller leaves no stale gauge
  });

  it('holds at most maxPagesHeld pages while appends wait, and loses nothing once they go on', async () => {
    ts = await openTestStream();
    collector = await Collector.start(ts.stream, ts.topics.logs);
    const orgs = await Promise.all([1, 2, 3, 4, 5, 6].map(() => SimulatedOrg.start({ rateLimit: { logs: false } })));
    sims.push(...orgs);
    for (const sim of orgs) sim.addLogEvents(history({ count: 2_500, days: 2, now: Date.now(), kind: 'log' }));
    // Every append waits at a gate the test opens: pages are fetched faster than they are stored.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let waitingAppends = 0;
    const real = ts.stream;
    const gated = new Proxy(real, {
      get(target, key) {
        if (key === 'claim') {
          return async (owner: string, stillOwner?: () => boolean) => {
            const tx = await target.claim(owner, stillOwner);
            return {
              owner: tx.owner,
              appendAtomically: async (writes: Parameters<typeof tx.appendAtomically>[0]) => {
                waitingAppends++;
                await gate;
                waitingAppends--;
                return tx.appendAtomically(writes);
              },
              close: () => tx.close(),
            };
          };
        }
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    ingest = await startIngest({
      orgs: orgs.map((sim, i) =>
        orgConfig(sim, { id: `held-${i}`, system_log: { start: '3d', poll_interval_ms: 200 } }),
      ),
      stream: gated,
      topics: ts.topics,
      logger: capturingLogger().logger,
      policies: FAST_POLICIES,
      maxPagesHeld: 2,
    });
    const gaugeValue = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]!.value;
    // Two pages wait for their appends and hold both slots; the other four orgs wait before their requests.
    await waitFor(async () => ({ waitingAppends, pagesWaiting: await gaugeValue('hooklog_poller_pages_waiting') }), {
      until: (s) => s.waitingAppends === 2 && s.pagesWaiting === 4,
      what: 'two pages held and four pollers waiting for a slot',
    });
    expect(orgs.reduce((n, sim) => n + sim.requests.length, 0)).toBe(2); // no prefetch either: no slot was free
    expect(await gaugeValue('hooklog_poller_pages_held')).toBe(2);
    expect(await gaugeValue('hooklog_poller_page_slots')).toBe(2);
    open();
    await waitFor(() => collector!.records.length, {
      until: (n) => n >= 15_000,
      what: "every org's events",
      timeoutMs: 30_000,
    });
    expect(duplicates(collector.ids('uuid'))).toEqual([]);
    expect(new Set(collector.records.map((r) => r.key)).size).toBe(6);
    expect(orgs.flatMap((sim) => sim.violations)).toEqual([]);
  });
});
