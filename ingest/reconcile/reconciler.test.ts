/**
 * Reconcile mode on real parts: the simulated org (whose hook drops a share
 * of its deliveries and logs each loss as an event_hook.delivery failure),
 * the embedded stream, the real sink into embedded ClickHouse. The hook's
 * deliveries are stored first; the reconciler then appends exactly what they
 * missed — the lost events and the loss records — and nothing else.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startClickHouseSink, type ClickHouseSink } from '../../consumers/clickhouse-sink/index.js';
import { registerCoverageMetrics } from '../../analytics/coverage-metrics.js';
import { runNamedQuery } from '../../analytics/run.js';
import { registry } from '../../platform/metrics.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { Header } from '../../platform/stream/headers.js';
import { FAST_POLICIES, openTestStream, orgConfig, type TestStream } from '../../test/simulated-org/harness.js';
import { HookSender, logEvent, SimulatedOrg } from '../../test/simulated-org/index.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { startIngest, type Ingest } from '../index.js';

const TYPES = ['user.session.start', 'user.authentication.sso'];
const OTHER = 'policy.lifecycle.update';

async function lostMetric(org: string): Promise<number> {
  const values = (await registry.getSingleMetric('hooklog_hook_deliveries_lost_total')?.get())?.values ?? [];
  return values.filter((v) => v.labels.org === org).reduce((a, v) => a + v.value, 0);
}

describe('reconcile mode', () => {
  let ts: TestStream | undefined;
  let ingest: Ingest | undefined;
  let sink: ClickHouseSink | undefined;
  let store: Store | undefined;
  let sim: SimulatedOrg | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    await ingest?.stop();
    await sink?.stop();
    await store?.close();
    await sim?.stop();
    await ts?.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('appends exactly what the hook lost (and the loss records), nothing it delivered, nothing unsubscribed; resumes without repeating', async () => {
    const log = silentLogger();
    ts = await openTestStream();
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-reconcile-'));
    dirs.push(dataDir);
    store = openStore({ database: randomName('rec'), dataDir, logger: log });
    await migrate(store, log);
    sink = await startClickHouseSink({
      stream: ts.stream,
      store,
      topics: ts.topics,
      group: randomName('sink'),
      logger: log,
      maxBatchWaitMs: 50,
    });
    sim = await SimulatedOrg.start({ rateLimit: { logs: { limit: 20, windowMs: 1000 } } });
    const org = randomName('org').replaceAll('_', '-');
    const stream = ts.stream;
    const topics = ts.topics;

    // 300 events over the last 20 minutes, a third of them of a type the hook does not subscribe to.
    const now = Date.now();
    const types = [...TYPES, OTHER];
    const stored = sim.addLogEvents(
      Array.from({ length: 300 }, (_, i) => {
        const persistedAt = now - 20 * 60_000 + i * 4_000;
        return {
          event: { ...logEvent(i), eventType: types[i % 3] },
          published: persistedAt - (i % 5) * 700,
          persistedAt,
        };
      }),
    );
    const hook = new HookSender(sim, {
      hookId: 'who-sim-1',
      types: TYPES,
      dropRate: 0.08,
      seed: 3,
      post: async (env) => {
        const receivedAt = new Date().toISOString();
        await stream.append(
          topics.logs,
          env.data.events.map((e) => ({
            key: org,
            value: Buffer.from(JSON.stringify(e)),
            headers: {
              [Header.org]: org,
              [Header.source]: 'hook',
              [Header.hookId]: 'sim',
              [Header.deliveryId]: env.eventId,
              [Header.receivedAt]: receivedAt,
            },
          })),
        );
        return 204;
      },
    });
    await hook.send(stored);
    expect(hook.lost.length).toBeGreaterThan(0);
    expect(hook.delivered.length + hook.lost.length).toBe(200);
    const db = store.database;
    const count = async (sql: string) => Number((await store!.query<{ n: string }>(sql, { org }))[0]!.n);
    await waitFor(async () => await count(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String}`), {
      until: (v) => v === hook.delivered.length,
      what: 'hook deliveries stored',
    });

    const cfg = orgConfig(sim, {
      id: org,
      system_log: {
        mode: 'reconcile',
        start: '30m',
        rate_limit_share: 0.5,
        reconcile: {
          event_types: TYPES,
          delay_ms: 1_000,
          cadence_ms: 5_000,
          lost_delivery_interval_ms: 200,
          lost_delivery_lookback_ms: 30 * 60_000,
        },
      },
    });
    ingest = await startIngest({ orgs: [cfg], stream, topics, logger: log, policies: FAST_POLICIES, store });
    const expected = hook.delivered.length + hook.lost.length + hook.lossEvents.length;
    await waitFor(async () => await count(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String}`), {
      until: (v) => v === expected,
      what: `${expected} events`,
      timeoutMs: 30_000,
    });
    // The arrivals rows come with the events rows' insert (migration 032's view), as a part of their own
    // written after theirs: a read between the two sees the events alone, so wait for the arrivals too.
    await waitFor(async () => await count(`SELECT sum(copies) AS n FROM ${db}.arrivals WHERE org = {org:String}`), {
      until: (v) => v >= expected,
      what: `${expected} arrivals`,
      timeoutMs: 30_000,
    });

    const paths = await store.query<{ uuid: string; paths: string[]; copies: string }>(
      `SELECT uuid, groupArray(path) AS paths, toString(sum(copies)) AS copies FROM ${db}.arrivals WHERE org = {org:String} GROUP BY uuid`,
      { org },
    );
    const polledOnly = paths
      .filter((p) => p.paths.length === 1 && p.paths[0] === 'system-log')
      .map((p) => p.uuid)
      .sort();
    expect(polledOnly).toEqual([...hook.lost, ...hook.lossEvents].sort());
    expect(paths.every((p) => p.paths.length === 1 && p.copies === '1')).toBe(true);
    expect(
      await count(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String} AND event_type = '${OTHER}'`),
    ).toBe(0);
    await waitFor(async () => await lostMetric(org), {
      until: (v) => v === hook.lossEvents.length,
      what: 'the lost-delivery metric',
    });
    expect(sim.violations).toEqual([]);
    expect(sim.breaches).toEqual([]);

    // The coverage figures: the named queries and /metrics agree with what the hook really did.
    const range = {
      org,
      since: new Date(now - 3_600_000).toISOString(),
      until: new Date(Date.now() + 60_000).toISOString(),
      limit: '10000',
    };
    const cov = await runNamedQuery(store, 'hook_coverage', range);
    const total = (c: string) => cov.rows.reduce((a, r) => a + Number(r[c]), 0);
    expect([total('hooks_only'), total('log_only'), total('both')]).toEqual([
      hook.delivered.length,
      hook.lost.length,
      0,
    ]);
    const lostRows = await runNamedQuery(store, 'hook_deliveries_lost', range);
    expect(lostRows.rows.map((r) => [r.hook, Number(r.lost)])).toEqual([['who-sim-1', hook.lossEvents.length]]);
    const stopMetrics = registerCoverageMetrics(store, [org], log);
    const text = await registry.metrics();
    stopMetrics();
    expect(text).toContain(
      `hooklog_hook_coverage_events{org="${org}",via="log_only",service="hooklog"} ${hook.lost.length}`,
    );
    expect(text).toContain(`hooklog_hook_deliveries_lost{org="${org}",service="hooklog"} ${hook.lossEvents.length}`);
    expect(text).toMatch(
      new RegExp(`hooklog_hook_latency_ms\\{org="${org}",quantile="0.99",service="hooklog"\\} \\d+`),
    );

    // A restart resumes both positions: more requests, nothing appended again.
    const before = ingest.pollers[0]!.requests()!;
    await ingest.stop();
    const requestsBefore = sim.requests.length;
    ingest = await startIngest({ orgs: [cfg], stream, topics, logger: log, policies: FAST_POLICIES, store });
    await waitFor(() => sim!.requests.length, {
      until: (n) => n >= requestsBefore + 3,
      what: 'requests after the restart',
    });
    await ingest.stop();
    ingest = undefined;
    const copies = await count(`SELECT sum(copies) AS n FROM ${db}.arrivals WHERE org = {org:String}`);
    expect(copies).toBe(expected);
    expect(before).toBeGreaterThan(0);
    // Per window one bounded request, plus the watch: far fewer than following the whole log.
    console.log(
      `reconcile: ${before} requests for ${expected} events (${hook.lost.length} lost in ${hook.lossEvents.length} deliveries)`,
    );
  }, 60_000);

  it('re-reads at once the window a lost delivery covered, long before its window is due', async () => {
    const log = silentLogger();
    ts = await openTestStream();
    const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-reconcile-'));
    dirs.push(dataDir);
    store = openStore({ database: randomName('rec'), dataDir, logger: log });
    await migrate(store, log);
    sink = await startClickHouseSink({
      stream: ts.stream,
      store,
      topics: ts.topics,
      group: randomName('sink'),
      logger: log,
      maxBatchWaitMs: 50,
    });
    sim = await SimulatedOrg.start();
    const org = randomName('org').replaceAll('_', '-');
    const now = Date.now();
    const stored = sim.addLogEvents(
      Array.from({ length: 40 }, (_, i) => ({
        event: { ...logEvent(i), eventType: TYPES[i % 2] },
        published: now - 60_000 + i * 1000,
        persistedAt: now - 60_000 + i * 1000,
      })),
    );
    const { stream, topics } = ts;
    const hook = new HookSender(sim, {
      hookId: 'who-sim-2',
      types: TYPES,
      dropRate: 0.3,
      seed: 11,
      post: async (env) => {
        await stream.append(
          topics.logs,
          env.data.events.map((e) => ({
            key: org,
            value: Buffer.from(JSON.stringify(e)),
            headers: {
              [Header.org]: org,
              [Header.source]: 'hook',
              [Header.hookId]: 'sim',
              [Header.receivedAt]: new Date().toISOString(),
            },
          })),
        );
        return 204;
      },
    });
    await hook.send(stored);
    expect(hook.lost.length).toBeGreaterThan(0);
    const db = store.database;
    const count = async () =>
      Number(
        (
          await store!.query<{ n: string }>(`SELECT count() AS n FROM ${db}.events WHERE org = {org:String}`, { org })
        )[0]!.n,
      );
    await waitFor(async () => await count(), {
      until: (v) => v === hook.delivered.length,
      what: 'hook deliveries stored',
    });

    // Windows an hour behind real time: nothing of the last minutes is due; only the watch can bring the lost events.
    const cfg = orgConfig(sim, {
      id: org,
      system_log: {
        mode: 'reconcile',
        start: '5m',
        reconcile: {
          event_types: TYPES,
          delay_ms: 3_600_000,
          cadence_ms: 60_000,
          lost_delivery_interval_ms: 200,
          lost_delivery_lookback_ms: 120_000,
        },
      },
    });
    const started = Date.now();
    ingest = await startIngest({ orgs: [cfg], stream, topics, logger: log, policies: FAST_POLICIES, store });
    await waitFor(async () => await count(), {
      until: (n) => n === 40 + hook.lossEvents.length,
      what: 'the lost events, re-read',
      timeoutMs: 20_000,
    });
    expect(Date.now() - started).toBeLessThan(20_000);
    const windowRequests = sim.requests.filter(
      (r) => r.params.until !== undefined && Date.parse(r.params.until) - Date.parse(r.params.since!) === 60_000,
    );
    expect(windowRequests).toEqual([]); // the regular window was never due
    expect(sim.requests.filter((r) => r.params.until !== undefined).length).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
