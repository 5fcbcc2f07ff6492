/**
 * A rule testing an IP list on the live engine (embedded stream): an address in the list raises an alert, one
 * outside does not, and after the list file changes the next events are judged against the new list.
 */
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { IpLists } from '../../platform/iplists/lists.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import type { Alert } from './alert.js';
import { alertingSchema } from './config.js';
import { startAlerting } from './index.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-iplists-alerting-'));
let stream: EmbeddedStream;

beforeAll(async () => {
  stream = await openEmbeddedStream({ dataDir, logger: log });
}, 60_000);

afterAll(async () => {
  await stream?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const T0 = Date.parse('2026-03-02T10:00:00.000Z');
let seq = 0;
function signIn(ip: string) {
  const uuid = `ev-${seq}`;
  const ev = {
    uuid,
    published: new Date(T0 + seq++ * 1000).toISOString(),
    eventType: 'user.session.start',
    outcome: { result: 'SUCCESS' },
    actor: { alternateId: 'alice@example.com' },
    client: { ipAddress: ip },
  };
  return {
    key: 'acme',
    value: Buffer.from(JSON.stringify(ev)),
    headers: { [Header.org]: 'acme', [Header.source]: 'hook' },
  };
}

describe('a rule testing an IP list on the stream', () => {
  it('alerts for addresses in the list, and follows the file when it changes', async () => {
    const path = join(dataDir, 'anonymizers.txt');
    writeFileSync(path, '198.51.100.0/24\n');
    const lists = new IpLists({ ip_lists: [{ name: 'anonymizers', path }], reload_interval_ms: 100 });
    lists.start();
    const prefix = randomName('ipl');
    const t = topicNames(prefix);
    await stream.ensureTopics([
      { name: t.logs, partitions: 1 },
      { name: t.deadletter, partitions: 1 },
    ]);
    const alerting = await startAlerting({
      config: alertingSchema.parse({
        rules: [
          {
            id: 'anon.signin',
            severity: 'high',
            detection: 'eventType eq "user.session.start" and client.ipAddress in list("anonymizers")',
          },
        ],
        max_batch_wait_ms: 20,
        clickhouse: false,
      }),
      stream,
      topicPrefix: prefix,
      partitions: 1,
      logsTopic: t.logs,
      deadletterTopic: t.deadletter,
      logger: log,
      lists,
    });
    const alerts: Alert[] = [];
    const reader = await stream.consume({
      topic: alerting.topics.alerts,
      group: randomName('reader'),
      maxBatchWaitMs: 20,
      handler: async (b: { records: readonly ConsumedRecord[] }) =>
        void alerts.push(...b.records.map((r) => JSON.parse(r.value.toString()) as Alert)),
    });
    try {
      await stream.append(t.logs, [signIn('198.51.100.9'), signIn('203.0.113.9'), signIn('::ffff:198.51.100.10')]);
      await waitFor(async () => alerts.map((a) => a.event_ids.join()), {
        until: (ids) => ids.length >= 2,
        what: 'alerts for the two listed addresses',
      });
      expect(alerts.map((a) => a.event_ids)).toEqual([['ev-0'], ['ev-2']]);
      // The list moves; the next events are judged against the new one.
      writeFileSync(path, '# moved\n203.0.113.0/24\n');
      utimesSync(path, new Date(), new Date(Date.now() + 2000));
      await waitFor(async () => lists.contains('anonymizers', '203.0.113.9'), {
        until: (yes) => yes,
        what: 'the list file re-read',
      });
      await stream.append(t.logs, [signIn('198.51.100.9'), signIn('203.0.113.9')]);
      await waitFor(async () => alerts.map((a) => a.event_ids.join()), {
        until: (ids) => ids.length >= 3,
        what: 'an alert for the newly listed address',
      });
      expect(alerts.map((a) => a.event_ids)).toEqual([['ev-0'], ['ev-2'], ['ev-4']]);
    } finally {
      await reader.stop();
      await alerting.stop();
      lists.stop();
    }
  }, 60_000);
});
