/**
 * Window, distinct-count, sequence and absence rules on event time, fed out of
 * order and late; plus the two properties restarts rely on: the same records
 * give the same alerts whatever the batching, and a state snapshot taken
 * mid-stream and restored continues exactly as if nothing had happened.
 */
import { describe, expect, it } from 'vitest';
import type { Alert } from './alert.js';
import { PartitionEngine, type EngineState } from './engine.js';
import { compileRule } from './rules/compile.js';
import type { CompiledRule } from './rules/types.js';

const T0 = Date.parse('2024-05-01T10:00:00Z');
const MIN = 60_000;
let n = 0;
function ev(eventType: string, atMin: number, over: Record<string, unknown> = {}) {
  return {
    uuid: `u${++n}`,
    published: new Date(T0 + atMin * MIN).toISOString(),
    eventType,
    actor: { alternateId: 'alice@example.com' },
    client: { ipAddress: '198.51.100.7' },
    outcome: { result: 'FAILURE' },
    ...over,
  };
}
type Ev = ReturnType<typeof ev>;

function run(
  rules: CompiledRule[],
  events: Ev[],
  latenessMs = 2 * MIN,
  org = 'acme',
): { alerts: Alert[]; engine: PartitionEngine } {
  const engine = new PartitionEngine(rules, { allowedLatenessMs: latenessMs });
  const alerts = events.flatMap((e) =>
    engine.process(e, { org: (e as { org?: string }).org ?? org, timeMs: Date.parse(e.published), id: e.uuid }),
  );
  return { alerts, engine };
}

const failures = { sel: { eventType: 'user.session.start', 'outcome.result': 'FAILURE' }, condition: 'sel' };
const bruteForce = compileRule({
  id: 'bf',
  type: 'threshold',
  detection: failures,
  group_by: ['client.ipAddress'],
  window_ms: 5 * MIN,
  threshold: 3,
});
const spray = compileRule({
  id: 'spray',
  type: 'distinct',
  detection: failures,
  group_by: ['client.ipAddress'],
  distinct_field: 'actor.alternateId',
  window_ms: 10 * MIN,
  threshold: 3,
});
const resetThenGrant = compileRule({
  id: 'reset-grant',
  type: 'sequence',
  group_by: ['actor.alternateId'],
  window_ms: 30 * MIN,
  first: { s: { eventType: 'user.mfa.factor.reset_all' }, condition: 's' },
  then: { s: { eventType: 'user.account.privilege.grant' }, condition: 's' },
});
const silent = compileRule({ id: 'silent', type: 'absence', window_ms: 60 * MIN });
const deactivatedNotBack = compileRule({
  id: 'unf',
  type: 'unfollowed',
  group_by: ['actor.alternateId'],
  window_ms: 30 * MIN,
  first: { s: { eventType: 'user.mfa.factor.deactivate' }, condition: 's' },
  then: { s: { eventType: 'user.mfa.factor.activate' }, condition: 's' },
});
const deniedThenAccepted = compileRule({
  id: 'bomb',
  type: 'sequence',
  group_by: ['actor.alternateId'],
  window_ms: 10 * MIN,
  threshold: 3,
  first: { s: { eventType: 'user.mfa.okta_verify.deny_push' }, condition: 's' },
  then: { s: { eventType: 'user.authentication.auth_via_mfa' }, condition: 's' },
});

describe('threshold', () => {
  it('fires once for 3 failures from one IP within 5 min, even out of order', () => {
    const { alerts } = run(
      [bruteForce],
      [ev('user.session.start', 4), ev('user.session.start', 1), ev('user.session.start', 3)],
      5 * MIN,
    );
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      rule_id: 'bf',
      count: 3,
      key: '["198.51.100.7"]',
      first_event_time: new Date(T0 + MIN).toISOString(),
    });
  });
  it('does not fire when the same 3 failures span more than the window', () => {
    expect(
      run([bruteForce], [ev('user.session.start', 0), ev('user.session.start', 3), ev('user.session.start', 6)]).alerts,
    ).toHaveLength(0);
  });
  it('keeps groups apart and ignores non-matching events', () => {
    const other = { client: { ipAddress: '192.0.2.1' } };
    const evs = [
      ev('user.session.start', 0),
      ev('user.session.start', 1, other),
      ev('user.session.start', 2, { outcome: { result: 'SUCCESS' } }),
      ev('user.session.start', 2),
    ];
    expect(run([bruteForce], evs).alerts).toHaveLength(0);
  });
  it('drops events later than allowed lateness from windows and counts them', () => {
    // Watermark reaches 20 - 2 = 18 min; the events at 1 and 2 min are late and cannot complete a window.
    const { alerts, engine } = run(
      [bruteForce],
      [ev('user.session.start', 0), ev('x', 20), ev('user.session.start', 1), ev('user.session.start', 2)],
    );
    expect(alerts).toHaveLength(0);
    expect(engine.state.late).toBe(2);
  });
  it('accepts an out-of-order event within lateness', () => {
    const { alerts } = run(
      [bruteForce],
      [ev('user.session.start', 10), ev('user.session.start', 11), ev('user.session.start', 9)],
    );
    expect(alerts).toHaveLength(1);
  });
});

describe('distinct count', () => {
  const user = (u: string) => ({ actor: { alternateId: u } });
  it('fires on 3 distinct users from one IP within 10 min, not on 3 attempts by 2 users', () => {
    expect(
      run(
        [spray],
        [
          ev('user.session.start', 5, user('a')),
          ev('user.session.start', 1, user('b')),
          ev('user.session.start', 9, user('a')),
        ],
        5 * MIN,
      ).alerts,
    ).toHaveLength(0);
    const { alerts } = run(
      [spray],
      [
        ev('user.session.start', 5, user('a')),
        ev('user.session.start', 1, user('b')),
        ev('user.session.start', 9, user('c')),
      ],
      5 * MIN,
    );
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.count).toBe(3);
  });
  it('a late user does not count', () => {
    const evs = [
      ev('user.session.start', 10, user('a')),
      ev('user.session.start', 11, user('b')),
      ev('user.session.start', 25, user('z')),
      ev('user.session.start', 8, user('c')),
    ];
    // lateness 1 min: watermark 24 when the 8-min event arrives → late; with 20 min it completes a, b, c.
    expect(run([spray], evs, MIN).alerts).toHaveLength(0);
    expect(run([spray], evs, 20 * MIN).alerts).toHaveLength(1);
  });
});

describe('sequence', () => {
  it('fires when the grant follows the reset by the same actor within 30 min, even if read first', () => {
    const grant = ev('user.account.privilege.grant', 20);
    const reset = ev('user.mfa.factor.reset_all', 5);
    const { alerts } = run([resetThenGrant], [grant, reset], 30 * MIN);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.event_ids).toEqual([reset.uuid, grant.uuid]);
  });
  it('does not fire for grant before reset, another actor, or beyond the window', () => {
    expect(
      run([resetThenGrant], [ev('user.account.privilege.grant', 1), ev('user.mfa.factor.reset_all', 5)]).alerts,
    ).toHaveLength(0);
    expect(
      run(
        [resetThenGrant],
        [ev('user.mfa.factor.reset_all', 1), ev('user.account.privilege.grant', 5, { actor: { alternateId: 'bob' } })],
      ).alerts,
    ).toHaveLength(0);
    expect(
      run([resetThenGrant], [ev('user.mfa.factor.reset_all', 1), ev('user.account.privilege.grant', 40)]).alerts,
    ).toHaveLength(0);
  });
  it('ignores a late first step', () => {
    expect(
      run([resetThenGrant], [ev('user.account.privilege.grant', 20), ev('user.mfa.factor.reset_all', 5)], MIN).alerts,
    ).toHaveLength(0);
  });
});

describe('sequence with a first-step count (threshold)', () => {
  const deny = (m: number, who = 'alice@example.com') =>
    ev('user.mfa.okta_verify.deny_push', m, { actor: { alternateId: who } });
  const accept = (m: number, who = 'alice@example.com') =>
    ev('user.authentication.auth_via_mfa', m, { actor: { alternateId: who } });
  it('fires once when three denials precede the accepted push within the window, taking all of them', () => {
    const evs = [deny(1), deny(2), deny(3), deny(4), accept(5)];
    const { alerts } = run([deniedThenAccepted], evs);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.count).toBe(5);
    expect(alerts[0]!.event_ids).toEqual(evs.map((e) => e.uuid));
    expect(alerts[0]!.first_event_time).toBe(evs[0]!.published);
  });
  it('fires when the accepted push is read before the last denial (within lateness)', () => {
    const [d1, d2, d3, a] = [deny(1), deny(2), deny(3), accept(4)];
    expect(run([deniedThenAccepted], [d1, d2, a, d3], 5 * MIN).alerts).toHaveLength(1);
  });
  it('does not fire on two denials, denials after the accept, another user, or outside the window', () => {
    expect(run([deniedThenAccepted], [deny(1), deny(2), accept(3)]).alerts).toHaveLength(0);
    expect(run([deniedThenAccepted], [accept(1), deny(2), deny(3), deny(4)], 10 * MIN).alerts).toHaveLength(0);
    expect(run([deniedThenAccepted], [deny(1), deny(2), deny(3), accept(4, 'bob')]).alerts).toHaveLength(0);
    expect(run([deniedThenAccepted], [deny(1), deny(2), deny(3), accept(12)]).alerts).toHaveLength(0);
  });
  it('is refused unordered (Sigma near) with a count', () => {
    expect(() =>
      compileRule(
        { id: 'x', type: 'sequence', window_ms: 1000, threshold: 2, first: failures, then: failures },
        { order: 'any' },
      ),
    ).toThrow(/must be ordered/);
  });
});

describe('unfollowed', () => {
  const off = (m: number, who = 'alice@example.com') =>
    ev('user.mfa.factor.deactivate', m, { actor: { alternateId: who } });
  const on = (m: number, who = 'alice@example.com') =>
    ev('user.mfa.factor.activate', m, { actor: { alternateId: who } });
  const tick = (m: number) => ev('user.session.start', m, { actor: { alternateId: 'someone-else' } });
  it('alerts once the window has closed behind the watermark with no re-activation, not before', () => {
    const first = off(0);
    const early = run([deactivatedNotBack], [first, tick(31)], 2 * MIN);
    expect(early.alerts).toHaveLength(0);
    const { alerts } = run([deactivatedNotBack], [first, tick(31), tick(33)], 2 * MIN);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      rule_id: 'unf',
      kind: 'unfollowed',
      key: '["alice@example.com"]',
      count: 1,
      event_ids: [first.uuid],
      first_event_time: first.published,
      event_time: new Date(T0 + 30 * MIN).toISOString(),
    });
  });
  it('does not alert when re-activated within the window, even read before the deactivation', () => {
    expect(run([deactivatedNotBack], [off(0), on(20), tick(40)]).alerts).toHaveLength(0);
    expect(run([deactivatedNotBack], [on(5), off(3), tick(40)], 5 * MIN).alerts).toHaveLength(0);
  });
  it('alerts when the re-activation is too late, by another user, or came before the deactivation', () => {
    expect(run([deactivatedNotBack], [off(0), on(31), tick(40)]).alerts).toHaveLength(1);
    expect(run([deactivatedNotBack], [off(0), on(10, 'bob'), tick(40)]).alerts).toHaveLength(1);
    expect(run([deactivatedNotBack], [on(1), off(2), tick(40)]).alerts).toHaveLength(1);
  });
  it('a late re-activation (behind the watermark) does not clear it; a late deactivation is not taken', () => {
    const lateOn = run([deactivatedNotBack], [off(0), tick(25), on(20), tick(40)], MIN);
    expect(lateOn.alerts).toHaveLength(1);
    const lateOff = run([deactivatedNotBack], [tick(25), off(0), tick(60)], MIN);
    expect(lateOff.alerts).toHaveLength(0);
    // Both are counted as late for the rule (what hooklog status and the late-events metric show).
    for (const { engine } of [lateOn, lateOff]) expect(engine.state.lateRules?.['unf']?.['acme']?.[0]).toBe(1);
  });
  it('advanceTo decides what is due; the state holds nothing after', () => {
    const { engine, alerts } = run([deactivatedNotBack], [off(0), on(1), off(2)]);
    expect(alerts).toHaveLength(0);
    expect(engine.advanceTo(T0 + 40 * MIN)).toHaveLength(1);
    engine.prune();
    expect(engine.state.unf?.['unf']).toEqual({});
  });
  it('keeps at most max_keys groups, forgetting the oldest', () => {
    const small = compileRule({ ...deactivatedSpec(), max_keys: 2 });
    const { engine } = run([small], [off(0, 'a'), off(1, 'b'), off(2, 'c')]);
    expect(Object.keys(engine.state.unf!['unf']!)).toHaveLength(2);
    expect(engine.state.unfEvicted).toBe(1);
  });
});

function deactivatedSpec() {
  return {
    id: 'unf',
    type: 'unfollowed',
    group_by: ['actor.alternateId'],
    window_ms: 30 * MIN,
    first: { s: { eventType: 'user.mfa.factor.deactivate' }, condition: 's' },
    then: { s: { eventType: 'user.mfa.factor.activate' }, condition: 's' },
  };
}

describe('absence', () => {
  const from = (org: string, e: Ev) => ({ ...e, org });
  it('alerts once when an org is silent for 60 min while others keep the watermark moving', () => {
    const evs = [from('quiet', ev('a', 0)), ...[10, 30, 50, 61, 62, 63, 90].map((m) => from('busy', ev('a', m)))];
    const { alerts } = run([silent], evs, 2 * MIN);
    expect(alerts.map((a) => [a.org, a.event_time])).toEqual([['quiet', new Date(T0 + 60 * MIN).toISOString()]]);
  });
  it('an out-of-order event from the org within lateness keeps it alive', () => {
    const evs = [
      from('quiet', ev('a', 0)),
      from('busy', ev('a', 61)),
      from('quiet', ev('a', 60)),
      from('busy', ev('a', 63)),
    ];
    expect(run([silent], evs, 2 * MIN).alerts).toHaveLength(0);
  });
  it('alerts again after the org came back and fell silent again', () => {
    const evs = [
      from('q', ev('a', 0)),
      from('b', ev('a', 70)),
      from('q', ev('a', 71)),
      from('b', ev('a', 100)),
      from('b', ev('a', 132)),
    ];
    expect(run([silent], evs, 0).alerts.map((a) => a.org)).toEqual(['q', 'q']);
  });
});

describe('suppression and determinism', () => {
  it('suppresses repeats per (rule, key) within suppress_ms of event time', () => {
    const m = compileRule({ id: 'm', detection: failures, group_by: ['client.ipAddress'], suppress_ms: 10 * MIN });
    const { alerts, engine } = run(
      [m],
      [
        ev('user.session.start', 0),
        ev('user.session.start', 5),
        ev('user.session.start', 11),
        ev('user.session.start', 6, { client: { ipAddress: 'other' } }),
      ],
    );
    expect(alerts.map((a) => a.event_time.slice(11, 16))).toEqual(['10:00', '10:11', '10:06']);
    expect(engine.state.suppressed).toBe(1);
  });
  it('a snapshot restored mid-stream yields exactly the remaining alerts with the same ids', () => {
    const rules = [bruteForce, spray, resetThenGrant, silent, deactivatedNotBack, deniedThenAccepted];
    const evs: Ev[] = [];
    for (let i = 0; i < 200; i++) {
      const kinds = [
        'user.session.start',
        'user.mfa.factor.reset_all',
        'user.account.privilege.grant',
        'user.mfa.factor.deactivate',
        'user.mfa.factor.activate',
        'user.mfa.okta_verify.deny_push',
        'user.authentication.auth_via_mfa',
      ];
      evs.push(
        ev(kinds[i % 7]!, i * 0.7 - (i % 4), {
          actor: { alternateId: `u${i % 5}` },
          client: { ipAddress: `ip${i % 3}` },
        }),
      );
    }
    const whole = run(rules, evs).alerts.map((a) => a.alert_id);
    expect(whole.length).toBeGreaterThan(5);
    const first = new PartitionEngine(rules, { allowedLatenessMs: 2 * MIN });
    const part1 = evs
      .slice(0, 77)
      .flatMap((e) => first.process(e, { org: 'acme', timeMs: Date.parse(e.published), id: e.uuid }));
    const saved = JSON.parse(JSON.stringify(first.state)) as EngineState;
    const second = new PartitionEngine(rules, { allowedLatenessMs: 2 * MIN }, saved);
    const part2 = evs
      .slice(77)
      .flatMap((e) => second.process(e, { org: 'acme', timeMs: Date.parse(e.published), id: e.uuid }));
    expect([...part1, ...part2].map((a) => a.alert_id)).toEqual(whole);
    expect(new Set(whole).size).toBe(whole.length);
  });
});

describe('restarts of the counted sequence and unfollowed kinds', () => {
  it('restoring a snapshot taken after any event yields exactly the alerts of one uninterrupted run', () => {
    const rules = [deactivatedNotBack, deniedThenAccepted];
    const evs: Ev[] = [];
    for (let i = 0; i < 60; i++) {
      const who = { actor: { alternateId: `u${i % 4}` } };
      // Per user: deactivations, re-activations only for some; bursts of denials, then an accepted push.
      evs.push(ev(i % 3 === 0 ? 'user.mfa.factor.activate' : 'user.mfa.factor.deactivate', i * 7, who));
      for (let d = 0; d < (i % 5) + 1; d++) evs.push(ev('user.mfa.okta_verify.deny_push', i * 7 + 1 + d * 0.5, who));
      evs.push(ev('user.authentication.auth_via_mfa', i * 7 + 4 - (i % 2) * 2, who));
    }
    const lateness = 3 * MIN;
    const end = T0 + 60 * 7 * MIN + 60 * MIN;
    const uninterrupted = run(rules, evs, lateness);
    const whole = [...uninterrupted.alerts, ...uninterrupted.engine.advanceTo(end)];
    const byRule = (id: string) => whole.filter((a) => a.rule_id === id).length;
    expect(byRule('unf')).toBeGreaterThan(3);
    expect(byRule('bomb')).toBeGreaterThan(3);
    for (let cut = 1; cut < evs.length; cut += 7) {
      const first = new PartitionEngine(rules, { allowedLatenessMs: lateness });
      const part1 = evs
        .slice(0, cut)
        .flatMap((e) => first.process(e, { org: 'acme', timeMs: Date.parse(e.published), id: e.uuid }));
      const saved = JSON.parse(JSON.stringify(first.state)) as EngineState;
      const second = new PartitionEngine(rules, { allowedLatenessMs: lateness }, saved);
      const part2 = evs
        .slice(cut)
        .flatMap((e) => second.process(e, { org: 'acme', timeMs: Date.parse(e.published), id: e.uuid }));
      const ids = [...part1, ...part2, ...second.advanceTo(end)].map((a) => a.alert_id);
      expect(ids, `cut after ${cut} events`).toEqual(whole.map((a) => a.alert_id));
    }
  });
});

describe('repeated events', () => {
  it('an event sent twice (same uuid) alerts once, and counts once in windows and sequences', () => {
    const m = compileRule({ id: 'm', detection: failures });
    const e1 = ev('user.session.start', 1);
    const e2 = ev('user.session.start', 2);
    expect(run([m], [e1, e2, e1, e2]).alerts).toHaveLength(2);
    expect(run([bruteForce], [e1, e1, e1, e2]).alerts).toHaveLength(0);
    const reset = ev('user.mfa.factor.reset_all', 1);
    const grants = [ev('user.account.privilege.grant', 2), ev('user.account.privilege.grant', 3)];
    expect(run([resetThenGrant], [reset, reset, ...grants]).alerts).toHaveLength(1);
  });
});
