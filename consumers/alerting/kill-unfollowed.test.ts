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
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { alertingSchema } from './config.js';
import { alertingTopics, startAlerting } from './index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import { spawnAlert } from '../../test/support/alert-process.js';

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

const log = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-unfollowed-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('unfollowed and counted sequence rules under kill -9 (embedded)', () => {
  it('three kills mid-stream: every finding alerted exactly once', { timeout: 120_000 }, async () => {
    const dataDir = join(dir, 'embedded');
    const prefix = randomName('alu');
    const group = randomName('alerting');
    const t = topicNames(prefix);
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
    let local = await openEmbeddedStream({ dataDir, logger: log });
    await local.ensureTopics([
      { name: t.logs, partitions: 3 },
      { name: t.deadletter, partitions: 1 },
    ]);
    for (let i = 0; i < records.length; i += 500) await local.append(t.logs, records.slice(i, i + 500));
    await local.close();

    for (let k = 0; k < 3; k++) {
      const proc = spawnAlert(configPath);
      await waitFor(() => (proc.output().match(/alerts raised/g) ?? []).length, {
        until: (n) => n >= 4,
        timeoutMs: 60_000,
        intervalMs: 5,
        what: 'progress',
        seen: () => proc.output(),
      });
      proc.child.kill('SIGKILL');
      await proc.exited;
    }

    local = await openEmbeddedStream({ dataDir, logger: log });
    try {
      const committed = async () =>
        [...(await local.committedOffsets(t.logs, group)).values()].reduce((a, b) => a + b, 0);
      const atRestart = await committed();
      expect(atRestart).toBeGreaterThan(0);
      expect(atRestart).toBeLessThan(records.length);
      const alerting = await startAlerting({
        config: alertingSchema.parse(config.alerting),
        stream: local,
        topicPrefix: prefix,
        partitions: 3,
        logsTopic: t.logs,
        deadletterTopic: t.deadletter,
        logger: log,
      });
      try {
        await waitFor(async () => await committed(), { until: (v) => v === records.length, what: 'drained' });
      } finally {
        await alerting.stop();
      }
      // Read the alerts topic to its end (everything appended by now): a repeat would be in there too.
      const seen: string[] = [];
      const alertsTopic = alertingTopics(prefix).alerts;
      const end = local.endOffsets(alertsTopic);
      const readerGroup = randomName('reader');
      const reader = await local.consume({
        topic: alertsTopic,
        group: readerGroup,
        maxBatchWaitMs: 20,
        handler: async (b) => void seen.push(...b.records.map((r) => r.headers['hooklog-alert-id']!)),
      });
      try {
        await waitFor(
          async () => {
            const c = await local.committedOffsets(alertsTopic, readerGroup);
            return [...end].map(([p, next]) => ({ partition: p, next, committed: c.get(p) ?? 0 }));
          },
          {
            until: (parts) => parts.every((x) => x.committed >= x.next),
            what: 'reading the alerts',
            seen: () => `${seen.length} alerts read`,
          },
        );
      } finally {
        await reader.stop();
      }
      expect(new Set(seen).size).toBe(expectedFindings);
      expect(seen).toHaveLength(expectedFindings);
    } finally {
      await local.close();
    }
  });
});
