/**
 * `append` spreads appends over several idempotent producers by the key of
 * their first record (kafka-stream.ts): one org's appends in flight at once
 * stay in order, and an append's records keep their exact order across keys.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { ConsumedRecord, Consumer, Stream, StreamRecord } from '../types.js';
import { openKafkaStream } from './index.js';
import { renderMetrics } from '../../metrics.js';
import { total } from '../../../test/support/metrics.js';

/** The append path's produce requests and records sent so far in this process. */
async function produced(): Promise<{ requests: number; records: number }> {
  const text = (await renderMetrics()).body;
  return {
    requests: total(text, 'hooklog_kafka_produce_requests_total'),
    records: total(text, 'hooklog_kafka_produced_records_total'),
  };
}

let stream: Stream | undefined;
const consumers: Consumer[] = [];
afterEach(async () => {
  for (const c of consumers.splice(0)) await c.stop();
  await stream?.close();
  stream = undefined;
});

const KEYS = ['org0', 'org1', 'org2', 'org3', 'org4', 'org5'] as const;

async function readAll(s: Stream, topic: string, n: number): Promise<ConsumedRecord[]> {
  const got: ConsumedRecord[] = [];
  consumers.push(
    await s.consume({
      topic,
      group: randomName('g'),
      maxBatchWaitMs: 50,
      handler: async (b) => void got.push(...b.records),
    }),
  );
  await waitFor(() => got.length, { until: (count) => count >= n, timeoutMs: 30_000, what: `${n} records` });
  expect(got).toHaveLength(n);
  return got;
}

describe('kafka producer pool', () => {
  it('keeps each org in order across 40 one-org appends in flight at once over 3 producers', async () => {
    stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('pool'),
      logger: silentLogger(),
      producers: 3,
    });
    const topic = randomName('t');
    await stream.ensureTopics([{ name: topic, partitions: 4 }]);
    let n = 0;
    // Like hook deliveries: each append is one org's events, many in flight at once.
    const appends: StreamRecord[][] = Array.from({ length: 40 }, (_, a) =>
      Array.from({ length: 1 + (a % 5) }, () => ({
        key: KEYS[a % KEYS.length]!,
        value: Buffer.from(String(n)),
        headers: { n: String(n++) },
      })),
    );
    const before = await produced();
    await Promise.all(appends.map((records) => stream!.append(topic, records)));
    const sent = appends.flat();
    // Counted once each, in requests that coalesced the appends queued behind each producer's first.
    const after = await produced();
    expect(after.records - before.records).toBe(sent.length);
    expect(after.requests - before.requests).toBeGreaterThanOrEqual(1);
    expect(after.requests - before.requests).toBeLessThan(appends.length);
    const got = await readAll(stream, topic, sent.length);
    for (const key of KEYS) {
      const mine = got.filter((r) => r.key === key);
      expect(new Set(mine.map((r) => r.partition)).size, key).toBe(1);
      expect(
        mine.map((r) => Number(r.headers.n)),
        key,
      ).toEqual(sent.filter((r) => r.key === key).map((r) => Number(r.headers.n)));
    }
  }, 60_000);

  it("keeps an append's records in their exact order across keys, appends made one after another too", async () => {
    stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('pool'),
      logger: silentLogger(),
      producers: 4,
    });
    const topic = randomName('t');
    await stream.ensureTopics([{ name: topic, partitions: 1 }]);
    // Consumers such as alerting follow event time per partition across orgs: the order appended is the order read.
    const sent: StreamRecord[] = Array.from({ length: 300 }, (_, i) => ({
      key: i % 7 === 0 ? null : KEYS[i % KEYS.length]!,
      value: Buffer.from(String(i)),
      headers: {},
    }));
    for (let i = 0; i < sent.length; i += 50) await stream.append(topic, sent.slice(i, i + 50));
    const got = await readAll(stream, topic, sent.length);
    expect(got.map((r) => Number(r.value.toString()))).toEqual(sent.map((_, i) => i));
  }, 60_000);

  it('refuses a pool size that is not a positive integer, naming it', async () => {
    await expect(
      openKafkaStream({
        brokers: kafkaBrokerList(),
        clientId: randomName('pool'),
        logger: silentLogger(),
        producers: 0,
      }),
    ).rejects.toSatisfy(
      (err) => err instanceof HooklogError && err.code === 'CONFIG_INVALID' && /producers/.test(err.message),
    );
  });
});
