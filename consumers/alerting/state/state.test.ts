/**
 * Stateful rules and the `when` language: each construct fires on a case and
 * stays silent on a near miss; order of arrival, late events, restarts from a
 * checkpoint and the state bounds are tested on the engine itself.
 */
import { describe, expect, it } from 'vitest';
import type { Alert } from '../alert.js';
import { PartitionEngine, type EngineState } from '../engine.js';
import { compileRule } from '../rules/compile.js';
import type { CompiledRule } from '../rules/types.js';
import { compileExpr, km, zoned, type Value } from './expr.js';

function expr(src: string, cur: Record<string, Value>, prev: Record<string, Value> | null = null, tz = 'UTC'): Value {
  return compileExpr(src, { names: new Set(Object.keys(cur)), prev: true, timeZone: tz, where: 'test' })({ cur, prev });
}

describe('when: the expression language', () => {
  it('computes and compares', () => {
    expect(expr('a + b * 2 - c / 4', { a: 1, b: 3, c: 8 })).toBe(5);
    expect(expr('(a + b) % 4 == 0', { a: 1, b: 3 })).toBe(true);
    expect(expr('a + "x"', { a: 'id' })).toBe('idx');
    expect(expr('a == "ABC"', { a: 'abc' })).toBe(true);
    expect(expr('a >= 10 and not (b < 0) or false', { a: '12', b: 1 })).toBe(true);
    expect(expr('-a', { a: 2 })).toBe(-2);
    expect(expr('round(abs(a)) + min(1, 2, 0.5) + max(a, 3) + len(lower("AB"))', { a: -2.4 })).toBe(2 + 0.5 + 3 + 2);
  });

  it('propagates null: arithmetic is null, comparisons false except == null', () => {
    expect(expr('a + 1', { a: null })).toBe(null);
    expect(expr('a > 1', { a: null })).toBe(false);
    expect(expr('a < 1', { a: null })).toBe(false);
    expect(expr('a == null', { a: null })).toBe(true);
    expect(expr('a != null', { a: null })).toBe(false);
    expect(expr('a / 0', { a: 1 })).toBe(null);
    expect(expr('prev.a == null', { a: 1 }, null)).toBe(true);
    expect(expr('time - prev.time', { a: 1, time: 5000 }, { a: 1, time: 2000 })).toBe(3000);
  });

  it('chooses and replaces values: if, coalesce, upper', () => {
    expect(expr("if(a > 1, 'big', 'small')", { a: 2 })).toBe('big');
    expect(expr("if(a > 1, 'big', 'small')", { a: null })).toBe('small'); // a condition holds only when true
    expect(expr("coalesce(a, b, 'none')", { a: null, b: '' })).toBe('none');
    expect(expr("coalesce(a, b, 'none')", { a: null, b: 'x' })).toBe('x');
    expect(expr('upper(a)', { a: 'High' })).toBe('HIGH');
    expect(expr('upper(a)', { a: null })).toBe(null);
  });

  it('over the event: a name that is not a field is a path, collected for the caller to read', () => {
    const paths = new Set<string>();
    const e = compileExpr("lower(actor.alternateId) + '/' + n", {
      names: new Set(['n']),
      prev: false,
      timeZone: 'UTC',
      where: 'r',
      paths,
    });
    expect([...paths]).toEqual(['actor.alternateId']);
    expect(e({ cur: { n: 3, 'actor.alternateId': 'Bob@X' }, prev: null })).toBe('bob@x/3');
  });

  it('measures great-circle distance (Paris to New York about 5837 km)', () => {
    expect(km(48.8566, 2.3522, 40.7128, -74.006)).toBeGreaterThan(5800);
    expect(km(48.8566, 2.3522, 40.7128, -74.006)).toBeLessThan(5880);
    expect(km(10, 10, 10, 10)).toBe(0);
    expect(expr('km(a, b, c, d) > 5000', { a: 48.8566, b: 2.3522, c: 40.7128, d: -74.006 })).toBe(true);
    expect(expr('km(a, b, c, d)', { a: null, b: 2, c: 1, d: 1 })).toBe(null);
  });

  it('reads time of day and day of week in a time zone, across summer time', () => {
    const t = Date.parse('2026-03-29T06:30:00Z'); // a Sunday; Berlin has just moved to UTC+2
    expect(zoned(t, 'Europe/Berlin')).toEqual({ hour: 8, minute: 30, weekday: 7 });
    expect(zoned(Date.parse('2026-03-28T06:30:00Z'), 'Europe/Berlin')).toEqual({ hour: 7, minute: 30, weekday: 6 });
    expect(expr('hour(time)', { time: t }, null, 'America/New_York')).toBe(2);
    expect(expr('weekday(time, "Asia/Tokyo")', { time: t })).toBe(7);
  });

  it.each([
    ['a +', 'unexpected end'],
    ['nope > 1', 'unknown name "nope"'],
    ['frob(a)', 'unknown function frob()'],
    ['km(a, a)', 'km() takes 4 arguments'],
    ['(a > 1', 'missing )'],
    ['a > 1 b', 'unexpected'],
    ['"open', 'unterminated'],
  ])('refuses %s at compile time', (src, msg) => {
    expect(() => compileExpr(src, { names: new Set(['a']), prev: true, timeZone: 'UTC', where: 'r' })).toThrow(msg);
  });

  it('refuses prev. outside a stateful rule and an unknown time zone', () => {
    expect(() => compileRule({ id: 'r', detection: 'x pr', fields: { a: 'x' }, when: 'prev.a == 1' })).toThrow(
      'prev. needs a stateful rule',
    );
    expect(() =>
      compileRule({ id: 'r', detection: 'x pr', when: 'hour(time) > 1', time_zone: 'Mars/Olympus' }),
    ).toThrow('unknown time zone');
  });
});

const T0 = Date.parse('2026-03-02T10:00:00Z');
const H = 3_600_000;

function login(
  id: string,
  user: string,
  at: number,
  lat: number | null,
  lon: number | null,
  city = '',
): Record<string, unknown> {
  return {
    uuid: id,
    published: new Date(at).toISOString(),
    eventType: 'user.session.start',
    actor: { alternateId: user },
    outcome: { result: 'SUCCESS' },
    client: { geographicalContext: { city, ...(lat === null ? {} : { geolocation: { lat, lon } }) } },
  };
}

const TRAVEL = compileRule({
  id: 'travel',
  type: 'stateful',
  detection: 'eventType eq "user.session.start" and outcome.result eq "SUCCESS"',
  group_by: ['actor.alternateId'],
  fields: { lat: 'client.geographicalContext.geolocation.lat', lon: 'client.geographicalContext.geolocation.lon' },
  when: 'prev.lat != null and lat != null and km(prev.lat, prev.lon, lat, lon) > 100 and km(prev.lat, prev.lon, lat, lon) / max((time - prev.time) / 3600000, 1 / 3600) > 900',
  max_keys: 2,
});

const PARIS = [48.8566, 2.3522] as const;
const NYC = [40.7128, -74.006] as const;
const LYON = [45.764, 4.8357] as const;

function run(
  rules: CompiledRule[],
  events: Record<string, unknown>[],
  lateness = 60_000,
  state?: EngineState,
): { alerts: Alert[]; engine: PartitionEngine } {
  const engine = new PartitionEngine(rules, { allowedLatenessMs: lateness }, state);
  const alerts = events.flatMap((e) =>
    engine.process(e, { org: 'acme', timeMs: Date.parse(e['published'] as string), id: e['uuid'] as string }),
  );
  return { alerts, engine };
}

/** An event far ahead that moves the watermark past everything before it. */
const flush = (at: number) => ({ uuid: `flush-${at}`, published: new Date(at).toISOString(), eventType: 'other' });

describe('stateful rules: compare with the previous event of the key', () => {
  it('impossible travel fires on Paris then New York an hour later, once, naming both sign-ins', () => {
    const { alerts } = run(
      [TRAVEL],
      [login('a', 'bob', T0, ...PARIS), login('b', 'bob', T0 + H, ...NYC), flush(T0 + 10 * H)],
    );
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      rule_id: 'travel',
      kind: 'stateful',
      key: '["bob"]',
      count: 2,
      event_ids: ['a', 'b'],
    });
    expect(alerts[0]!.first_event_time).toBe(new Date(T0).toISOString());
  });

  it('near misses: the same trip in 10 hours, a short hop, another user, a sign-in without a location', () => {
    expect(
      run([TRAVEL], [login('a', 'bob', T0, ...PARIS), login('b', 'bob', T0 + 10 * H, ...NYC), flush(T0 + 20 * H)])
        .alerts,
    ).toEqual([]);
    expect(
      run([TRAVEL], [login('a', 'bob', T0, ...PARIS), login('b', 'bob', T0 + 60_000, ...PARIS), flush(T0 + 20 * H)])
        .alerts,
    ).toEqual([]);
    expect(
      run([TRAVEL], [login('a', 'bob', T0, ...PARIS), login('b', 'eve', T0 + H, ...NYC), flush(T0 + 20 * H)]).alerts,
    ).toEqual([]);
    expect(
      run([TRAVEL], [login('a', 'bob', T0, null, null), login('b', 'bob', T0 + H, ...NYC), flush(T0 + 20 * H)]).alerts,
    ).toEqual([]);
  });

  it('compares in event time: out-of-order arrival within the lateness gives the same alert as in order', () => {
    const inOrder = [
      login('a', 'bob', T0, ...PARIS),
      login('b', 'bob', T0 + 2 * 60_000, ...LYON),
      login('c', 'bob', T0 + H, ...NYC),
      flush(T0 + 20 * H),
    ];
    const shuffled = [inOrder[2]!, inOrder[0]!, inOrder[1]!, inOrder[3]!];
    const a = run([TRAVEL], inOrder, 2 * H).alerts;
    const b = run([TRAVEL], shuffled, 2 * H).alerts;
    // Paris → Lyon (390 km in 2 min) and Lyon → New York (in 58 min); never Paris → New York.
    expect(a.map((x) => x.event_ids)).toEqual([
      ['a', 'b'],
      ['b', 'c'],
    ]);
    expect(b).toEqual(a);
  });

  it('a late event (behind the watermark) does not enter the state', () => {
    const { alerts, engine } = run(
      [TRAVEL],
      [login('a', 'bob', T0, ...PARIS), flush(T0 + 10 * H), login('late', 'bob', T0 + H, ...NYC), flush(T0 + 20 * H)],
    );
    expect(alerts).toEqual([]);
    expect(engine.state.late).toBe(1);
  });

  it('holds an alert until the watermark passes the event, then emits it', () => {
    const engine = new PartitionEngine([TRAVEL], { allowedLatenessMs: 5 * 60_000 });
    const p = (e: Record<string, unknown>) =>
      engine.process(e, { org: 'acme', timeMs: Date.parse(e['published'] as string), id: e['uuid'] as string });
    expect(p(login('a', 'bob', T0, ...PARIS))).toEqual([]);
    expect(p(login('b', 'bob', T0 + H, ...NYC))).toEqual([]);
    expect(p(flush(T0 + H + 4 * 60_000))).toEqual([]);
    expect(p(flush(T0 + H + 6 * 60_000))).toHaveLength(1);
  });

  it('restarting from a checkpoint taken between the two sign-ins neither loses nor repeats the finding', () => {
    const events = [
      login('a', 'bob', T0, ...PARIS),
      login('b', 'bob', T0 + H, ...NYC),
      flush(T0 + 10 * H),
      flush(T0 + 11 * H),
    ];
    const whole = run([TRAVEL], events).alerts;
    for (let cut = 1; cut < events.length; cut++) {
      const first = run([TRAVEL], events.slice(0, cut));
      const saved = JSON.parse(JSON.stringify(first.engine.state)) as EngineState;
      const rest = run([TRAVEL], events.slice(cut), 60_000, saved).alerts;
      expect([...first.alerts, ...rest], `cut at ${cut}`).toEqual(whole);
    }
    expect(whole).toHaveLength(1);
  });

  it('is bounded: at most max_keys users are remembered, the least recently seen forgotten first', () => {
    const { engine } = run(
      [TRAVEL],
      [
        login('1', 'u1', T0, ...PARIS),
        login('2', 'u2', T0 + 1, ...PARIS),
        login('3', 'u3', T0 + 2, ...PARIS),
        flush(T0 + H),
      ],
    );
    const st = engine.state.keyed!['travel']!;
    expect(Object.keys(st.k)).toEqual([JSON.stringify(['acme', '["u2"]']), JSON.stringify(['acme', '["u3"]'])]);
    expect(st.evicted).toBe(1);
  });

  it('forgets a previous event older than ttl_ms', () => {
    const rule = compileRule({
      id: 'ttl',
      type: 'stateful',
      group_by: ['actor.alternateId'],
      fields: { c: 'client.geographicalContext.city' },
      when: 'prev.c != null and c != prev.c',
      ttl_ms: H,
    });
    const go = (gap: number) =>
      run([rule], [login('a', 'bob', T0, 1, 1, 'Paris'), login('b', 'bob', T0 + gap, 1, 1, 'Oslo'), flush(T0 + 30 * H)])
        .alerts;
    expect(go(30 * 60_000)).toHaveLength(1);
    expect(go(2 * H)).toEqual([]);
  });
});

describe('first_seen: a value new for the key within the look-back', () => {
  const rule = compileRule({
    id: 'new-country',
    type: 'first_seen',
    group_by: ['actor.alternateId'],
    distinct_field: 'client.geographicalContext.country',
    window_ms: 24 * H,
  });
  const at = (id: string, t: number, country: string, user = 'bob') => ({
    ...login(id, user, t, null, null),
    client: { geographicalContext: { country } },
  });

  it("fires on a new country for a user with history; not on the first ever, a known one, or another user's", () => {
    const { alerts } = run(
      [rule],
      [
        at('1', T0, 'FR'),
        at('2', T0 + H, 'fr'),
        at('3', T0 + 2 * H, 'NO'),
        at('4', T0 + 3 * H, 'FR'),
        at('5', T0 + 4 * H, 'NO', 'eve'),
        flush(T0 + 30 * H),
      ],
    );
    expect(alerts.map((a) => a.event_ids)).toEqual([['3']]);
  });

  it('a value last seen before the look-back is new again', () => {
    const { alerts } = run(
      [rule],
      [
        at('1', T0, 'FR'),
        at('2', T0 + 2 * H, 'DE'),
        at('3', T0 + 20 * H, 'DE'),
        at('4', T0 + 27 * H, 'FR'),
        flush(T0 + 60 * H),
      ],
    );
    expect(alerts.map((a) => a.event_ids)).toEqual([['2'], ['4']]);
  });

  it('a key whose whole history is older than the look-back is learning again, not alerting', () => {
    const { alerts } = run([rule], [at('1', T0, 'FR'), at('2', T0 + 27 * H, 'DE'), flush(T0 + 60 * H)]);
    expect(alerts).toEqual([]);
  });
});

describe('when on stateless rules: time of day, arithmetic, list positions, JSON in strings', () => {
  it('an admin sign-in outside 07:00-19:00 Berlin time, Monday to Friday', () => {
    const rule = compileRule({
      id: 'after-hours',
      detection: { sel: { eventType: 'user.session.access_admin_app' }, condition: 'sel' },
      when: 'hour(time) < 7 or hour(time) >= 19 or weekday(time) >= 6',
      time_zone: 'Europe/Berlin',
    });
    const at = (iso: string) => ({ uuid: iso, published: iso, eventType: 'user.session.access_admin_app' });
    expect(rule.where(at('2026-03-03T19:30:00Z'))).toBe(true); // Tuesday 20:30 in Berlin
    expect(rule.where(at('2026-03-03T17:30:00Z'))).toBe(false); // Tuesday 18:30
    expect(rule.where(at('2026-03-07T10:00:00Z'))).toBe(true); // Saturday
    expect(rule.where({ ...at('2026-03-03T19:30:00Z'), eventType: 'user.session.start' })).toBe(false);
  });

  it('the first target, and a field read out of a JSON string, in a Sigma-style detection', () => {
    const rule = compileRule({
      id: 'pos',
      detection: { sel: { 'target.0.type': 'User', 'target.1.detail.policy.mode': '1FA' }, condition: 'sel' },
    });
    const e = (first: string, json: string) => ({ target: [{ type: first }, { type: 'Rule', detail: json }] });
    expect(rule.where(e('User', '{"policy":{"mode":"1FA"}}'))).toBe(true);
    expect(rule.where(e('AppInstance', '{"policy":{"mode":"1FA"}}'))).toBe(false);
    expect(rule.where(e('User', '{"policy":{"mode":"2FA"}}'))).toBe(false);
    expect(rule.where(e('User', 'not json {'))).toBe(false);
  });

  it("arithmetic on event fields in a threshold rule's events", () => {
    const rule = compileRule({
      id: 'big',
      fields: { n: 'debugContext.debugData.count' },
      when: 'n * 2 > 10',
      detection: 'eventType pr',
    });
    expect(rule.where({ eventType: 'x', debugContext: { debugData: { count: '6' } } })).toBe(true);
    expect(rule.where({ eventType: 'x', debugContext: { debugData: { count: 5 } } })).toBe(false);
    expect(rule.where({ eventType: 'x' })).toBe(false);
  });
});
