import { describe, expect, it } from 'vitest';
import {
  RISK_LEVELS,
  levelAt,
  riskChangeSchema,
  riskKey,
  riskRank,
  riskStateSchema,
  riskTopics,
  type RiskChange,
  type RiskContribution,
  type RiskEntity,
  type RiskState,
} from './risk.js';

describe('risk records', () => {
  it('orders levels none < low < medium < high', () => {
    expect([...RISK_LEVELS].sort((a, b) => riskRank(a) - riskRank(b))).toEqual(['none', 'low', 'medium', 'high']);
    expect(riskRank('high')).toBeGreaterThan(riskRank('medium'));
  });

  it('keys an entity by org, type and id, and names the topics after the prefix', () => {
    expect(riskKey('acme', { type: 'user', id: '00u1' })).toBe('acme/user/00u1');
    expect(riskTopics('hooklog')).toEqual({ state: 'hooklog.risk', changes: 'hooklog.risk-changes' });
  });

  it('takes a change and a state as written, and refuses unknown levels and fields', () => {
    const entity: RiskEntity = { type: 'user', id: '00u1', login: 'ann@example.com' };
    const change: RiskChange = {
      change_id: 'ab12',
      org: 'acme',
      entity,
      previous: 'none',
      current: 'high',
      cause: 'finding',
      rule_id: 'impossible-travel',
      alert_id: 'cd34',
      reason: 'Sign-ins from two countries an hour apart',
      at: '2026-11-25T10:00:00.000Z',
    };
    expect(riskChangeSchema.parse(change)).toEqual(change);
    expect(riskChangeSchema.safeParse({ ...change, current: 'severe' }).success).toBe(false);
    expect(riskChangeSchema.safeParse({ ...change, extra: 1 }).success).toBe(false);
    const state: RiskState = {
      org: 'acme',
      entity,
      level: 'high',
      contributions: [
        <RiskContribution>{
          rule_id: 'impossible-travel',
          alert_id: 'cd34',
          level: 'high',
          reason: 'travel',
          expires_at: '2026-11-26T10:00:00.000Z',
        },
      ],
      updated_at: '2026-11-25T10:00:00.000Z',
      change_id: 'ab12',
    };
    expect(riskStateSchema.parse(state)).toEqual(state);
  });
});

describe('levelAt', () => {
  const c = (level: RiskContribution['level'], expires_at: string) => ({ level, expires_at });
  it('is the highest contribution not yet expired, none when all have', () => {
    const cs = [c('medium', '2026-01-01T12:00:00Z'), c('high', '2026-01-01T10:00:00Z')];
    expect(levelAt(cs, Date.parse('2026-01-01T09:00:00Z'))).toBe('high');
    // Expiry is exclusive: at expires_at the contribution no longer counts.
    expect(levelAt(cs, Date.parse('2026-01-01T10:00:00Z'))).toBe('medium');
    expect(levelAt(cs, Date.parse('2026-01-01T12:00:00Z'))).toBe('none');
    expect(levelAt([], 0)).toBe('none');
  });
});
