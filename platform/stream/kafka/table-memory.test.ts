/**
 * What a compacted topic's long-lived reader (table.ts) keeps must be bounded by the topic's live keys and their
 * values, not by its history. The soak (issue 38) showed processes started later in a run, and every process after
 * a broker restart (a rejoin reads every compacted topic from the beginning again), holding more memory outside the
 * JS heap. Two causes, counted here:
 * - kafkajs hands each value as a slice of the whole fetch response; a kept record kept that response (up to a MiB
 *   per partition while catching up) alive, one per key;
 * - a tombstone left its key in the table for the life of the process (every user whose risk state ever expired);
 * - the compacted topics were never compacted in practice (Kafka compacts closed segments only, and closes one after
 *   7 days by default), so what such a reader reads at start grew with the run's history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { ConsumedRecord, Stream, StreamRecord } from '../types.js';
import { registry } from '../../metrics.js';
import { ConfigResourceTypes } from 'kafkajs';
import { quietKafka } from './client.js';
import { openKafkaStream } from './index.js';
import { COMPACTED_SEGMENT_MS } from './kafka-stream.js';

/** hooklog_kafka_table_<what>{topic}: what the reader of `topic` keeps, as /metrics shows it. */
async function kept(what: 'keys' | 'bytes', topic: string): Promise<number | undefined> {
  const m = await registry.getSingleMetric(`hooklog_kafka_table_${what}`)?.get();
  return m?.values.find((v) => v.labels.topic === topic)?.value;
}

const rec = (key: string, value: Buffer): StreamRecord => ({ key, value, headers: {} });
let stream: Stream;
beforeAll(async () => {
  stream = await openKafkaStream({
    brokers: kafkaBrokerList(),
    clientId: 'table-memory-test',
    instanceId: 'reader',
    logger: silentLogger(),
    compression: 'none',
  });
});
afterAll(() => stream.close());

/** The bytes the kept records hold alive: each distinct buffer under their values, whole. */
function heldBytes(records: Iterable<ConsumedRecord>): number {
  const buffers = new Set<ArrayBufferLike>();
  for (const r of records) buffers.add(r.value.buffer);
  return [...buffers].reduce((n, b) => n + b.byteLength, 0);
}

describe("a compacted topic's long-lived reader", () => {
  it('keeps each latest value in its own bytes, not the fetch response it came in', async () => {
    const topic = randomName('table-memory');
    await stream.ensureTopics([{ name: topic, partitions: 1, compacted: true }]);
    // History: 2,000 records of 1 KiB over 20 keys (2 MiB, not yet compacted, as in any topic's active segment).
    const history = Array.from({ length: 2_000 }, (_, i) => rec(`k${i % 20}`, Buffer.alloc(1024, i % 251)));
    for (let i = 0; i < history.length; i += 200) await stream.append(topic, history.slice(i, i + 200));
    await stream.follow(topic);
    const latest = await stream.readLatestByKey(topic);
    expect(latest.size).toBe(20);
    const values = [...latest.values()].reduce((n, r) => n + r.value.length, 0);
    expect(values).toBe(20 * 1024);
    // Before: the 20 values were slices of the last fetch responses (about 1 MiB held for 20 KiB).
    expect(heldBytes(latest.values())).toBe(values);
    expect(await kept('keys', topic)).toBe(20);
    expect(await kept('bytes', topic)).toBe(20 * 1024);
  });

  it('forgets a key at its tombstone', async () => {
    const topic = randomName('table-tombstones');
    await stream.ensureTopics([{ name: topic, partitions: 1, compacted: true }]);
    await stream.follow(topic);
    // 500 keys come and go (a risk state per user, removed when it expires); 10 stay.
    const keys = Array.from({ length: 500 }, (_, i) => `user-${i}`);
    await stream.append(
      topic,
      keys.map((k) => rec(k, Buffer.from('state'))),
    );
    await stream.append(
      topic,
      keys.slice(10).map((k) => rec(k, Buffer.alloc(0))),
    );
    const latest = await stream.readLatestByKey(topic);
    // Before: 500 keys, 490 of them with an empty value kept for the life of the process.
    expect([...latest.keys()].sort()).toEqual(keys.slice(0, 10).sort());
    expect(await kept('keys', topic)).toBe(10);
    expect(await kept('bytes', topic)).toBe(10 * 'state'.length);
  });

  it('reads a topic Kafka compacts: hooklog creates compacted topics with segments closing every 10 minutes', async () => {
    const compacted = randomName('compacted-config');
    const plain = randomName('plain-config');
    await stream.ensureTopics([
      { name: compacted, partitions: 1, compacted: true },
      { name: plain, partitions: 1 },
    ]);
    const admin = quietKafka({ clientId: randomName('configs'), brokers: kafkaBrokerList() }).admin();
    await admin.connect();
    try {
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [compacted, plain].map((name) => ({
          type: ConfigResourceTypes.TOPIC,
          name,
          configNames: ['cleanup.policy', 'segment.ms'],
        })),
      });
      const config = (topic: string) =>
        Object.fromEntries(
          resources.find((r) => r.resourceName === topic)!.configEntries.map((e) => [e.configName, e.configValue]),
        );
      // Before: segment.ms was the broker's default, 604800000 (7 days), for both.
      expect(config(compacted)).toEqual({ 'cleanup.policy': 'compact', 'segment.ms': String(COMPACTED_SEGMENT_MS) });
      expect(config(plain)['cleanup.policy']).toBe('delete');
      expect(Number(config(plain)['segment.ms'])).toBeGreaterThan(COMPACTED_SEGMENT_MS);
    } finally {
      await admin.disconnect();
    }
  });
});
