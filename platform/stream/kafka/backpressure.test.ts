/**
 * Back-pressure on a real broker: while the handler is stuck, a partition's
 * buffer fills, fetching pauses, and records appended meanwhile stay in Kafka.
 * Once the handler moves again fetching resumes, and every record is handed
 * over exactly once, in order — pausing and re-fetching lose and repeat nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Consumer, Stream, StreamRecord } from '../types.js';
import { openKafkaStream, type KafkaConsumerEvent } from './index.js';

let stream: Stream | undefined;
const consumers: Consumer[] = [];
afterEach(async () => {
  for (const c of consumers.splice(0)) await c.stop();
  await stream?.close();
});

const records = (from: number, n: number): StreamRecord[] =>
  Array.from({ length: n }, (_, i) => ({ key: 'org', value: Buffer.from(String(from + i)), headers: {} }));

describe('kafka consumer back-pressure', () => {
  it('pauses a full partition, resumes it when drained, and hands every record over once, in order', async () => {
    const events: KafkaConsumerEvent[] = [];
    stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('bp'),
      logger: silentLogger(),
      observer: (e) => void events.push(e),
    });
    const topic = randomName('t');
    const group = randomName('g');
    await stream.ensureTopics([{ name: topic, partitions: 1 }]);
    await stream.append(topic, records(0, 50));

    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const got: number[] = [];
    let calls = 0;
    consumers.push(
      await stream.consume({
        topic,
        group,
        maxBatchRecords: 10,
        maxBatchWaitMs: 20,
        maxBufferedRecords: 20,
        handler: async (b) => {
          calls++;
          await gate;
          got.push(...b.records.map((r) => Number(r.value.toString())));
        },
      }),
    );
    await waitFor(() => events, {
      until: (seenEvents) => seenEvents.some((e) => e.type === 'paused'),
      what: 'partition paused',
    });
    for (let i = 50; i < 300; i += 25) await stream.append(topic, records(i, 25));
    // Stuck handler: one call in flight, nothing more handed over, nothing committed.
    expect(calls).toBe(1);
    expect((await stream.committedOffsets(topic, group)).get(0)).toBeUndefined();

    release();
    await waitFor(() => got.length, { until: (n) => n >= 300, what: 'all 300 records', timeoutMs: 30_000 });
    expect(got).toEqual(Array.from({ length: 300 }, (_, i) => i));
    expect(events.some((e) => e.type === 'resumed')).toBe(true);
    await waitFor(async () => (await stream!.committedOffsets(topic, group)).get(0), {
      until: (n) => n === 300,
      what: 'commit at 300',
    });
  });
});
