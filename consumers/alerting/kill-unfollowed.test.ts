/**
 * `kill -9` of `hooklog alert` three times while an unfollowed rule (a factor deactivated and not
 * re-activated within an hour) and a counted sequence (three denied pushes, then the accepted one) work
 * through the logs topic on the embedded log, their events out of order: the waiting first steps, the
 * then-events kept for them and the counted first steps live in the checkpoint written atomically with the
 * alerts, so afterwards the alerts topic holds exactly one alert per finding.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { randomName } from '../../test/support/wait.js';
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { killThriceThenDrain } from '../../test/support/alert-process.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MIN = 60_000;
const RULES = [
  {
    id: 'factor-off-not-back',
    type: 'unfollowed',
    window_ms: 60 * MIN,
    group_by: ['actor.alternateId'],
    first: { s: { eventType: 'user.mfa.factor.deactivate' }, condition: 's' },
    then: { s: { eventType: 'user.mfa.factor.activate' }, condition: 's' },
  },
  {
    id: 'push-bombing-accepted',
    type: 'sequence',
    threshold: 3,
    window_ms: 10 * MIN,
    group_by: ['actor.alternateId'],
    first: { s: { eventType: 'user.mfa.okta_verify.deny_push' }, condition: 's' },
    then: { s: { eventType: 'user.authentication.auth_via_mfa', 'outcome.result': 'SUCCESS' }, condition: 's' },
  },
];

/**
 * Per org and round (two hours apart), written out of order within the round: a factor re-activated in
 * time (read before its deactivation: no finding), one never re-activated and one re-activated too late
 * (a finding each), three denials and the accepted push (the accept read before the last denial on odd
 * rounds: a finding) and two denials with an accept (none). Three findings per org and round.
 */
function factorAndPushEvents(orgs: readonly string[], rounds: number): { records: StreamRecord[]; expected: number } {
  const records: StreamRecord[] = [];
  const rec = (org: string, id: string, atMs: number, eventType: string, user: string, result = 'SUCCESS') => ({
    key: org,
    value: Buffer.from(
      JSON.stringify({
        uuid: `${org}-${id}`,
        published: new Date(atMs).toISOString(),
        eventType,
        outcome: { result },
        actor: { alternateId: `${user}@${org}.example`, type: 'User' },
      }),
    ),
    headers: { [Header.org]: org, [Header.source]: 'hook' },
  });
  for (let i = 0; i < rounds; i++) {
    const base = T0 + i * 120 * MIN;
    for (const org of orgs) {
      const d = (m: number) => base + m * MIN;
      const deny = (u: string, k: number, m: number) =>
        rec(org, `${i}-${u}-deny-${k}`, d(m), 'user.mfa.okta_verify.deny_push', `${u}${i}`, 'FAILURE');
      const accept = (u: string, m: number) =>
        rec(org, `${i}-${u}-accept`, d(m), 'user.authentication.auth_via_mfa', `${u}${i}`);
      records.push(
        rec(org, `${i}-a-on`, d(20), 'user.mfa.factor.activate', `a${i}`),
        rec(org, `${i}-a-off`, d(0), 'user.mfa.factor.deactivate', `a${i}`),
        rec(org, `${i}-b-off`, d(5), 'user.mfa.factor.deactivate', `b${i}`),
        rec(org, `${i}-c-off`, d(10), 'user.mfa.factor.deactivate', `c${i}`),
        rec(org, `${i}-c-on`, d(90), 'user.mfa.factor.activate', `c${i}`),
        deny('d', 1, 1),
        deny('d', 2, 2),
        ...(i % 2 ? [accept('d', 4), deny('d', 3, 3)] : [deny('d', 3, 3), accept('d', 4)]),
        deny('e', 1, 1),
        deny('e', 2, 2),
        accept('e', 3),
      );
    }
  }
  // The last rounds are decided once a later event moves the watermark past them.
  for (const org of orgs) records.push(rec(org, 'end', T0 + (rounds + 4) * 120 * MIN, 'x', 'nobody'));
  return { records, expected: orgs.length * rounds * 3 };
}

const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-unfollowed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('unfollowed and counted sequence rules under kill -9 (embedded)', () => {
  it('three kills mid-stream: every finding alerted exactly once', { timeout: 120_000 }, async () => {
    const dataDir = join(dir, 'embedded');
    const prefix = randomName('alu');
    const group = randomName('alerting');
    const config = {
      data_dir: dataDir,
      log_level: 'info',
      stream: { topic_prefix: prefix, partitions: 3 },
      alerting: {
        group,
        rules: RULES,
        clickhouse: false,
        max_batch_records: 10,
        max_batch_wait_ms: 20,
        allowed_lateness_ms: 7_200_000,
      },
    };
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    const orgs = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wonka'];
    const { records, expected: expectedFindings } = factorAndPushEvents(orgs, 60);
    const run = await killThriceThenDrain({ configPath, dataDir, prefix, alerting: config.alerting, records });
    expect(run.atRestart).toBeGreaterThan(0);
    expect(run.atRestart).toBeLessThan(records.length);
    expect(new Set(run.alertIds).size).toBe(expectedFindings);
    expect(run.alertIds).toHaveLength(expectedFindings);
  });
});
