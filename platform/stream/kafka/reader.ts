/**
 * Reads a topic from its beginning up to the end it had when the call started,
 * keeping the latest record per key: how cursors are restored on start-up.
 *
 * kafkajs has no group-less consumer, so a short-lived group with a random name
 * reads and never commits (the broker drops an empty group with no offsets).
 * The end is the last stable offset (kafkajs lists offsets read_committed), so
 * an open transaction never makes us wait for records we are not allowed to see.
 * Progress is tracked from END_BATCH_PROCESS events, not from eachBatch, because
 * batches holding only transaction markers or aborted records never reach
 * eachBatch — and every appendAtomically leaves such a marker at the tail.
 */
import { randomBytes } from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import { HooklogError } from '../../errors.js';
import type { ConsumedRecord } from '../types.js';
import { toConsumed } from './client.js';
import { classifyKafkaError } from './errors.js';
import type { ResolvedKafkaOptions } from './options.js';

export async function readLatestByKey(
  kafka: Kafka,
  admin: Admin,
  o: ResolvedKafkaOptions,
  topic: string,
  only?: readonly number[],
  timeoutMs = 30_000,
): Promise<Map<string, ConsumedRecord>> {
  let ends: Map<number, number>;
  const position = new Map<number, number>();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    ends = new Map(
      offsets
        .filter((p) => Number(p.high) > Number(p.low) && (!only || only.includes(p.partition)))
        .map((p) => [p.partition, Number(p.high)]),
    );
    for (const p of offsets) position.set(p.partition, Number(p.low));
  } catch (err) {
    throw classifyKafkaError(err, `reading the end offsets of ${topic}`);
  }
  const latest = new Map<string, ConsumedRecord>();
  if (ends.size === 0) return latest;

  const done = () => [...ends].every(([p, end]) => (position.get(p) ?? 0) >= end);
  const consumer = kafka.consumer({
    groupId: `${o.topicPrefix}.read-latest.${randomBytes(6).toString('hex')}`,
    maxWaitTimeInMs: 200,
    allowAutoTopicCreation: false,
  });
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    const { partition, lastOffset } = e.payload;
    position.set(partition, Math.max(position.get(partition) ?? 0, Number(lastOffset) + 1));
    if (done()) finish();
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          const r = toConsumed(topic, batch.partition, m);
          const end = ends.get(batch.partition);
          // Records appended after the call started are not part of the answer.
          if (r.key !== null && end !== undefined && r.offset < end) latest.set(r.key, r);
        }
      },
    });
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    if ((await Promise.race([finished, timedOut])) === 'timeout') {
      throw new HooklogError('STREAM_UNAVAILABLE', `reading ${topic} to its end took longer than ${timeoutMs} ms`, {
        retriable: true,
      });
    }
    return latest;
  } catch (err) {
    throw classifyKafkaError(err, `reading ${topic}`);
  } finally {
    clearTimeout(timer);
    await consumer.disconnect().catch((err) => o.logger.warn({ topic, err }, 'disconnecting the reader failed'));
  }
}
