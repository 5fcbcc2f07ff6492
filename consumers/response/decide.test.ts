/**
 * What a risk change decides, per org: which actions it names (by level, by
 * rule, on clearing) and what becomes of each under the org's mode, allow-list
 * and approval; ids stable per (alert, action). Built from parsed config.
 */
import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../platform/errors.js';
import { loadConfig, parseConfig } from '../../cli/config/load.js';
import { actionId, decideActions, namedActions } from './decide.js';
import { responseConfig, riskChange } from './testing.js';

const ORG = { id: 'acme', url: 'https://acme.example.test' };
const triggers = {
  on_level: { high: ['clear_sessions'], medium: ['expire_password'] },
  on_rule: { 'impossible-travel': ['suspend', 'add_to_group:00gquarantine'] },
  on_cleared: ['unsuspend'],
};
const NOW = '2026-03-01T10:00:00.000Z';

function decide(actions: Record<string, unknown>, change = riskChange('acme', { id: '00u1' }, 'none', 'high')) {
  const c = responseConfig([ORG], { actions: triggers, orgs: [{ org: 'acme', actions }] }).response!;
  return decideActions(change, c.actions, c.orgs[0]!, NOW);
}

const all = ['clear_sessions', 'suspend', 'unsuspend', 'expire_password', 'reset_factors', 'add_to_group'];

describe('deciding actions', () => {
  it('names the level’s actions and the rule’s, once each, on a rising finding', () => {
    const c = responseConfig([ORG], { actions: triggers }).response!.actions;
    expect(namedActions(riskChange('acme', { id: 'u' }, 'none', 'high'), c)).toEqual([
      { action: 'clear_sessions' },
      { action: 'suspend' },
      { action: 'add_to_group', group_id: '00gquarantine' },
    ]);
    expect(namedActions(riskChange('acme', { id: 'u' }, 'high', 'medium', { cause: 'expiry' }), c)).toEqual([]);
    expect(namedActions(riskChange('acme', { id: 'u' }, 'medium', 'none', { cause: 'expiry' }), c)).toEqual([
      { action: 'unsuspend' },
    ]);
  });

  it('records nothing when the mode is off', () => {
    expect(decide({ mode: 'off' })).toEqual([]);
  });

  it('in dry run, records every would-be action and runs none', () => {
    const d = decide({ mode: 'dry_run', allow: all });
    expect(d.map((a) => [a.action, a.state])).toEqual([
      ['clear_sessions', 'dry_run'],
      ['suspend', 'dry_run'],
      ['add_to_group', 'dry_run'],
    ]);
    expect(d[0]).toMatchObject({ org: 'acme', user_id: '00u1', rule_id: 'impossible-travel', at: NOW, attempt: 0 });
  });

  it('keeps to the allow-list and holds what needs approval', () => {
    const d = decide({ mode: 'on', allow: ['clear_sessions', 'suspend'], require_approval: ['suspend'] });
    expect(d.map((a) => [a.action, a.state])).toEqual([
      ['clear_sessions', 'requested'],
      ['suspend', 'awaiting_approval'],
      ['add_to_group', 'not_allowed'],
    ]);
  });

  it('gives one id per (alert, cause, action), the same however often it is decided', () => {
    const change = riskChange('acme', { id: '00u1' }, 'none', 'high');
    const once = decide({ mode: 'on', allow: all }, change).map((a) => a.action_id);
    expect(decide({ mode: 'on', allow: all }, change).map((a) => a.action_id)).toEqual(once);
    expect(new Set(once).size).toBe(3);
    const other = riskChange('acme', { id: '00u1' }, 'none', 'high');
    expect(actionId(other, { action: 'clear_sessions' })).not.toBe(once[0]);
  });

  it("parses the response guide's example (examples/response/hooklog.yaml) as documented", () => {
    const path = new URL('../../examples/response/hooklog.yaml', import.meta.url).pathname;
    const { config } = loadConfig(path, { HOOK_SECRET: 'x'.repeat(16), TOKEN_HOOK_SECRET: 'y'.repeat(16) });
    expect(config.response!.orgs[0]).toMatchObject({
      org: 'simulated',
      actions: { mode: 'on', allow: ['clear_sessions'] },
    });
    expect(config.response!.actions.on_level.high).toEqual(['clear_sessions']);
    const change = riskChange('simulated', { id: '00uann' }, 'none', 'high', { rule_id: 'impossible-travel' });
    expect(decideActions(change, config.response!.actions, config.response!.orgs[0]!, NOW).map((a) => a.state)).toEqual(
      ['requested'],
    );
  });

  it('refuses, at boot, a mode without actions, approval outside the allow-list, SETs without a transmitter, an unknown org', () => {
    const base = { orgs: [{ id: 'acme', base_url: ORG.url, auth: { ssws: { token: 't' } } }] };
    const bad = (response: unknown): string => {
      try {
        parseConfig({ ...base, response }, {});
      } catch (err) {
        expect(err).toBeInstanceOf(HooklogError);
        return (err as Error).message;
      }
      return '';
    };
    expect(bad({ orgs: [{ org: 'acme', security_events: { enabled: false }, actions: { mode: 'on' } }] })).toContain(
      '"response.orgs.0.actions.allow": mode on needs at least one action in allow',
    );
    expect(
      bad({
        orgs: [
          {
            org: 'acme',
            security_events: { enabled: false },
            actions: { mode: 'on', allow: ['clear_sessions'], require_approval: ['suspend'] },
          },
        ],
      }),
    ).toContain('suspend is not in allow');
    expect(bad({ orgs: [{ org: 'acme' }] })).toContain('SETs need response.transmitter');
    expect(bad({ orgs: [{ org: 'nope', security_events: { enabled: false } }] })).toContain(
      '"response.orgs.0.org": org "nope" is not in orgs',
    );
    expect(bad({ transmitter: { issuer: 'https://h.test', private_key: 'not a key' } })).toContain(
      'not a usable private key',
    );
  });
});
