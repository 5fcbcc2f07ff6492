import { describe, expect, it } from 'vitest';
import { levelAt, riskStateSchema, riskChangeSchema, type RiskState } from '../../../schemas/risk.js';
import type { Alert } from '../alert.js';
import { applyFinding, expire, expiryChangeId, findingChangeId, nextExpiry } from './fold.js';

const H = 3_600_000;
const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

function alert(id: string, level: 'low' | 'medium' | 'high', atMs: number, ttlMs: number, rule = `rule-${id}`): Alert {
  return {
    alert_id: id,
    rule_id: rule,
    rule_title: rule,
    severity: 'high',
    kind: 'stateful',
    org: 'acme',
    key: '["ann@example.com"]',
    event_time: iso(atMs),
    first_event_time: iso(atMs),
    count: 1,
    event_ids: [],
    risk: {
      entity: { type: 'user', id: '00u1', login: 'ann@example.com' },
      level,
      reason: `because ${id}`,
      expires_at: iso(atMs + ttlMs),
    },
  };
}

/** Folds alerts in order at the given wall times, collecting every change. */
function run(steps: Array<[Alert, number]>, until?: number) {
  let state: RiskState | null = null;
  const changes = [];
  for (const [a, now] of steps) {
    const step = applyFinding(state, a, now);
    if (step) {
      state = step.state;
      changes.push(...step.changes);
    }
  }
  if (until !== undefined && state) {
    const step = expire(state, until);
    if (step) {
      state = step.state;
      changes.push(...step.changes);
    }
  }
  return { state, changes };
}

describe('the level fold', () => {
  it('rises with a finding, falls step by step as contributions expire, and ends in a tombstone', () => {
    const { state, changes } = run(
      [
        [alert('a1', 'medium', T0, 48 * H), T0 + 1000],
        [alert('a2', 'high', T0 + H, 24 * H), T0 + H + 1000],
      ],
      T0 + 100 * H,
    );
    expect(state).toBeNull();
    expect(changes.map((c) => [c.cause, c.previous, c.current, c.alert_id, c.at])).toEqual([
      ['finding', 'none', 'medium', 'a1', iso(T0)],
      ['finding', 'medium', 'high', 'a2', iso(T0 + H)],
      ['expiry', 'high', 'medium', 'a2', iso(T0 + 25 * H)],
      ['expiry', 'medium', 'none', 'a1', iso(T0 + 48 * H)],
    ]);
    for (const c of changes) expect(riskChangeSchema.parse(c)).toEqual(c);
  });

  it('derives the same changes with the same ids whenever the expiry runs (on time or after downtime)', () => {
    const steps: Array<[Alert, number]> = [
      [alert('a1', 'medium', T0, 48 * H), T0],
      [alert('a2', 'high', T0 + H, 24 * H), T0 + H],
    ];
    const late = run(steps, T0 + 100 * H).changes;
    // On time: a sweep at each instant.
    let { state } = run(steps);
    const onTime = [];
    for (const t of [T0 + 25 * H, T0 + 30 * H, T0 + 48 * H]) {
      const s = expire(state!, t);
      if (s) {
        state = s.state;
        onTime.push(...s.changes);
      }
    }
    expect(onTime).toEqual(late.slice(2));
    expect(onTime).toHaveLength(2);
    expect(late[2]!.change_id).toBe(expiryChangeId('acme', 'acme/user/00u1', 'a2', iso(T0 + 25 * H)));
    expect(late[0]!.change_id).toBe(findingChangeId('acme', 'acme/user/00u1', 'a1'));
  });

  it('keeps at most one contribution per level; a lower or shorter one changes nothing', () => {
    const first = run([[alert('a1', 'high', T0, 24 * H), T0]]);
    // Lower and expiring sooner: can never decide the level.
    expect(applyFinding(first.state, alert('a2', 'medium', T0, 12 * H), T0)).toBeNull();
    // The same level, lasting longer: replaces the first, without a change of level.
    const longer = applyFinding(first.state, alert('a3', 'high', T0 + H, 24 * H), T0 + H)!;
    expect(longer.changes).toEqual([]);
    expect(longer.state!.contributions.map((c) => c.alert_id)).toEqual(['a3']);
    // Lower but lasting longer: kept, to hold the level once the high one expires.
    const both = applyFinding(longer.state, alert('a4', 'low', T0 + H, 72 * H), T0 + H)!;
    expect(both.state!.contributions.map((c) => [c.alert_id, c.level])).toEqual([
      ['a3', 'high'],
      ['a4', 'low'],
    ]);
    expect(riskStateSchema.parse(both.state)).toEqual(both.state);
    expect(nextExpiry(both.state!)).toBe(T0 + 25 * H);
    // The same alert again (a redelivery) changes nothing.
    expect(applyFinding(both.state, alert('a4', 'low', T0 + H, 72 * H), T0 + 2 * H)).toBeNull();
  });

  it('applies expiries due before a new finding, and ignores one already expired when it arrives', () => {
    const first = run([[alert('a1', 'high', T0, H), T0]]);
    // Two hours later a medium finding: the high one expired first (its own change), then medium.
    const next = applyFinding(first.state, alert('a2', 'medium', T0 + 2 * H, 24 * H), T0 + 2 * H)!;
    expect(next.changes.map((c) => [c.cause, c.previous, c.current])).toEqual([
      ['expiry', 'high', 'none'],
      ['finding', 'none', 'medium'],
    ]);
    // A backfilled finding from three days ago with a 24 h ttl counts for nothing.
    expect(applyFinding(null, alert('old', 'high', T0 - 72 * H, 24 * H), T0)).toBeNull();
  });

  it('agrees with levelAt, the readers’ view, at every instant', () => {
    const { state } = run([
      [alert('a1', 'low', T0, 96 * H), T0],
      [alert('a2', 'medium', T0, 48 * H), T0],
      [alert('a3', 'high', T0, 24 * H), T0],
    ]);
    for (const [t, want] of [
      [T0, 'high'],
      [T0 + 24 * H - 1, 'high'],
      [T0 + 24 * H, 'medium'],
      [T0 + 48 * H, 'low'],
      [T0 + 96 * H, 'none'],
    ] as const) {
      expect(levelAt(state!.contributions, t)).toBe(want);
      const folded = expire(state!, t);
      expect(folded ? (folded.state?.level ?? 'none') : state!.level).toBe(want);
    }
  });
});
