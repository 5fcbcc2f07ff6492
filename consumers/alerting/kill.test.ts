/**
 * `kill -9` of `hooklog alert` (a real child process) three times while it
 * works through the logs topic: afterwards the alerts topic holds exactly one
 * alert per finding — none lost, none twice. On Kafka (each restart waits for
 * the broker to evict the killed member: the session time-out, here the
 * broker's least, 6 s) and on the embedded log (the lock of a killed process
 * is stale and taken over).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import type { Stream } from '../../platform/stream/types.js';
import { kafkaBrokers } from '../../test/kafka/inject.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { alertingSchema } from './config.js';
import { alertingTopics, startAlerting } from './index.js';
import { TEST_RULES, findingEvents } from './testing/events.js';
import { spawnAlert } from '../../test/support/alert-process.js';

const log = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-'));
let stream: Stream;

beforeAll(async () => {
  stream = await openKafkaStream({
    brokers: kafkaBrokers().split(','),
    clientId: randomName('alert-kill-test'),
    logger: log,
  });
});
afterAll(async () => {
  await stream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('hooklog alert under kill -9 (Kafka)', () => {
  it('three kills mid-stream: every finding alerted exactly once', { timeout: 300_000 }, async () => {
    const prefix = randomName('alk');
    const group = randomName('alerting');
    const t = topicNames(prefix);
    const config = {
      data_dir: join(dir, 'data'),
      log_level: 'warn',
      stream: {
        topic_prefix: prefix,
        partitions: 3,
        // The broker's least session time-out (group.min.session.timeout.ms): a restart waits that long for the
        // killed member's eviction, four times.
        kafka: { brokers: kafkaBrokers().split(','), client_id: randomName('hl'), session_timeout_ms: 6_000 },
      },
      alerting: {
        group,
        rules: TEST_RULES,
        clickhouse: false,
        max_batch_records: 10,
        max_batch_wait_ms: 20,
        allowed_lateness_ms: 60_000,
      },
    };
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    await stream.ensureTopics([{ name: t.logs, partitions: 3 }]);
    const orgs = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wonka'];
    const { records, expectedFindings } = findingEvents(orgs, 100);
    for (let i = 0; i < records.length; i += 500) await stream.append(t.logs, records.slice(i, i + 500));
    const total = records.length;
    const committed = async () =>
      [...(await stream.committedOffsets(t.logs, group)).values()].reduce((a, b) => a + b, 0);

    const killedAt: number[] = [];
    for (let k = 0; k < 3; k++) {
      const before = await committed();
      const proc = spawnAlert(configPath);
      // Kill once this run has made progress of its own: mid-stream, windows open, a transaction likely in flight.
      await waitFor(async () => await committed(), {
        until: (n) => n >= before + 150,
        timeoutMs: 90_000,
        intervalMs: 10,
        what: `progress in run ${k + 1}`,
        seen: () => proc.output(),
      });
      proc.child.kill('SIGKILL');
      await proc.exited;
      killedAt.push(await committed());
    }
    expect(killedAt[2]!).toBeLessThan(total); // every kill landed before the end
    expect(killedAt[0]!).toBeGreaterThan(0);

    const last = spawnAlert(configPath);
    try {
      await waitFor(async () => await committed(), {
        until: (v) => v === total,
        timeoutMs: 90_000,
        what: 'all evaluated',
        seen: () => last.output(),
      });
      const seen: string[] = [];
      const reader = await stream.consume({
        topic: alertingTopics(prefix).alerts,
        group: randomName('reader'),
        maxBatchWaitMs: 20,
        handler: async (b) => void seen.push(...b.records.map((r) => r.headers['hooklog-alert-id']!)),
      });
      try {
        await waitFor(() => seen.length, {
          until: (n) => n >= expectedFindings,
          timeoutMs: 90_000,
          what: 'alerts',
          seen: () => `alerting's output: ${last.output().slice(-1500)}`,
        });
      } finally {
        await reader.stop();
      }
      expect(new Set(seen).size).toBe(expectedFindings);
      expect(seen).toHaveLength(expectedFindings);
    } finally {
      last.child.kill('SIGTERM');
      await last.exited;
    }
  });
});

describe('hooklog alert under kill -9 (embedded)', () => {
  it('three kills mid-stream: every finding alerted exactly once', { timeout: 120_000 }, async () => {
    const dataDir = join(dir, 'embedded');
    const prefix = randomName('ale');
    const group = randomName('alerting');
    const t = topicNames(prefix);
    const config = {
      data_dir: dataDir,
      log_level: 'info',
      stream: { topic_prefix: prefix, partitions: 3 },
      alerting: {
        group,
        rules: TEST_RULES,
        clickhouse: false,
        max_batch_records: 10,
        max_batch_wait_ms: 20,
        allowed_lateness_ms: 60_000,
      },
    };
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));
    const orgs = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wonka'];
    const { records, expectedFindings } = findingEvents(orgs, 100);
    let local = await openEmbeddedStream({ dataDir, logger: log });
    await local.ensureTopics([
      { name: t.logs, partitions: 3 },
      { name: t.deadletter, partitions: 1 },
    ]);
    for (let i = 0; i < records.length; i += 500) await local.append(t.logs, records.slice(i, i + 500));
    await local.close();

    for (let k = 0; k < 3; k++) {
      const proc = spawnAlert(configPath);
      // Each evaluated batch with alerts logs a line; kill after a few of this run's own batches.
      await waitFor(() => (proc.output().match(/alerts raised/g) ?? []).length, {
        until: (n) => n >= 6,
        timeoutMs: 60_000,
        intervalMs: 5,
        what: 'progress',
        seen: () => proc.output(),
      });
      proc.child.kill('SIGKILL');
      await proc.exited;
    }

    // Drain in this process with the same code `hooklog alert` runs, then count.
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
      const seen: string[] = [];
      const reader = await local.consume({
        topic: alertingTopics(prefix).alerts,
        group: randomName('reader'),
        maxBatchWaitMs: 20,
        handler: async (b) => void seen.push(...b.records.map((r) => r.headers['hooklog-alert-id']!)),
      });
      try {
        await waitFor(() => seen.length, { until: (n) => n >= expectedFindings, what: 'alerts' });
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
