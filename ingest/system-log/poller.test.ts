/**
 * The System Log poller against the simulated org (real HTTP) and the real
 * embedded stream: what it asks for, what it stores, and where it resumes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import {
  Collector,
  duplicates,
  FAST_POLICIES,
  openTestStream,
  orgConfig,
  type TestStream,
} from '../../test/simulated-org/harness.js';
import { history, logEvent, SimulatedOrg } from '../../test/simulated-org/index.js';
import { waitFor } from '../../test/support/wait.js';
import { cursorRecord, readCursor } from '../poller/cursor.js';
import { startIngest, type Ingest } from '../index.js';

const DAY = 86_400_000;

describe('System Log poller', () => {
  let ts: TestStream;
  let sim: SimulatedOrg;
  let ingest: Ingest | undefined;
  let collector: Collector;

  beforeEach(async () => {
    ts = await openTestStream();
    collector = await Collector.start(ts.stream, ts.topics.logs);
  });
  afterEach(async () => {
    await ingest?.stop();
    ingest = undefined;
    await collector.stop();
    await sim?.stop();
    await ts.close();
  });

  const start = (
    orgs: Parameters<typeof startIngest>[0]['orgs'],
    extra: Partial<Parameters<typeof startIngest>[0]> = {},
  ) =>
    startIngest({
      orgs,
      stream: ts.stream,
      topics: ts.topics,
      logger: silentLogger(),
      policies: FAST_POLICIES,
      ...extra,
    });

  it('pages with next links only, stores each event once with its position, and resumes exactly there', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false } });
    const now = Date.now();
    sim.addLogEvents(history({ count: 3_500, days: 10, now, kind: 'log' }));
    const published = sim.logs.all().map((e) => e.published);
    expect(published.some((p, i) => i > 0 && p < published[i - 1]!)).toBe(true); // persistence order ≠ published order
    const org = orgConfig(sim, { system_log: { start: '30d', poll_interval_ms: 200 } });
    ingest = await start([org]);
    await waitFor(() => collector.records.length, { until: (n) => n >= 3_500, what: '3500 events', timeoutMs: 30_000 });

    sim.addLogEvents(Array.from({ length: 10 }, (_, i) => ({ event: logEvent(i), published: Date.now() - i })));
    await waitFor(() => collector.records.length, { until: (n) => n >= 3_510, what: 'live events' });
    const first = sim.requests[0]!;
    expect(first.params).toEqual({
      since: new Date(first.params.since!).toISOString(),
      limit: '1000',
      sortOrder: 'ASCENDING',
    });
    expect(Date.parse(first.params.since!)).toBeGreaterThan(now - 30 * DAY - 5_000);
    expect(
      sim.requests
        .slice(1)
        .every((r) => r.params.after !== undefined && r.params.since === undefined && r.params.limit === '1000'),
    ).toBe(true);

    // Stop, let events arrive meanwhile, start again on the same stream: it resumes from the stored next link.
    const position = ingest.pollers[0]!.position();
    await ingest.stop();
    ingest = undefined;
    const stored = readCursor(await ts.stream.readLatestByKey(ts.topics.cursors), 'system-log', org.id);
    expect(stored?.next).toBe(position);
    sim.addLogEvents(
      Array.from({ length: 1_500 }, (_, i) => ({ event: logEvent(i), published: Date.now() - (i % 50) * 100 })),
    );
    const before = sim.requests.length;
    ingest = await start([org]);
    await waitFor(() => collector.records.length, { until: (n) => n >= 5_010, what: 'events after restart' });
    expect(`${sim.url}/api/v1/logs?${new URLSearchParams(sim.requests[before]!.params).toString()}`).toBe(position);

    const ids = collector.ids('uuid');
    expect(duplicates(ids)).toEqual([]);
    expect(new Set(ids)).toEqual(new Set(sim.logs.all().map((e) => e.id)));
    expect(
      collector.records.every(
        (r) => r.key === org.id && r.headers['hooklog-source'] === 'system-log' && r.headers['hooklog-org'] === org.id,
      ),
    ).toBe(true);
    expect(sim.violations).toEqual([]);
    expect(sim.breaches).toEqual([]);
  });

  it('when caught up waits the interval and calls the same next link, with no extra request after a short page', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false } });
    sim.addLogEvents(history({ count: 5, days: 1, now: Date.now(), kind: 'log' }));
    ingest = await start([orgConfig(sim, { system_log: { start: '2d', poll_interval_ms: 300 } })]);
    await waitFor(() => sim.requests.length, { until: (n) => n >= 4, what: 'four requests', timeoutMs: 5_000 });
    const [r1, r2, r3, r4] = sim.requests;
    expect(collector.records.length).toBe(5);
    // The first page was short: the second request comes only after the interval, and so on.
    for (const [a, b] of [
      [r1!, r2!],
      [r2!, r3!],
      [r3!, r4!],
    ] as const)
      expect(b.at - a.at).toBeGreaterThanOrEqual(290);
    expect(r3!.params).toEqual(r2!.params);
    expect(r4!.params).toEqual(r2!.params);
    sim.addLogEvents([{ event: logEvent(1), published: Date.now() }]);
    await waitFor(() => collector.records.length, { until: (n) => n === 6, what: 'the live event' });
    expect(sim.violations).toEqual([]);
  });

  it('never follows a stored position onto another host (base_url changed): starts afresh', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false } });
    sim.addLogEvents([{ event: logEvent(0), published: Date.now() - 1_000 }]);
    const org = orgConfig(sim, { system_log: { start: '1h', poll_interval_ms: 200 } });
    const elsewhere = {
      next: 'https://old-org.example.com/api/v1/logs?after=1_1',
      savedAt: new Date().toISOString(),
      newestPublished: null,
      checkedAt: null,
    };
    await ts.stream.appendAtomically([
      { topic: ts.topics.cursors, records: [cursorRecord('system-log', org.id, elsewhere)] },
    ]);
    ingest = await start([org]);
    await waitFor(() => collector.records.length, { until: (n) => n === 1, what: 'the event' });
    expect(sim.requests[0]!.params.since).toBeDefined();
  });

  it('dead-letters items that are not events, in the same atomic append, and carries on', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false } });
    const t = Date.now() - 10_000;
    sim.addLogEvents([
      { event: logEvent(0), published: t },
      { event: { eventType: 'no.uuid' }, published: t + 1 },
      { event: logEvent(2), published: t + 2 },
    ]);
    const dead = await Collector.start(ts.stream, ts.topics.deadletter);
    const org = orgConfig(sim, { system_log: { start: '1h', poll_interval_ms: 200 } });
    ingest = await start([org]);
    await waitFor(() => collector.records.length === 2 && dead.records.length === 1, {
      what: 'two events and a dead letter',
      seen: () => ({
        'collector.records.length': collector.records.length,
        'dead.records.length': dead.records.length,
      }),
    });
    const letter = dead.records[0]!;
    expect(JSON.parse(letter.value.toString())).toMatchObject({ eventType: 'no.uuid' });
    expect(letter.headers).toMatchObject({
      'hooklog-origin': 'system-log-poller',
      'hooklog-org': org.id,
      'hooklog-source': 'system-log',
    });
    expect(letter.headers['hooklog-reason']).toMatch(/\/api\/v1\/logs item 1: uuid/);
    await dead.stop();
  });

  it('stays within its share with honest headers: zero 429s, never the last request of a window', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: { limit: 10, windowMs: 1000 } } });
    sim.addLogEvents(history({ count: 11_000, days: 20, now: Date.now(), kind: 'log' }));
    ingest = await start([
      orgConfig(sim, { system_log: { start: '30d', poll_interval_ms: 200, rate_limit_share: 0.5 } }),
    ]);
    await waitFor(() => collector.records.length, { until: (n) => n >= 11_000, what: 'all events', timeoutMs: 30_000 });
    expect(sim.violations).toEqual([]);
    expect(sim.buckets.logs!.served429).toBe(0);
    expect(sim.buckets.logs!.exhaustedWindows).toBe(0);
    expect(Math.max(...sim.buckets.logs!.usedPerWindow.values())).toBeLessThanOrEqual(5);
    expect(duplicates(collector.ids('uuid'))).toEqual([]);
  });

  it('stops short of exhausting a bucket other clients are using too', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: { limit: 6, windowMs: 1000, foreignPerWindow: 3 } } });
    sim.addLogEvents(history({ count: 6_000, days: 20, now: Date.now(), kind: 'log' }));
    ingest = await start([
      orgConfig(sim, { system_log: { start: '30d', poll_interval_ms: 200, rate_limit_share: 1 } }),
    ]);
    await waitFor(() => collector.records.length, { until: (n) => n >= 6_000, what: 'all events', timeoutMs: 30_000 });
    expect(sim.violations).toEqual([]);
    expect(sim.buckets.logs!.exhaustedWindows).toBe(0);
  });

  it('recovers from injected 429s (Reset past, missing, honest) without a request storm', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: { limit: 100, windowMs: 1000 } } });
    sim.addLogEvents(history({ count: 3_000, days: 5, now: Date.now(), kind: 'log' }));
    sim.faults.next(
      { kind: '429', reset: 'past' },
      { kind: '429', reset: 'past' },
      { kind: '429', reset: 'past' },
      { kind: '429', reset: 'missing' },
      { kind: '429', reset: 'missing' },
      { kind: '429', reset: 'honest' },
    );
    ingest = await start([orgConfig(sim, { system_log: { start: '10d', poll_interval_ms: 200 } })]);
    await waitFor(() => collector.records.length, { until: (n) => n >= 3_000, what: 'all events', timeoutMs: 30_000 });
    const limited = sim.requests.filter((r) => r.status === 429);
    expect(limited).toHaveLength(6);
    const following = (r: (typeof limited)[number]) => sim.requests[sim.requests.indexOf(r) + 1]!;
    // Reset past or missing: the fallback backoff (first step 200 ms ± 20%), growing with each 429 in a row.
    for (const r of limited.slice(0, 5)) expect(following(r).at - r.at).toBeGreaterThanOrEqual(150);
    expect(limited[2]!.at - limited[0]!.at).toBeGreaterThanOrEqual(450);
    // An honest Reset: nothing before it.
    const honest = limited[5]!;
    expect(following(honest).at).toBeGreaterThanOrEqual(Math.floor(honest.at / 1000) * 1000 + 1000);
    expect(sim.requests.length).toBeLessThanOrEqual(4 + 6 + 2);
    expect(sim.violations).toEqual([]);
    expect(duplicates(collector.ids('uuid'))).toEqual([]);
  });

  it('retries 500 E0000009, 5xx, dropped and cut connections and slow replies, losing and repeating nothing', async () => {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false } });
    sim.addLogEvents(history({ count: 6_000, days: 5, now: Date.now(), kind: 'log' }));
    sim.faults.random(
      0.4,
      [
        { kind: 'status', status: 500, errorCode: 'E0000009' },
        { kind: 'status', status: 503, errorCode: 'E0000010' },
        { kind: 'drop' },
        { kind: 'truncate' },
        { kind: 'slow', ms: 100 },
      ],
      7,
    );
    ingest = await start([
      orgConfig(sim, { system_log: { start: '10d', poll_interval_ms: 100 }, request_timeout_ms: 2_000 }),
    ]);
    await waitFor(() => collector.records.length >= 6_000 && sim.faults.total >= 5, {
      what: 'all events',
      timeoutMs: 30_000,
      seen: () => ({ 'collector.records.length': collector.records.length, 'sim.faults.total': sim.faults.total }),
    });
    expect(sim.faults.total).toBeGreaterThanOrEqual(5);
    expect(duplicates(collector.ids('uuid'))).toEqual([]);
    expect(new Set(collector.ids('uuid')).size).toBe(6_000);
    expect(sim.violations).toEqual([]);
  });
});
