/**
 * A compacted state topic several owners write to (alerting's checkpoints: one
 * partition, one owner per logs partition) must be read whole after a claim:
 * the latest committed record of every key, even when another owner's
 * transaction, begun before it, is still open. A read_committed reader stops at
 * the last stable offset (the first offset of the oldest open transaction), so
 * a read that waited only for that offset returned the record before — a new
 * owner restored a stale checkpoint and repeated what it covered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Stream, StreamRecord } from '../types.js';
import { quietKafka } from './client.js';
import { openKafkaStream } from './index.js';

const rec = (key: string, value: string): StreamRecord => ({ key, value: Buffer.from(value), headers: {} });
const kafka = quietKafka({ clientId: 'shared-state-test', brokers: kafkaBrokerList() });
let stream: Stream;
beforeAll(async () => {
  stream = await openKafkaStream({
    brokers: kafkaBrokerList(),
    clientId: 'shared-state-test',
    instanceId: 'reader',
    logger: silentLogger(),
    compression: 'none',
  });
});
afterAll(() => stream.close());

describe('reading a shared state topic after a claim', () => {
  it('waits for transactions open before the read, so the latest committed record of every key is seen', async () => {
    const topic = randomName('shared-state');
    await stream.ensureTopics([{ name: topic, partitions: 1, compacted: true }]);
    const p0 = await stream.claim(randomName('owner-p0'));
    await p0.appendAtomically([{ topic, records: [rec('p0', 'checkpoint-1')] }]);
    // The reader exists and has read the topic (as `follow` makes it at start).
    expect((await stream.readLatestByKey(topic)).get('p0')?.value.toString()).toBe('checkpoint-1');

    // Another owner (of partition 1) begins a transaction on the same state partition and has not committed...
    const other = kafka.producer({ transactionalId: randomName('owner-p1'), idempotent: true, maxInFlightRequests: 1 });
    await other.connect();
    const open = await other.transaction();
    await open.send({ topic, messages: [{ key: 'p1', value: 'checkpoint-a' }] });
    // ...when partition 0's owner commits its next checkpoint, behind that open transaction.
    await p0.appendAtomically([{ topic, records: [rec('p0', 'checkpoint-2')] }]);

    // The read starts with the transaction still open. A read that does not wait for it answers at once, with
    // checkpoint-1; one that waits is still pending when the other owner commits (given 1.5 s to show which).
    const reading = stream.readLatestByKey(topic);
    await Promise.race([reading, new Promise((r) => setTimeout(r, 1_500))]);
    await open.commit();
    const latest = await reading;
    expect(latest.get('p0')?.value.toString()).toBe('checkpoint-2');
    expect(latest.get('p1')?.value.toString()).toBe('checkpoint-a');
    await other.disconnect();
    await p0.close();
  });
});
