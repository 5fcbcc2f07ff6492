/**
 * The broker restarts while records are being appended. Appends made during the
 * outage either succeed once kafkajs reconnects or fail with a retriable error
 * (never a silent loss), and afterwards every acknowledged record is in the
 * topic exactly once: the idempotent producer's retries across the restart
 * write nothing twice.
 *
 * This test restarts a broker of its own (test/kafka/broker.ts), not the run's
 * shared one, which other test files are using at the same time.
 */
import { quietKafka } from './client.js';
import { afterAll, describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { startKafkaBroker, type KafkaBroker } from '../../../test/kafka/broker.js';
import type { Consumer, Stream, StreamRecord } from '../types.js';
import { openKafkaStream } from './index.js';

let broker: KafkaBroker | undefined;
const streams: Stream[] = [];
const consumers: Consumer[] = [];
afterAll(async () => {
  for (const c of consumers) await c.stop();
  for (const s of streams) await s.close();
  await broker?.stop();
});

const open = async (b: KafkaBroker) => {
  const s = await openKafkaStream({
    brokers: [b.brokers],
    clientId: randomName('restart'),
    logger: silentLogger(),
    appendTimeoutMs: 3_000,
  });
  streams.push(s);
  return s;
};

describe('kafka broker restart', () => {
  it('keeps every acknowledged record exactly once across a broker restart', async () => {
    broker = await startKafkaBroker().catch((err: Error) => {
      throw new Error(
        `this test restarts a Kafka broker of its own, so it needs Java 17+ and Maven even with KAFKA_BROKERS set: ${err.message}`,
      );
    });
    const producer = await open(broker);
    const topic = randomName('t');
    await producer.ensureTopics([{ name: topic, partitions: 3 }]);

    const acked = new Set<string>();
    const failures: HooklogError[] = [];
    let slowest = 0;
    let restartDone = false;
    let ackedAfterRestart = 0;
    let restarted: Promise<void> | undefined;
    // Append one batch at a time until the restart is over and appends succeed again (bounded).
    for (let i = 0; i < 2_000 && !(restartDone && ackedAfterRestart >= 5); i++) {
      const batch: StreamRecord[] = Array.from({ length: 10 }, (_, j) => ({
        key: `org${j % 5}`,
        value: Buffer.from(`${i}-${j}`),
        headers: { id: `${i}-${j}` },
      }));
      if (i === 10) restarted = broker.restart().then(() => void (restartDone = true));
      const t0 = Date.now();
      try {
        await producer.append(topic, batch);
        batch.forEach((r) => acked.add(r.headers.id!));
        if (restartDone) ackedAfterRestart++;
      } catch (err) {
        expect(err).toBeInstanceOf(HooklogError);
        expect((err as HooklogError).retriable).toBe(true);
        failures.push(err as HooklogError);
      }
      slowest = Math.max(slowest, Date.now() - t0);
    }
    await restarted;
    expect(restartDone && ackedAfterRestart >= 5).toBe(true);
    // The loop really ran into the outage: some append failed or waited for the broker to return.
    expect(failures.length > 0 || slowest > 1_000).toBe(true);
    // Sends that timed out for us may still complete: close() waits for them, then the log stops growing.
    await producer.close();

    const reader = await open(broker);
    const count = new Map<string, number>();
    let total = 0;
    consumers.push(
      await reader.consume({
        topic,
        group: randomName('g'),
        maxBatchWaitMs: 20,
        handler: async (b) => {
          total += b.records.length;
          for (const r of b.records) count.set(r.headers.id!, (count.get(r.headers.id!) ?? 0) + 1);
        },
      }),
    );
    await waitFor(() => [...acked].filter((id) => !count.has(id)), {
      until: (missing) => missing.length === 0,
      what: 'every acknowledged record (the last saw: those never read)',
      seen: () => `${count.size} distinct records read`,
      timeoutMs: 30_000,
    });
    const admin = quietKafka({ clientId: randomName('admin'), brokers: [broker.brokers] }).admin();
    await admin.connect();
    const inTopic = (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0);
    await admin.disconnect();
    await waitFor(() => total, { until: (v) => v >= inTopic, what: `all ${inTopic} records in the topic` });
    const dupes = [...count].filter(([, n]) => n > 1);
    expect(dupes).toEqual([]);
    expect(total).toBe(count.size);
    console.info(
      `broker restart: ${acked.size} records acknowledged, ${failures.length} appends failed (retriable), slowest append ${slowest} ms`,
    );
  }, 180_000);
});
