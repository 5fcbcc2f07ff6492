import { describe, expect, it } from 'vitest';
import type { ConsumedRecord } from '../../../platform/stream/types.js';
import type { RiskChange } from '../../../schemas/risk.js';
import { mapRiskChangeRecord } from './rows.js';
import { changeRecord } from './records.js';

const change: RiskChange = {
  change_id: '532010b94e3f35dc48f91137aab9309c',
  org: 'acme',
  entity: { type: 'user', id: '00u1ann', login: 'ann@acme.example' },
  previous: 'none',
  current: 'high',
  cause: 'finding',
  rule_id: 'impossible-travel',
  alert_id: '53f1838ed8858a9ee54aeac61ec3c46c',
  reason: 'too far apart',
  at: '2026-11-25T12:01:38.523Z',
};

const consumed = (value: Buffer): ConsumedRecord => ({
  ...changeRecord(change),
  value,
  topic: 'p.risk-changes',
  partition: 0,
  offset: 7,
  timestamp: Date.parse('2026-11-25T12:01:40.000Z'),
});

describe('risk_changes rows', () => {
  it('maps a change as the fold writes it', () => {
    expect(mapRiskChangeRecord(consumed(changeRecord(change).value))).toEqual({
      ok: true,
      row: {
        at: '2026-11-25 12:01:38.523',
        org: 'acme',
        entity_type: 'user',
        entity_id: '00u1ann',
        entity_login: 'ann@acme.example',
        previous: 'none',
        current: 'high',
        cause: 'finding',
        rule_id: 'impossible-travel',
        alert_id: '53f1838ed8858a9ee54aeac61ec3c46c',
        reason: 'too far apart',
        change_id: '532010b94e3f35dc48f91137aab9309c',
        appended_at: '2026-11-25 12:01:40.000',
      },
    });
  });

  it('refuses what is not a change, saying why (the sink dead-letters it with its bytes)', () => {
    expect(mapRiskChangeRecord(consumed(Buffer.from('nope')))).toEqual({
      ok: false,
      reason: 'value is not valid JSON',
    });
    const r = mapRiskChangeRecord(consumed(Buffer.from(JSON.stringify({ ...change, current: 'severe' }))));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toMatch(/^not a risk change: current:/);
  });
});
