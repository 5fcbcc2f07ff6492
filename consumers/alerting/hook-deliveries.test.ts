/**
 * The built-in lost-delivery rule (content/hook-deliveries.yaml) on the
 * simulated org's event_hook.delivery records: one alert per loss, per org
 * and hook, none for a delivery that succeeded or any other event.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PartitionEngine } from './engine.js';
import { loadRuleFile } from './rules/load.js';

const RULES = fileURLToPath(new URL('./content/hook-deliveries.yaml', import.meta.url));

function delivery(uuid: string, hook: string, result: string): Record<string, unknown> {
  return {
    uuid,
    eventType: 'event_hook.delivery',
    published: '2026-11-20T10:00:00.000Z',
    outcome: { result, reason: null },
    target: [{ id: hook, type: 'EventHook', displayName: 'hooklog' }],
  };
}

describe('built-in rule: hook delivery lost', () => {
  it('fires once per lost delivery, per org and hook, and on nothing else', () => {
    const rules = loadRuleFile(RULES).filter((r) => r.id === 'hooklog.hook.delivery.lost');
    expect(rules).toHaveLength(1);
    const engine = new PartitionEngine(rules, { allowedLatenessMs: 60_000 });
    const t0 = Date.parse('2026-11-20T10:00:00Z');
    const events: Array<[string, Record<string, unknown>]> = [
      ['acme', delivery('l1', 'who1', 'FAILURE')],
      ['acme', delivery('l2', 'who1', 'FAILURE')], // a second loss of the same hook a second later: its own alert
      ['acme', delivery('s1', 'who1', 'SUCCESS')],
      ['acme', delivery('l3', 'who2', 'FAILURE')],
      ['globex', delivery('l4', 'who1', 'FAILURE')],
      ['acme', { uuid: 'x1', eventType: 'user.session.start', outcome: { result: 'FAILURE' } }],
    ];
    const alerts = events.flatMap(([org, e], i) =>
      engine.process(e, { org, timeMs: t0 + i * 1000, id: String(e.uuid) }),
    );
    expect(alerts).toHaveLength(4);
    expect(new Set(alerts.map((a) => a.alert_id)).size).toBe(4);
    expect(alerts.map((a) => [a.org, a.key])).toEqual([
      ['acme', '["who1"]'],
      ['acme', '["who1"]'],
      ['acme', '["who2"]'],
      ['globex', '["who1"]'],
    ]);
  });
});

function drift(uuid: string, hook: string, reason: string, result = 'FAILURE'): Record<string, unknown> {
  return {
    uuid,
    eventType: 'hooklog.hook.drift',
    published: '2026-11-20T10:00:00.000Z',
    outcome: { result, reason },
    target: [{ id: `who-${hook}`, type: 'EventHook', alternateId: hook, displayName: `hooklog:${hook}` }],
  };
}

describe('built-in rule: managed hook drifted', () => {
  it('fires once per drift finding, per org and hook, and on nothing else', () => {
    const rules = loadRuleFile(RULES);
    expect(rules.map((r) => r.id)).toEqual(['hooklog.hook.delivery.lost', 'hooklog.hook.registration.drift']);
    const engine = new PartitionEngine(
      rules.filter((r) => r.id === 'hooklog.hook.registration.drift'),
      { allowedLatenessMs: 60_000 },
    );
    const t0 = Date.parse('2026-11-20T10:00:00Z');
    const events: Array<[string, Record<string, unknown>]> = [
      ['acme', drift('d1', 'okta-main', 'deactivated')],
      ['acme', drift('d1', 'okta-main', 'deactivated')], // the same finding appended by a second instance
      ['acme', drift('d2', 'okta-main', 'unverified')],
      ['acme', drift('d3', 'okta-tokens', 'missing')],
      ['acme', drift('s1', 'okta-main', 'repaired', 'SUCCESS')],
      ['acme', delivery('x1', 'who1', 'SUCCESS')],
    ];
    const alerts = events.flatMap(([org, e], i) =>
      engine.process(e, { org, timeMs: t0 + i * 1000, id: String(e.uuid) }),
    );
    expect(alerts.map((a) => [a.org, a.key])).toEqual([
      ['acme', '["okta-main"]'],
      ['acme', '["okta-main"]'],
      ['acme', '["okta-tokens"]'],
    ]);
  });
});
