import { describe, expect, it } from 'vitest';
import { PartitionEngine } from '../engine.js';
import { compileRule } from '../rules/compile.js';
import { attachRisk, parseTtl } from './declaration.js';

const T = Date.parse('2026-03-01T00:00:00.000Z');
const risk = { level: 'high', ttl: '24h', reason: 'impossible travel' };

const travel = {
  id: 'travel',
  type: 'stateful',
  group_by: ['actor.alternateId'],
  detection: 'eventType eq "user.session.start"',
  fields: { lat: 'client.geographicalContext.geolocation.lat', lon: 'client.geographicalContext.geolocation.lon' },
  when: 'prev.lat != null and km(prev.lat, prev.lon, lat, lon) > 1000',
  risk,
};

function signIn(uuid: string, atMs: number, lat: number, lon: number, actor: Record<string, unknown>) {
  return {
    uuid,
    published: new Date(atMs).toISOString(),
    eventType: 'user.session.start',
    actor,
    client: { geographicalContext: { geolocation: { lat, lon } } },
  };
}

describe('risk declarations', () => {
  it('reads ttl as a duration', () => {
    expect(parseTtl('24h')).toBe(86_400_000);
    expect(parseTtl('30m')).toBe(1_800_000);
    expect(parseTtl('7d')).toBe(7 * 86_400_000);
    expect(parseTtl('1 day')).toBeNull();
  });

  it('refuses what cannot say which user a finding is about, naming the rule', () => {
    expect(() => compileRule({ ...travel, group_by: ['client.ipAddress'] })).toThrow(
      /rule travel: a stateful rule declaring risk must group by the actor's id or login/,
    );
    expect(() => compileRule({ id: 'quiet', type: 'absence', window_ms: 60_000, risk })).toThrow(
      /absence rule's finding names no user/,
    );
    expect(() => compileRule({ ...travel, risk: { ...risk, ttl: '24 hours' } })).toThrow(
      /risk\.ttl: must be a duration/,
    );
    expect(() => compileRule({ ...travel, risk: { ...risk, level: 'severe' } })).toThrow(/risk\.level/);
    expect(() => compileRule({ ...travel, risk: { ...risk, ttl: '400d' } })).toThrow(/from 1s to 366d/);
    // Grouped by the target user, with user: target.
    expect(() =>
      compileRule({
        id: 'resets',
        type: 'threshold',
        window_ms: 60_000,
        threshold: 3,
        group_by: ['target.id'],
        detection: 'eventType eq "user.account.reset_password"',
        risk: { ...risk, user: 'target' },
      }),
    ).not.toThrow();
  });

  it('a stateful finding carries the user of its events, and the contribution until event time + ttl', () => {
    const rule = compileRule(travel);
    const engine = new PartitionEngine([rule], { allowedLatenessMs: 0 });
    const ann = { id: '00uann', alternateId: 'ann@example.com', type: 'User' };
    const meta = (id: string, t: number) => ({ org: 'acme', timeMs: t, id });
    engine.process(signIn('e1', T, 48.85, 2.35, ann), meta('e1', T));
    engine.process(signIn('e2', T + 3_600_000, 40.71, -74.0, ann), meta('e2', T + 3_600_000));
    const alerts = engine.advanceTo(T + 7_200_000);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]!.risk).toEqual({
      entity: { type: 'user', id: '00uann', login: 'ann@example.com' },
      level: 'high',
      reason: 'impossible travel',
      expires_at: new Date(T + 3_600_000 + 86_400_000).toISOString(),
    });
  });

  it('match rules read the actor or the first User target; an actor that is not a user contributes nothing', () => {
    const byActor = compileRule({ id: 'm', detection: 'eventType eq "x"', risk });
    const byTarget = compileRule({ id: 't', detection: 'eventType eq "x"', risk: { ...risk, user: 'target' } });
    const engine = new PartitionEngine([byActor, byTarget], { allowedLatenessMs: 0 });
    const ev = {
      uuid: 'e1',
      published: new Date(T).toISOString(),
      eventType: 'x',
      actor: { id: '0oaapp', alternateId: 'an app', type: 'PublicClientApp' },
      target: [
        { id: '0oa1', type: 'AppInstance', alternateId: 'app' },
        { id: '00ubob', type: 'User', alternateId: 'bob@example.com' },
      ],
    };
    const alerts = engine.process(ev, { org: 'acme', timeMs: T, id: 'e1' });
    expect(alerts.map((a) => [a.rule_id, a.risk?.entity])).toEqual([
      ['m', undefined],
      ['t', { type: 'user', id: '00ubob', login: 'bob@example.com' }],
    ]);
  });

  it('the config gives rules loaded as published their risk, by id, and refuses an unknown id', () => {
    const rules = [compileRule({ id: 'catalogue.rule', detection: 'eventType eq "x"' })];
    const withRisk = attachRisk(rules, { 'catalogue.rule': { level: 'medium', ttl: '2h', reason: 'catalogue' } });
    expect(withRisk[0]!.risk?.level).toBe('medium');
    expect(withRisk[0]!.risk?.ttlMs).toBe(7_200_000);
    expect(rules[0]!.risk).toBeUndefined();
    expect(() => attachRisk(rules, { 'no.such.rule': risk })).toThrow(
      /alerting.risk.rules.no.such.rule: no loaded rule/,
    );
  });
});
