/**
 * A group member kafkajs gives up on is replaced (supervisor.ts). The crash is a real one: this test's
 * own broker allows one member per group (group.max.size=1), so while another client holds the group,
 * hooklog's join is refused with GROUP_MAX_SIZE_REACHED, an error kafkajs does not retry: its consumer
 * disconnects for good. Once the other member leaves, the sink-style consumer must read every record
 * and the assignment must own every partition, without anyone restarting them.
 */
import type { Consumer as KafkaJSConsumer } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { startKafkaBroker, type KafkaBroker } from '../../../test/kafka/broker.js';
import type { Assignment, Consumer, Stream } from '../types.js';
import { quietKafka } from './client.js';
import { openKafkaStream, type KafkaConsumerEvent } from './index.js';

let broker: KafkaBroker | undefined;
let stream: Stream | undefined;
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await stream?.close();
  await broker?.stop();
});

/** Another client holding `group` on `topic`, so that the group is full. */
async function holdGroup(brokers: string, topic: string, group: string): Promise<KafkaJSConsumer> {
  const c = quietKafka({ clientId: randomName('holder'), brokers: [brokers] }).consumer({ groupId: group });
  const joined = new Promise<void>((resolve) => c.on(c.events.GROUP_JOIN, () => resolve()));
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  await c.run({ autoCommit: false, eachBatch: async () => undefined });
  await joined;
  stops.push(() => c.disconnect());
  return c;
}

describe('kafka consumers kafkajs gives up on (Kafka)', () => {
  it('are replaced: once the group has room, every record is read and every partition owned', async () => {
    broker = await startKafkaBroker({ serverProperties: { 'group.max.size': '1' } });
    const events: KafkaConsumerEvent[] = [];
    stream = await openKafkaStream({
      brokers: [broker.brokers],
      clientId: randomName('supervised'),
      logger: silentLogger(),
      observer: (e) => events.push(e),
    });
    const topic = randomName('t');
    await stream.ensureTopics([{ name: topic, partitions: 2 }]);
    const sent = Array.from({ length: 20 }, (_, i) => `r${i}`);
    await stream.append(
      topic,
      sent.map((id) => ({ key: id, value: Buffer.from(id), headers: { id } })),
    );

    const readGroup = randomName('read');
    const ownGroup = randomName('own');
    const holders = [
      await holdGroup(broker.brokers, topic, readGroup),
      await holdGroup(broker.brokers, topic, ownGroup),
    ];

    const read = new Map<string, number>();
    const reader: Consumer = await stream.consume({
      topic,
      group: readGroup,
      maxBatchWaitMs: 20,
      handler: async (b) => {
        for (const r of b.records) read.set(r.headers.id!, (read.get(r.headers.id!) ?? 0) + 1);
      },
    });
    stops.push(() => reader.stop());
    const owned = new Set<number>();
    const assignment: Assignment = await stream.assign({
      topic,
      group: ownGroup,
      onAssigned: async (ps) => void ps.forEach((p) => owned.add(p)),
      onRevoked: async (ps) => void ps.forEach((p) => owned.delete(p)),
    });
    stops.push(() => assignment.stop());

    // Both joins were refused for good by kafkajs, and each member was replaced (and refused again) meanwhile.
    const replaced = (group: string) =>
      events.filter((e) => e.type === 'replaced' && e.consumer.replace(/#\d+$/, '') === group);
    await waitFor(() => replaced(readGroup).length >= 1 && replaced(ownGroup).length >= 1, {
      timeoutMs: 30_000,
      what: 'both members replaced after GROUP_MAX_SIZE_REACHED',
      seen: () => ({
        'replaced(readGroup).length': replaced(readGroup).length,
        'replaced(ownGroup).length': replaced(ownGroup).length,
      }),
    });
    expect(read.size).toBe(0);
    expect(owned.size).toBe(0);
    const refusal = replaced(readGroup)[0];
    expect(refusal?.type === 'replaced' && refusal.error).toMatch(/max size/i);

    for (const h of holders) await h.disconnect();
    // The back-off stays within the policy's cap (30 s); the session time-out has nothing to wait for (they left).
    await waitFor(() => sent.filter((id) => !read.has(id)), {
      until: (unread) => unread.length === 0,
      timeoutMs: 90_000,
      what: 'every record read',
    });
    await waitFor(() => owned.size, { until: (n) => n === 2, timeoutMs: 90_000, what: 'both partitions owned' });
    expect([...read.values()].every((n) => n === 1)).toBe(true);
    expect(assignment.current()).toBe(true);
  }, 240_000);
});
