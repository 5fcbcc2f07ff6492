/**
 * `append` spreads records over several idempotent producers by key
 * (kafka-stream.ts): appends in flight at once overlap, yet each key's records
 * arrive in the order they were appended, even when the appends were not
 * awaited one by one, and the bound on waiting records is the stream's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { ConsumedRecord, Consumer, Stream, StreamRecord } from '../types.js';
import { openKafkaStream } from './index.js';

let stream: Stream | undefined;
const consumers: Consumer[] = [];
afterEach(async () => {
  for (const c of consumers.splice(0)) await c.stop();
  await stream?.close();
  stream = undefined;
});

const KEYS = ['org0', 'org1', 'org2', 'org3', 'org4', 'org5', null] as const;

describe('kafka producer pool', () => {
  it('keeps each key in append order across 40 appends in flight at once over 3 producers', async () => {
    stream = await openKafkaStream({ brokers: kafkaBrokerList(), clientId: randomName('pool'), logger: silentLogger(), producers: 3 });
    const topic = randomName('t');
    await stream.ensureTopics([{ name: topic, partitions: 4 }]);
    let n = 0;
    const appends: StreamRecord[][] = Array.from({ length: 40 }, (_, a) =>
      Array.from({ length: 1 + (a % 5) }, (_, i) => {
        const key = KEYS[(a + i) % KEYS.length]!;
        return { key, value: Buffer.from(String(n)), headers: { n: String(n++) } };
      }),
    );
    await Promise.all(appends.map((records) => stream!.append(topic, records)));
    const sent = appends.flat();

    const got: ConsumedRecord[] = [];
    consumers.push(await stream.consume({ topic, group: randomName('g'), maxBatchWaitMs: 50, handler: async (b) => void got.push(...b.records) }));
    await waitFor(() => got.length >= sent.length, { timeoutMs: 30_000, what: `${sent.length} records` });
    expect(got).toHaveLength(sent.length);
    for (const key of KEYS.filter((k) => k !== null)) {
      const mine = got.filter((r) => r.key === key);
      expect(new Set(mine.map((r) => r.partition)).size, key).toBe(1);
      expect(mine.map((r) => Number(r.headers.n)), key).toEqual(sent.filter((r) => r.key === key).map((r) => Number(r.headers.n)));
    }
    expect(got.filter((r) => r.key === null).map((r) => Number(r.headers.n)).sort((a, b) => a - b))
      .toEqual(sent.filter((r) => r.key === null).map((r) => Number(r.headers.n)));
  }, 60_000);

  it('refuses a pool size that is not a positive integer, naming it', async () => {
    await expect(openKafkaStream({ brokers: kafkaBrokerList(), clientId: randomName('pool'), logger: silentLogger(), producers: 0 }))
      .rejects.toSatisfy((err) => err instanceof HooklogError && err.code === 'CONFIG_INVALID' && /producers/.test(err.message));
  });
});
