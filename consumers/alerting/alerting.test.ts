/**
 * The alerting consumer on real parts (embedded stream + chdb): alerts reach
 * the alerts topic, the ClickHouse table and a webhook that fails and then
 * recovers — every alert once, in order per org — and a restart mid-stream
 * neither loses nor repeats a finding.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { topicNames } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import type { Alert } from './alert.js';
import { alertingSchema } from './config.js';
import { startAlerting, type Alerting } from './index.js';
import { webhookBody } from './outputs/format.js';
import { TEST_RULES, findingEvents } from './testing/events.js';

const log = silentLogger();
const dataDir = mkdtempSync(join(tmpdir(), 'hooklog-alerting-'));
let store: Store;
let stream: EmbeddedStream;

beforeAll(async () => {
  store = openStore({ database: randomName('alerting'), dataDir, logger: log });
  await migrate(store, log);
  await store.command(`SYSTEM STOP MERGES ${store.database}.alerts`);
  stream = await openEmbeddedStream({ dataDir, logger: log });
}, 60_000);

afterAll(async () => {
  await stream?.close();
  await store?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A receiver answering 503 to the first `failFirst` requests (a "down" phase), then 200. */
function flakyReceiver(failFirst: number) {
  const got: Array<{ id: string; body: Alert }> = [];
  let requests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      if (requests <= failFirst) {
        res.writeHead(503).end();
        return;
      }
      got.push({
        id: String(req.headers['x-hooklog-alert-id']),
        body: JSON.parse(Buffer.concat(chunks).toString()) as Alert,
      });
      res.writeHead(200).end();
    });
  });
  return {
    got,
    requests: () => requests,
    url: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`,
    listen: () => new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r())),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The rule engine has committed every logs record appended so far; its alerts are appended before that commit. */
async function drained(group: string, logsTopic: string): Promise<void> {
  const end = stream.endOffsets(logsTopic);
  await waitFor(
    async () => {
      const committed = await stream.committedOffsets(logsTopic, group);
      return [...end].map(([p, next]) => ({ partition: p, next, committed: committed.get(p) ?? 0 }));
    },
    { until: (parts) => parts.every((x) => x.committed >= x.next), what: `${group} to commit ${logsTopic}` },
  );
}

async function readTopic(topic: string): Promise<ConsumedRecord[]> {
  const out: ConsumedRecord[] = [];
  const group = randomName('reader');
  // Everything appended so far (the caller waits for the appends it cares about first).
  const end = stream.endOffsets(topic);
  const c = await stream.consume({
    topic,
    group,
    maxBatchWaitMs: 20,
    handler: async (b) => void out.push(...b.records),
  });
  try {
    // Read up to the end offsets taken above: the reader has committed past every record they cover.
    await waitFor(
      async () => {
        const committed = await stream.committedOffsets(topic, group);
        return [...end].map(([p, next]) => ({ partition: p, next, committed: committed.get(p) ?? 0 }));
      },
      { until: (parts) => parts.every((x) => x.committed >= x.next), what: `reading ${topic} to its end` },
    );
  } finally {
    await c.stop();
  }
  return out;
}

function start(prefix: string, webhookUrl: string | null, group = 'alerting'): Promise<Alerting> {
  const config = alertingSchema.parse({
    group,
    rules: TEST_RULES,
    allowed_lateness_ms: 60_000,
    max_batch_records: 7,
    max_batch_wait_ms: 20,
    webhooks: webhookUrl ? [{ name: 'ops', url: webhookUrl, max_batch_records: 5 }] : [],
  });
  const t = topicNames(prefix);
  return startAlerting({
    config,
    stream,
    store,
    topicPrefix: prefix,
    partitions: 2,
    logsTopic: t.logs,
    deadletterTopic: t.deadletter,
    logger: log,
    webhookRetryPolicy: { initialMs: 10, multiplier: 2, maxMs: 100, retries: Infinity, jitter: 0 },
  });
}

describe('alerting consumer', () => {
  it('delivers every finding once to the topic, ClickHouse and a webhook that fails then recovers, in order per org', async () => {
    const prefix = randomName('al');
    const t = topicNames(prefix);
    await stream.ensureTopics([
      { name: t.logs, partitions: 2 },
      { name: t.deadletter, partitions: 1 },
    ]);
    const receiver = flakyReceiver(12);
    await receiver.listen();
    const alerting = await start(prefix, receiver.url());
    try {
      const { records, expectedFindings } = findingEvents(['acme', 'globex', 'initech'], 10);
      for (let i = 0; i < records.length; i += 9) await stream.append(t.logs, records.slice(i, i + 9));
      await waitFor(() => receiver.got.length, {
        until: (n) => n >= expectedFindings,
        timeoutMs: 30_000,
        what: 'webhook alerts',
      });
      expect(receiver.requests()).toBeGreaterThan(expectedFindings); // it did fail first

      await drained('alerting', t.logs);
      const topic = await readTopic(alerting.topics.alerts);
      const ids = topic.map((r) => r.headers['hooklog-alert-id']);
      expect(ids).toHaveLength(expectedFindings);
      expect(new Set(ids).size).toBe(expectedFindings);

      const hooked = receiver.got.map((g) => g.id);
      expect(new Set(hooked).size).toBe(hooked.length);
      expect(hooked.sort()).toEqual([...ids].sort());
      for (const org of ['acme', 'globex', 'initech']) {
        const inTopic = topic.filter((r) => r.key === org).map((r) => r.headers['hooklog-alert-id']);
        expect(receiver.got.filter((g) => g.body.org === org).map((g) => g.id)).toEqual(inTopic);
      }

      const db = store.database;
      await waitFor(
        async () => {
          const [row] = await store.query<{ n: string }>(
            `SELECT count() AS n FROM ${db}.alerts WHERE org IN ('acme','globex','initech')`,
          );
          return Number(row!.n);
        },
        { until: (n) => n >= expectedFindings, what: 'alerts table' },
      );
      const [row] = await store.query<{ n: string; u: string }>(
        `SELECT count() AS n, uniqExact(alert_id) AS u FROM ${db}.alerts`,
      );
      expect([Number(row!.n), Number(row!.u)]).toEqual([expectedFindings, expectedFindings]);
    } finally {
      await alerting.stop();
      await receiver.close();
    }
  });

  it('a restart mid-stream neither loses nor repeats a finding', async () => {
    const prefix = randomName('al');
    const t = topicNames(prefix);
    await stream.ensureTopics([
      { name: t.logs, partitions: 2 },
      { name: t.deadletter, partitions: 1 },
    ]);
    const { records, expectedFindings } = findingEvents(['acme', 'globex'], 12);
    const half = Math.floor(records.length / 2) + 3; // not on a round boundary: windows are open at the restart
    let alerting = await start(prefix, null, 'restart');
    await stream.append(t.logs, records.slice(0, half));
    await waitFor(() => alerting.counters.events, { until: (v) => v >= half, what: 'first half evaluated' });
    await alerting.stop();
    alerting = await start(prefix, null, 'restart');
    try {
      await stream.append(t.logs, records.slice(half));
      await waitFor(() => alerting.counters.events, {
        until: (n) => n >= records.length - half,
        what: 'second half evaluated',
      });
      await drained('restart', t.logs);
      const ids = (await readTopic(alerting.topics.alerts)).map((r) => r.headers['hooklog-alert-id']);
      expect(ids).toHaveLength(expectedFindings);
      expect(new Set(ids).size).toBe(expectedFindings);
    } finally {
      await alerting.stop();
    }
  });

  it('formats Slack-compatible messages', () => {
    const a = {
      alert_id: 'abc',
      rule_id: 'r',
      rule_title: 'Brute force',
      severity: 'high',
      kind: 'threshold',
      org: 'acme',
      key: '["10.0.0.1"]',
      event_time: '2024-05-01T10:00:00.000Z',
      first_event_time: '2024-05-01T09:59:00.000Z',
      count: 3,
      event_ids: [],
    } as const;
    const body = JSON.parse(webhookBody(a, 'slack')) as { text: string };
    expect(body.text).toContain('*[HIGH] Brute force*');
    expect(body.text).toContain('["10.0.0.1"]');
  });
});
