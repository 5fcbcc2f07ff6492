/**
 * `kill -9` of `hooklog alert` three times while scheduled query rules run
 * over embedded ClickHouse, each kill after a different number of completed
 * runs: afterwards the alerts topic holds exactly one alert per result row.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { insertChunk } from '../../bench/analytics/load.js';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore } from '../../platform/store/index.js';
import { openEmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { alertingTopics } from './index.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { spawnAlert } from '../../test/support/alert-process.js';

const log = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'hooklog-alert-kill-scheduled-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SHARDS = 12;
const EVENTS = 240;
const runs = (out: string) => (out.match(/scheduled (alerts raised|rule ran)/g) ?? []).length;

describe('scheduled rules under kill -9 (embedded)', () => {
  it('three kills between and during runs: every result row alerted exactly once', { timeout: 180_000 }, async () => {
    const dataDir = join(dir, 'data');
    const prefix = randomName('alq');
    const database = randomName('alq');
    const t = topicNames(prefix);
    // One rule per shard of the events: each rule's runs alert its own rows, one atomic write per run.
    const rules = Array.from({ length: SHARDS }, (_, i) => ({
      id: `rows-${i}`,
      type: 'scheduled',
      every_ms: 1000,
      lookback_ms: 30 * 86_400_000,
      key: ['uuid'],
      sql: `SELECT org, uuid, published AS event_time FROM {db}.${EVENTS_TABLE} FINAL
            WHERE published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}
              AND cityHash64(uuid) % ${SHARDS} = {shard:UInt32}`,
      params: { shard: i },
    }));
    const config = {
      data_dir: dataDir,
      log_level: 'debug',
      stream: { topic_prefix: prefix, partitions: 1 },
      store: { database },
      alerting: { group: randomName('alerting'), rules, clickhouse: false, scheduled: true },
    };
    const configPath = join(dir, `${prefix}.yaml`);
    writeFileSync(configPath, stringify(config));

    const store = openStore({ database, dataDir, logger: log });
    await migrate(store, log);
    const now = Date.now();
    await insertChunk(
      store,
      Array.from({ length: EVENTS }, (_, i) => ({
        org: i % 2 ? 'acme' : 'globex',
        event: {
          uuid: `row-${i}`,
          published: new Date(now - 86_400_000 + i * 1000).toISOString(),
          eventType: 'user.session.start',
        },
      })),
    );
    await store.close();
    const stream0 = await openEmbeddedStream({ dataDir, logger: log });
    await stream0.ensureTopics([
      { name: t.logs, partitions: 1 },
      { name: t.deadletter, partitions: 1 },
    ]);
    await stream0.close();

    // Kill after 1, 5 and 9 completed runs of this process: before, amid and after the first round of rules.
    for (const after of [1, 5, 9]) {
      const proc = spawnAlert(configPath);
      await waitFor(() => runs(proc.output()), {
        until: (v) => v >= after,
        timeoutMs: 60_000,
        intervalMs: 2,
        what: 'runs',
        seen: () => proc.output().slice(-2000),
      });
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
    // A last run long enough for every rule to run twice, then a clean stop.
    const last = spawnAlert(configPath);
    await waitFor(() => runs(last.output()), {
      until: (n) => n >= 2 * SHARDS,
      timeoutMs: 60_000,
      what: 'final runs',
      seen: () => last.output().slice(-2000),
    });
    last.child.kill('SIGTERM');
    await last.exited;

    const stream = await openEmbeddedStream({ dataDir, logger: log });
    try {
      const topic = alertingTopics(prefix).alerts;
      const end = stream.endOffsets(topic);
      const seen: string[] = [];
      const group = randomName('reader');
      const reader = await stream.consume({
        topic,
        group,
        maxBatchWaitMs: 20,
        handler: async (b) => void seen.push(...b.records.map((r) => r.headers['hooklog-alert-id']!)),
      });
      try {
        await waitFor(
          async () => {
            const c = await stream.committedOffsets(topic, group);
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
      expect(new Set(seen).size).toBe(EVENTS);
      expect(seen).toHaveLength(EVENTS);
    } finally {
      await stream.close();
    }
  });
});
