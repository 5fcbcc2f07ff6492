/**
 * runBackfill's storing on real Kafka: an event too large for any Kafka batch
 * would fail its page on every retry; it goes to the dead letters, cut short,
 * and the window completes. The page comes from a stand-in for the identity
 * client (the HTTP side is tested in test/e2e/backfill-kafka.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { Header, topicNames } from '../../platform/stream/headers.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { MAX_RECORD_BYTES, TRUNCATED_LETTER_BYTES } from '../../platform/stream/record-size.js';
import type { Consumer, ConsumedRecord, Stream } from '../../platform/stream/types.js';
import { kafkaBrokerList } from '../../test/kafka/inject.js';
import { validLogEvents } from '../../test/fixtures/index.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import type { IdentityClient, Page } from '../../platform/identity/client.js';
import { withPolicies } from '../../platform/identity/policies.js';
import { RateBudget } from '../../platform/identity/rate-limit.js';
import { runBackfill } from './backfill.js';

describe('backfill on Kafka', () => {
  let stream: Stream | undefined;
  const consumers: Consumer[] = [];
  afterEach(async () => {
    for (const c of consumers.splice(0)) await c.stop();
    await stream?.close();
  });

  it('dead-letters an event no Kafka batch holds, cut short, and completes the window', async () => {
    const s = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: randomName('bf'), logger: silentLogger() });
    stream = s;
    const topics = topicNames(randomName('bf'));
    await s.ensureTopics([
      { name: topics.logs, partitions: 1 },
      { name: topics.legacyEvents, partitions: 1 },
      { name: topics.deadletter, partitions: 1 },
      { name: topics.cursors, partitions: 1, compacted: true },
    ]);
    const [a, b] = validLogEvents();
    const items = [a!, { ...b!, padding: 'z'.repeat(MAX_RECORD_BYTES) }];
    const raw = items.map((i) => Buffer.from(JSON.stringify(i)));
    const baseUrl = 'https://org.example.com';
    const page: Page = { url: `${baseUrl}/api/v1/logs`, items, raw, next: null, rateLimit: null };
    const client = { getPage: async () => page } as unknown as IdentityClient;
    const now = Date.now();
    const progress = await runBackfill(
      {
        org: 'org-bf',
        baseUrl,
        source: 'logs',
        sinceMs: now - 3_600_000,
        untilMs: now - 60_000,
        client,
        budget: new RateBudget({ share: 1 }),
        stream: s,
        topics,
        policies: withPolicies({ append: { initialMs: 10, multiplier: 2, maxMs: 50, retries: 3, jitter: 0 } }),
        requests: () => 1,
      },
      new Map(),
    );
    expect(progress).toMatchObject({ done: true, events: 1 });

    const read = async (topic: string) => {
      const got: ConsumedRecord[] = [];
      consumers.push(
        await s.consume({
          topic,
          group: randomName('read'),
          maxBatchWaitMs: 20,
          handler: async (batch) => void got.push(...batch.records),
        }),
      );
      return got;
    };
    const logs = await read(topics.logs);
    const dead = await read(topics.deadletter);
    await waitFor(() => logs.length >= 1 && dead.length >= 1, {
      what: 'the event and the dead letter',
      seen: () => ({ 'logs.length': logs.length, 'dead.length': dead.length }),
    });
    expect(logs.map((r) => r.value)).toEqual([raw[0]]);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.value).toEqual(raw[1]!.subarray(0, TRUNCATED_LETTER_BYTES));
    expect(dead[0]!.headers[Header.truncatedFromBytes]).toBe(String(raw[1]!.length));
    expect(dead[0]!.headers[Header.reason]).toMatch(/^backfill item 1: an event of \d+ bytes, over the largest/);
  });
});
