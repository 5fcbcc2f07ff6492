/**
 * The legacy Events poller against the simulated org: startDate without a
 * filter, the start and-ed into a filter (never startDate with filter or
 * after), the 90-day clamp, next links only, its own topic, and an org
 * where the API is not enabled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  Collector,
  duplicates,
  FAST_POLICIES,
  openTestStream,
  orgConfig,
  type TestStream,
} from '../../test/simulated-org/harness.js';
import { history, legacyEvent, SimulatedOrg } from '../../test/simulated-org/index.js';
import { waitFor } from '../../test/support/wait.js';
import { startIngest, type Ingest } from '../index.js';
import { formatLegacyDate } from './first-request.js';

const DAY = 86_400_000;

describe('legacy Events poller', () => {
  let sim: SimulatedOrg;
  let ts: TestStream;
  let ingest: Ingest | undefined;
  let collector: Collector;
  afterEach(async () => {
    await ingest?.stop();
    ingest = undefined;
    await collector.stop();
    await sim.stop();
    await ts.close();
  });

  async function run(
    section: Record<string, unknown>,
    opts: { legacyEnabled?: boolean } = {},
    seed: (s: SimulatedOrg) => void = () => undefined,
  ) {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false, events: { limit: 50, windowMs: 1000 } }, ...opts });
    seed(sim);
    ts = await openTestStream();
    collector = await Collector.start(ts.stream, ts.topics.legacyEvents);
    const { logger, lines } = capturingLogger();
    const org = orgConfig(sim, {
      system_log: { enabled: false },
      legacy_events: { enabled: true, poll_interval_ms: 150, ...section },
    });
    const started = Date.now();
    ingest = await startIngest({ orgs: [org], stream: ts.stream, topics: ts.topics, logger, policies: FAST_POLICIES });
    return { org, lines, started };
  }

  it('without a filter: startDate first, then next links only; events land in <prefix>.legacy-events', async () => {
    const now = Date.now();
    const { org, started } = await run({ start: '2d' }, {}, (s) =>
      s.addLegacyEvents(history({ count: 2_400, days: 4, now, kind: 'legacy' })),
    );
    await waitFor(() => sim.requests.length, { until: (n) => n >= 1, what: 'the first request' });
    const startDate = Date.parse(sim.requests[0]!.params.startDate!);
    const expected = sim.legacy
      .all()
      .filter((e) => e.persistedAt >= startDate)
      .map((e) => e.id);
    expect(expected.length).toBeLessThan(2_400);
    await waitFor(() => collector.records.length >= expected.length && sim.requests.length >= 3, {
      what: 'events since the start',
      seen: () => ({
        'collector.records.length': collector.records.length,
        'sim.requests.length': sim.requests.length,
      }),
    });
    const [first, ...rest] = sim.requests;
    expect(Object.keys(first!.params).sort()).toEqual(['limit', 'startDate']);
    expect(first!.params.limit).toBe('1000');
    expect(Math.abs(Date.parse(first!.params.startDate!) - (started - 2 * DAY))).toBeLessThan(2_000);
    expect(first!.params.startDate).toBe(formatLegacyDate(Date.parse(first!.params.startDate!)));
    expect(rest.every((r) => Object.keys(r.params).sort().join() === 'after,limit')).toBe(true);
    expect(new Set(collector.ids('eventId'))).toEqual(new Set(expected));
    expect(duplicates(collector.ids('eventId'))).toEqual([]);
    expect(collector.records.every((r) => r.key === org.id && r.headers['hooklog-source'] === 'legacy-events')).toBe(
      true,
    );
    expect(sim.violations).toEqual([]);
    expect(sim.breaches).toEqual([]);
  });

  it('with a filter: no startDate; published gt "<start clamped to 90 days>" and-ed into the filter, kept on every page', async () => {
    const now = Date.now();
    const filter = 'action.objectType eq "core.user_auth.login_success"';
    const { started } = await run({ start: '200d', filter }, {}, (s) =>
      s.addLegacyEvents(
        history({ count: 4_000, days: 120, now, kind: 'legacy', exclude: [[now - 91 * DAY, now - 89 * DAY]] }),
      ),
    );
    const expected = sim.legacy
      .all()
      .filter((e) => e.objectType === 'core.user_auth.login_success' && e.published > now - 90 * DAY)
      .map((e) => e.id);
    expect(expected.length).toBeGreaterThan(0);
    await waitFor(() => collector.records.length >= expected.length && sim.requests.length >= 2, {
      what: 'filtered events',
      timeoutMs: 15_000,
      seen: () => ({
        'collector.records.length': collector.records.length,
        'sim.requests.length': sim.requests.length,
      }),
    });
    const [first, ...rest] = sim.requests;
    expect(Object.keys(first!.params).sort()).toEqual(['filter', 'limit']);
    const m = /^action\.objectType eq "core\.user_auth\.login_success" and published gt "([^"]+)"$/.exec(
      first!.params.filter!,
    );
    expect(m).not.toBeNull();
    expect(Math.abs(Date.parse(m![1]!) - (started - 90 * DAY))).toBeLessThan(2_000);
    expect(
      rest.every(
        (r) =>
          r.params.filter === first!.params.filter && r.params.after !== undefined && r.params.startDate === undefined,
      ),
    ).toBe(true);
    expect(new Set(collector.ids('eventId'))).toEqual(new Set(expected));
    expect(sim.violations).toEqual([]);
  });

  it('clamps a start older than 90 days to the retention in startDate', async () => {
    const { started } = await run({ start: '2020-01-01T00:00:00Z' });
    await waitFor(() => sim.requests.length, { until: (n) => n >= 1, what: 'the first request' });
    expect(Math.abs(Date.parse(sim.requests[0]!.params.startDate!) - (started - 90 * DAY))).toBeLessThan(2_000);
    expect(sim.violations).toEqual([]);
  });

  it('an org without the API: one clear error, slow retries, and it picks up once enabled', async () => {
    const { lines } = await run({ start: '1d' }, { legacyEnabled: false });
    sim.addLegacyEvents([{ event: legacyEvent(0), published: Date.now() - 1_000 }]);
    await waitFor(() => sim.requests.length, { until: (n) => n >= 3, what: 'three attempts', timeoutMs: 5_000 });
    const spacing = sim.requests.slice(1).map((r, i) => r.at - sim.requests[i]!.at);
    expect(spacing[0]).toBeGreaterThanOrEqual(390); // blocked policy in tests: 400 ms, then 800 ms
    expect(spacing[1]).toBeGreaterThanOrEqual(790);
    const errors = lines().filter((l) => l.msg === 'poller_blocked');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'IDP_API_NOT_ENABLED' });
    expect((errors[0]!.err as { message: string }).message).toMatch(/not enabled for this org \(403 E0000015/);
    sim.legacyEnabled = true;
    await waitFor(() => collector.records.length, {
      until: (n) => n === 1,
      what: 'the event once enabled',
      timeoutMs: 5_000,
    });
    expect(lines().some((l) => l.msg === 'poller_recovered')).toBe(true);
    // the same first request, until it succeeded
    expect(sim.requests.every((r) => r.params.startDate !== undefined)).toBe(true);
  });
});
