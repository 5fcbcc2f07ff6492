/**
 * Sigma correlation rules (v2) loaded as published beside their base rules,
 * and Sigma's `null` on a list. Fixtures are written here (the public corpus
 * has no correlation rule).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Alert } from '../alert.js';
import { PartitionEngine } from '../engine.js';
import { compileRule } from '../rules/compile.js';
import { loadAllRules } from '../rules/load.js';
import { loadRulePaths } from '../rules/sources.js';
import type { CompiledRule } from '../rules/types.js';

const BASES = `title: Failed sign-in
name: failed_login
id: 11111111-0000-4000-8000-000000000001
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.session.start, outcome.result: FAILURE }
  condition: sel
---
title: Successful sign-in
name: ok_login
id: 11111111-0000-4000-8000-000000000002
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.session.start, outcome.result: SUCCESS }
  condition: sel
---
title: MFA factor reset
name: mfa_reset
id: 11111111-0000-4000-8000-000000000003
logsource: { product: okta, service: okta }
detection:
  sel: { eventType: user.mfa.factor.reset_all }
  condition: sel
`;

const CORRELATIONS = `title: Many failed sign-ins per IP
id: 22222222-0000-4000-8000-000000000001
level: high
correlation:
  type: event_count
  rules: [failed_login]
  group-by: [client.ipAddress]
  timespan: 10m
  condition: { gte: 3 }
---
title: Many users failing from one IP
id: 22222222-0000-4000-8000-000000000002
correlation:
  type: value_count
  rules: [failed_login]
  group-by: [client.ipAddress]
  timespan: 10m
  condition: { gt: 1, field: actor.alternateId }
---
title: Failure, then success, then MFA reset
id: 22222222-0000-4000-8000-000000000003
correlation:
  type: temporal_ordered
  rules: [failed_login, ok_login, 11111111-0000-4000-8000-000000000003]
  group-by: [user]
  aliases:
    user:
      failed_login: actor.alternateId
      ok_login: actor.alternateId
      mfa_reset: target.alternateId
  timespan: 30m
---
title: Success and MFA reset, either order
id: 22222222-0000-4000-8000-000000000004
correlation:
  type: temporal
  rules: [ok_login, mfa_reset]
  group-by: [actor.alternateId]
  timespan: 5m
  generate: true
`;

function files(...docs: Array<[string, string]>): string {
  const dir = mkdtempSync(join(tmpdir(), 'hooklog-corr-'));
  for (const [name, text] of docs) writeFileSync(join(dir, name), text);
  return dir;
}

const T0 = Date.parse('2026-03-02T10:00:00Z');
const M = 60_000;
let seq = 0;
function ev(
  at: number,
  type: string,
  result: string,
  user: string,
  ip = '192.0.2.1',
  target?: string,
): Record<string, unknown> {
  return {
    uuid: `c-${seq++}`,
    published: new Date(T0 + at).toISOString(),
    eventType: type,
    outcome: { result },
    actor: { alternateId: user },
    client: { ipAddress: ip },
    ...(target ? { target: [{ alternateId: target }] } : {}),
  };
}
const fail = (at: number, user: string, ip?: string) => ev(at, 'user.session.start', 'FAILURE', user, ip);
const ok = (at: number, user: string) => ev(at, 'user.session.start', 'SUCCESS', user);
const reset = (at: number, admin: string, user: string) =>
  ev(at, 'user.mfa.factor.reset_all', 'SUCCESS', admin, '192.0.2.1', user);

function feed(rules: readonly CompiledRule[], events: Record<string, unknown>[]): Alert[] {
  const engine = new PartitionEngine(rules, { allowedLatenessMs: 60 * M });
  return events.flatMap((e) =>
    engine.process(e, { org: 'acme', timeMs: Date.parse(e['published'] as string), id: e['uuid'] as string }),
  );
}

describe('Sigma correlation rules', () => {
  const dir = files(['bases.yml', BASES], ['correlations.yml', CORRELATIONS]);
  const rules = loadRulePaths([dir]).flatMap((f) => f.rules);
  const byTitle = (t: string) => rules.filter((r) => r.title === t);

  it('load beside their base rules (in another file); named bases alert alone only with generate: true', () => {
    expect(rules.map((r) => [r.title, r.kind]).sort()).toEqual(
      [
        ['Failure, then success, then MFA reset', 'temporal'],
        ['Many failed sign-ins per IP', 'threshold'],
        ['Many users failing from one IP', 'distinct'],
        ['MFA factor reset', 'match'], // generate: true on the either-order correlation
        ['Successful sign-in', 'match'],
        ['Success and MFA reset, either order', 'temporal'],
      ].sort(),
    );
    expect(loadAllRules({ sigmaPaths: [dir] }).map((r) => r.id)).toContain('22222222-0000-4000-8000-000000000003');
  });

  it('event_count: 3 failures from one IP in 10 minutes fire; 3 spread over 30 minutes do not', () => {
    const r = byTitle('Many failed sign-ins per IP');
    expect(feed(r, [fail(0, 'a'), fail(M, 'b'), fail(2 * M, 'c')])).toHaveLength(1);
    expect(feed(r, [fail(0, 'a'), fail(15 * M, 'b'), fail(30 * M, 'c')])).toEqual([]);
    expect(feed(r, [fail(0, 'a', '192.0.2.1'), fail(M, 'b', '192.0.2.2'), fail(2 * M, 'c', '192.0.2.3')])).toEqual([]);
  });

  it('value_count: more than one user failing from one IP fires; one user failing twice does not', () => {
    const r = byTitle('Many users failing from one IP');
    expect(feed(r, [fail(0, 'a'), fail(M, 'b')])).toHaveLength(1);
    expect(feed(r, [fail(0, 'a'), fail(M, 'a')])).toEqual([]);
  });

  it('temporal_ordered: failure, success, then a reset of that user (alias: the target) within 30 minutes', () => {
    const r = byTitle('Failure, then success, then MFA reset');
    const hit = feed(r, [fail(0, 'bob'), ok(5 * M, 'bob'), reset(10 * M, 'admin', 'bob')]);
    expect(hit).toHaveLength(1);
    expect(hit[0]!.key).toBe('["bob"]');
    expect(hit[0]!.count).toBe(3);
    // Near misses: out of order; another user's reset; too slow.
    expect(feed(r, [ok(0, 'bob'), fail(5 * M, 'bob'), reset(10 * M, 'admin', 'bob')])).toEqual([]);
    expect(feed(r, [fail(0, 'bob'), ok(5 * M, 'bob'), reset(10 * M, 'admin', 'eve')])).toEqual([]);
    expect(feed(r, [fail(0, 'bob'), ok(5 * M, 'bob'), reset(40 * M, 'admin', 'bob')])).toEqual([]);
  });

  it('temporal_ordered judges event time: the same events arriving out of order still fire', () => {
    const r = byTitle('Failure, then success, then MFA reset');
    expect(feed(r, [reset(10 * M, 'admin', 'bob'), fail(0, 'bob'), ok(5 * M, 'bob')])).toHaveLength(1);
  });

  it('a late event (behind the watermark) does not complete a temporal set', () => {
    const r = byTitle('Failure, then success, then MFA reset');
    const engine = new PartitionEngine(r, { allowedLatenessMs: M });
    const p = (e: Record<string, unknown>) =>
      engine.process(e, { org: 'acme', timeMs: Date.parse(e['published'] as string), id: e['uuid'] as string });
    const alerts = [
      fail(0, 'bob'),
      ok(5 * M, 'bob'),
      ev(60 * M, 'other', 'SUCCESS', 'x'),
      reset(10 * M, 'admin', 'bob'),
    ].flatMap(p);
    expect(alerts).toEqual([]);
    expect(engine.state.late).toBe(1);
  });

  it('temporal: both rules within 5 minutes, in either order; not 10 minutes apart', () => {
    const r = byTitle('Success and MFA reset, either order');
    expect(feed(r, [reset(0, 'bob', 'x'), ok(2 * M, 'bob')])).toHaveLength(1);
    expect(feed(r, [ok(0, 'bob'), reset(2 * M, 'bob', 'x')])).toHaveLength(1);
    expect(feed(r, [ok(0, 'bob'), reset(10 * M, 'bob', 'x')])).toEqual([]);
  });

  it('refuses what it cannot run, naming the rule: an unknown base rule, "at most" conditions, unknown types', () => {
    const bad = (corr: string) => () =>
      loadRulePaths([files(['b.yml', BASES], ['c.yml', `title: x\nid: bad-1\ncorrelation:\n${corr}`])]);
    expect(bad('  type: event_count\n  rules: [nope]\n  timespan: 5m\n  condition: { gte: 2 }\n')).toThrow(
      /bad-1: names rule "nope"/,
    );
    expect(bad('  type: event_count\n  rules: [failed_login]\n  timespan: 5m\n  condition: { lte: 2 }\n')).toThrow(
      /at most N cannot be decided/,
    );
    expect(bad('  type: frequency\n  rules: [failed_login]\n  timespan: 5m\n')).toThrow(/unsupported correlation type/);
  });
});

describe('Sigma null on a list', () => {
  const rule = compileRule({ id: 'n', detection: { sel: { 'target.alternateId': null }, condition: 'sel' } });
  it('means absent or null: true when no target has one, or they are null', () => {
    expect(rule.where({ target: [{ id: 'a' }, { id: 'b' }] })).toBe(true);
    expect(rule.where({ target: [{ alternateId: null }] })).toBe(true);
    expect(rule.where({})).toBe(true);
  });
  it('is false when any element has a value (not "any element empty")', () => {
    expect(rule.where({ target: [{ alternateId: 'bob' }, { id: 'b' }] })).toBe(false);
    expect(rule.where({ target: [{ alternateId: 'bob' }, { alternateId: null }] })).toBe(false);
    expect(rule.where({ target: [{ alternateId: '' }] })).toBe(false);
  });
  it("'' matches an empty string only", () => {
    const empty = compileRule({ id: 'e', detection: { sel: { 'target.alternateId': '' }, condition: 'sel' } });
    expect(empty.where({ target: [{ alternateId: '' }] })).toBe(true);
    expect(empty.where({ target: [{ id: 'x' }] })).toBe(false);
  });
});

describe('Sigma |re on attacker-chosen values', () => {
  it('matches in bounded time with the backtracking answer, and refuses what cannot be matched so', () => {
    // 2^40 steps for a backtracking engine: before linearRegex this held the worker past its timeout.
    const rule = compileRule({ id: 'r', detection: { sel: { 'actor.alternateId|re': '^(a+)+$' }, condition: 'sel' } });
    expect(rule.where({ actor: { alternateId: `${'a'.repeat(40)}!` } })).toBe(false);
    expect(rule.where({ actor: { alternateId: 'a'.repeat(40) } })).toBe(true);
    for (const re of ['^(a+)\\1$', '^(?!admin)', '(?<=@)evil\\.example$'])
      expect(() =>
        compileRule({ id: 'x', detection: { sel: { 'actor.alternateId|re': re }, condition: 'sel' } }),
      ).toThrow(/bad regular expression: cannot be matched in time linear in the input/);
  });
});
