/**
 * `kill -9` of `hooklog alert` three times while a stateful rule (impossible
 * travel, events out of order) works through the logs topic on the embedded
 * log: the per-user state and the held-back events live in the checkpoint
 * written atomically with the alerts, so afterwards the alerts topic holds
 * exactly one alert per finding. (The Kafka path of the same checkpoint is
 * killed in kill.test.ts.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { alertingSchema } from './config.js';
import { alertingTopics, startAlerting } from './index.js';
import { TRAVEL_RULES, travelEvents } from './testing/events.js';
import { spawnAlert } from '../../test/support/alert-process.js';

const log = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-stateful-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a stateful rule under kill -9 (embedded)', () => {
  it('three kills mid-stream: every impossible trip alerted exactly once', { timeout: 120_000 }, async () => {
    const dataDir = join(dir, 'embedded');
    const prefix = randomName('als');
    const group = randomName('alerting');
    const t = topicNames(prefix);
    const config = {
      data_dir: dataDir,
      log_level: 'info',
      stream: { topic_prefix: prefix, partitions: 3 },
      alerting: {
        group,
        rules: TRAVEL_RULES,
        clickhouse: false,
        max_batch_records: 10,
        max_batch_wait_ms: 20,
        allowed_lateness_ms: 7_200_000,
      },
    };
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    const orgs = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wonka'];
    const { records, expectedFindings } = travelEvents(orgs, 80);
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
