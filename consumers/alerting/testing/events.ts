/** Test events and a rule set with known findings, shared by the alerting tests and the kill -9 fixture. */
import { Header } from '../../../platform/stream/headers.js';
import type { StreamRecord } from '../../../platform/stream/types.js';

export const T0 = Date.parse('2024-05-01T10:00:00Z');

export const TEST_RULES = [
  { id: 'grant', severity: 'high', detection: { s: { eventType: 'user.account.privilege.grant' }, condition: 's' } },
  {
    id: 'brute', type: 'threshold', threshold: 3, window_ms: 300_000, group_by: ['client.ipAddress'],
    detection: { s: { eventType: 'user.session.start', 'outcome.result': 'FAILURE' }, condition: 's' },
  },
];

/**
 * `n` rounds per org; round i has one privilege grant and 3 login failures
 * from IP ip-i within a minute: 2 findings per round (1 match, 1 threshold).
 * Events of one round are emitted slightly out of order.
 */
export function findingEvents(orgs: readonly string[], rounds: number): { records: StreamRecord[]; expectedFindings: number } {
  const records: StreamRecord[] = [];
  let seq = 0;
  for (let i = 0; i < rounds; i++) {
    for (const org of orgs) {
      const base = T0 + i * 600_000;
      const mk = (eventType: string, dt: number, result: string) => {
        const ev = {
          uuid: `${org}-${i}-${seq++}`,
          published: new Date(base + dt).toISOString(),
          eventType,
          outcome: { result },
          actor: { alternateId: `user${i}@${org}.example` },
          client: { ipAddress: `10.0.${i % 250}.${i % 7}` },
        };
        return { key: org, value: Buffer.from(JSON.stringify(ev)), headers: { [Header.org]: org, [Header.source]: 'hook' } };
      };
      records.push(mk('user.session.start', 20_000, 'FAILURE'), mk('user.session.start', 5_000, 'FAILURE'), mk('user.account.privilege.grant', 30_000, 'SUCCESS'));
      records.push(mk('user.session.start', 40_000, 'FAILURE'), mk('user.session.start', 50_000, 'SUCCESS'));
    }
  }
  return { records, expectedFindings: rounds * orgs.length * 2 };
}
