/**
 * The backtest over a long, sparse range (three years holding twelve events)
 * on real chdb: it reads the slices that hold events, not every slice of the
 * range, and finds the same alerts as reading slice by slice. Measured in
 * queries, not wall time (the machine is shared); the wall time is printed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertChunk } from '../../bench/analytics/load.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { randomName } from '../../test/support/wait.js';
import { backtest } from './backtest.js';
import { holdsEvents, planReads } from './backtest-slices.js';
import { compileRule } from './rules/compile.js';

const H = 3_600_000;
const DAY = 24 * H;
const SINCE = Date.parse('2023-01-01T00:00:00Z');
const UNTIL = Date.parse('2026-01-01T00:00:00Z');
const dir = mkdtempSync(join(tmpdir(), 'hooklog-backtest-'));
let store: Store;

/** Twelve failed sign-ins of one user, one every three months; the last three within ten minutes. */
function twelve() {
  return Array.from({ length: 12 }, (_, i) => ({
    org: 'acme',
    event: {
      uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      published: new Date(
        i < 9 ? SINCE + 5 * DAY + i * 91 * DAY : UNTIL - 30 * DAY + (i - 9) * 5 * 60_000,
      ).toISOString(),
      eventType: 'user.session.start',
      outcome: { result: 'FAILURE' },
      actor: { alternateId: 'bob@example.com' },
    },
  }));
}

const rules = [
  compileRule({ id: 'failure', detection: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"' }),
  // Grouped: the last three failures, ten minutes apart, are one alert.
  compileRule({
    id: 'failure-grouped',
    detection: 'eventType eq "user.session.start" and outcome.result eq "FAILURE"',
    dedup_period: '1h',
  }),
  compileRule({
    id: 'three-failures',
    type: 'threshold',
    threshold: 3,
    window_ms: H,
    group_by: ['actor.alternateId'],
    detection: 'outcome.result eq "FAILURE"',
  }),
  compileRule({
    id: 'hourly-failures',
    type: 'scheduled',
    every_ms: H,
    lookback_ms: H,
    key: ['actor'],
    sql: `SELECT org, actor_alternate_id AS actor, min(published) AS event_time, count() AS count FROM {db}.events_v4 FINAL
          WHERE published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')} AND outcome_result = 'FAILURE'
          GROUP BY org, actor HAVING count >= 3`,
  }),
];

beforeAll(async () => {
  store = openStore({ database: randomName('backtest'), dataDir: dir, logger: silentLogger() });
  await migrate(store, silentLogger());
  await insertChunk(store, twelve());
});
afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('backtest over a long, sparse range', () => {
  it('three years, twelve events: one read of the events, scheduled runs only where events are', async () => {
    const t0 = performance.now();
    const r = await backtest(store, rules, { since: SINCE, until: UNTIL, allowedLatenessMs: 300_000 });
    const ms = performance.now() - t0;
    console.log(`backtest over 3 years holding 12 events: ${r.queries} queries, ${ms.toFixed(0)} ms`);
    expect(r.events).toBe(12);
    const alerts = Object.fromEntries(r.perRule.map((x) => [x.rule.id, x.alerts]));
    expect(alerts).toEqual({ failure: 12, 'failure-grouped': 10, 'three-failures': 1, 'hourly-failures': 1 });
    // Walking it: 4,383 six-hour slices and 26,280 hourly scheduled runs. Now: the slice counts, one read of
    // the twelve events, and the hourly runs over the ten hours that hold events.
    expect(r.queries).toBe(1 + 1 + 10);
  });

  it('finds the same alerts when every slice is a read of its own', async () => {
    const whole = await backtest(store, rules, { since: SINCE, until: UNTIL, allowedLatenessMs: 300_000, sample: 20 });
    const bySlice = await backtest(store, rules, {
      since: SINCE,
      until: UNTIL,
      allowedLatenessMs: 300_000,
      sample: 20,
      maxReadEvents: 1,
    });
    // 10 non-empty slices, each its own read (the last three events share one slice).
    expect(bySlice.queries - whole.queries).toBe(9);
    const ids = (r: typeof whole) => r.perRule.flatMap((x) => x.first.map((a) => a.alert_id)).sort();
    expect(ids(bySlice)).toEqual(ids(whole));
    expect(ids(whole)).toHaveLength(24);
    // A grouped alert is shown as it ended: its last revision.
    const grouped = whole.perRule.find((x) => x.rule.id === 'failure-grouped')!.first;
    expect(grouped.map((a) => a.findings)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 3]);
  });
});

describe('identity context in a backtest', () => {
  it('every actor has none (no record of what users held then), whatever the stored event carries', async () => {
    // After the range the other tests read, so their counts stay theirs.
    const at = Date.parse('2027-01-01T00:00:00Z');
    await insertChunk(store, [
      {
        org: 'acme',
        event: {
          uuid: '00000000-0000-4000-8000-100000000000',
          published: new Date(at).toISOString(),
          eventType: 'user.session.start',
          outcome: { result: 'SUCCESS' },
          // What the event itself says is not the context: the live engine replaces it, and so does a backtest.
          actor: { id: '00uada', alternateId: 'ada@example.com', adminRoles: ['SUPER_ADMIN'], status: 'ACTIVE' },
        },
      },
    ]);
    const r = await backtest(
      store,
      [
        compileRule({ id: 'admin', detection: 'actor.adminRoles pr or actor.status eq "ACTIVE"' }),
        compileRule({ id: 'not-admin', detection: 'eventType eq "user.session.start" and not (actor.adminRoles pr)' }),
      ],
      { since: at, until: at + H, allowedLatenessMs: 0 },
    );
    expect(r.events).toBe(1);
    expect(Object.fromEntries(r.perRule.map((x) => [x.rule.id, x.alerts]))).toEqual({ admin: 0, 'not-admin': 1 });
  });
});

describe('planReads and holdsEvents', () => {
  it('groups non-empty slices up to the bound, clips to until, and never reads an empty one alone', () => {
    const counts = [
      { slice: 0, events: 2 },
      { slice: 5, events: 3 },
      { slice: 6, events: 10 },
      { slice: 9, events: 1 },
    ];
    expect(planReads(counts, 0, 55, 6, 5)).toEqual([
      { since: 0, until: 36, events: 5 },
      { since: 36, until: 42, events: 10 },
      { since: 54, until: 55, events: 1 },
    ]);
    expect(planReads([], 0, 100, 6, 5)).toEqual([]);
    expect(holdsEvents(counts, 0, 6, 12, 30)).toBe(false); // slices 2..4
    expect(holdsEvents(counts, 0, 6, 29, 31)).toBe(true); // slices 4..5
    expect(holdsEvents(counts, 0, 6, 60, 70)).toBe(false);
  });
});
