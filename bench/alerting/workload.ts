/**
 * Bench workload: LogEvent shapes from the project's fixtures, with the
 * event-type mix widened by the types the loaded rules look for, so rules do
 * match (about 1 event in 10 is a type some rule names; failures cluster per
 * IP so threshold rules fire too). Deterministic for a given count.
 */
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { fixtureLines } from '../../test/fixtures/index.js';

const RULE_TYPES = [
  'user.session.impersonation.grant',
  'user.lifecycle.create',
  'policy.rule.update',
  'system.api_token.create',
  'system.api_token.revoke',
  'user.mfa.factor.deactivate',
  'user.mfa.factor.reset_all',
  'group.privilege.grant',
  'user.account.privilege.grant',
  'security.threat.detected',
  'application.lifecycle.update',
  'zone.delete',
  'system.idp.lifecycle.create',
  'user.account.lock',
  'app.generic.unauth_app_access_attempt',
];

export function buildWorkload(n: number): StreamRecord[] {
  const lines = fixtureLines('logevents.valid.jsonl');
  const shapes = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const t0 = Date.parse('2024-06-01T00:00:00Z');
  const out: StreamRecord[] = [];
  for (let i = 0; i < n; i++) {
    const ev = { ...shapes[i % shapes.length]! };
    ev['uuid'] = `bench-${i.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;
    ev['published'] = new Date(t0 + i * 50).toISOString();
    if (i % 10 === 3) ev['eventType'] = RULE_TYPES[((i / 10) % RULE_TYPES.length) | 0];
    if (i % 10 === 7) {
      ev['eventType'] = 'user.session.start';
      ev['outcome'] = { result: 'FAILURE', reason: 'VERIFICATION_ERROR' };
      ev['client'] = { ...(ev['client'] as object), ipAddress: `198.51.100.${(i / 1000) | (0 % 250)}` };
    }
    const org = `org${i % 8}`;
    out.push({
      key: org,
      value: Buffer.from(JSON.stringify(ev)),
      headers: { [Header.org]: org, [Header.source]: 'hook' },
    });
  }
  return out;
}
