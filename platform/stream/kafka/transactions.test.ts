/**
 * appendAtomically on a real broker: a transaction that fails part-way is
 * aborted, and read_committed consumers (ours, and readLatestByKey) never see
 * its records — although they are physically in the log, as a read_uncommitted
 * reader shows.
 */
import { randomBytes } from 'node:crypto';
import { quietKafka } from './client.js';
import { afterEach, describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Consumer, Stream, StreamRecord } from '../types.js';
import { openKafkaStream } from './index.js';

const rec = (key: string, value: string | Buffer): StreamRecord => ({
  key,
  value: Buffer.isBuffer(value) ? value : Buffer.from(value),
  headers: {},
});
const client = () => quietKafka({ clientId: randomName('raw'), brokers: kafkaBrokerList() });

let stream: Stream | undefined;
const consumers: Consumer[] = [];
afterEach(async () => {
  for (const c of consumers.splice(0)) await c.stop();
  await stream?.close();
});

/** Every value in `topic` as a read_uncommitted reader sees it: aborted records included. */
async function readUncommitted(topic: string, expected: number): Promise<string[]> {
  const consumer = client().consumer({ groupId: randomName('raw'), readUncommitted: true, maxWaitTimeInMs: 200 });
  const values: string[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void values.push(message.value!.toString()) });
  try {
    await waitFor(() => values.length, { until: (n) => n >= expected, what: `${expected} raw records` });
    return values;
  } finally {
    await consumer.disconnect();
  }
}

describe('kafka transactions', () => {
  it('never shows a consumer the records of an aborted transaction', async () => {
    stream = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('tx'),
      logger: silentLogger(),
      compression: 'none',
    });
    const events = randomName('events');
    const cursors = randomName('cursors');
    const tiny = randomName('tiny');
    await stream.ensureTopics([
      { name: events, partitions: 1 },
      { name: cursors, partitions: 1, compacted: true },
    ]);
    // A topic that refuses records above 1 KiB makes the broker fail one write of the transaction.
    const admin = client().admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: tiny, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '1024' }] }],
    });
    await admin.disconnect();

    await stream.appendAtomically([
      { topic: events, records: [rec('org', 'e1')] },
      { topic: cursors, records: [rec('org', 'cursor-1')] },
    ]);
    const failed = await stream
      .appendAtomically([
        { topic: events, records: [rec('org', 'aborted-event')] },
        { topic: cursors, records: [rec('org', 'aborted-cursor')] },
        { topic: tiny, records: [rec('org', randomBytes(4096))] },
      ])
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(failed).toBeInstanceOf(HooklogError);
    expect((failed as HooklogError).code).toBe('STREAM_APPEND_FAILED');
    expect((failed as HooklogError).retriable).toBe(false);
    // The stream recovers: the next transaction commits.
    await stream.appendAtomically([{ topic: events, records: [rec('org', 'e3')] }]);

    // The aborted records did reach the log...
    expect(await readUncommitted(events, 3)).toEqual(['e1', 'aborted-event', 'e3']);
    expect(await readUncommitted(cursors, 2)).toEqual(['cursor-1', 'aborted-cursor']);

    // ...but a hooklog consumer sees only committed ones, and commits past the transaction markers.
    const group = randomName('g');
    const got: string[] = [];
    consumers.push(
      await stream.consume({
        topic: events,
        group,
        maxBatchWaitMs: 20,
        handler: async (b) => void got.push(...b.records.map((r) => r.value.toString())),
      }),
    );
    await waitFor(() => got, {
      until: (seenNow) => seenNow.includes('e3'),
      what: 'the committed record after the aborted transaction',
    });
    expect(got).toEqual(['e1', 'e3']);
    const admin2 = client().admin();
    await admin2.connect();
    const [end] = await admin2.fetchTopicOffsets(events);
    await admin2.disconnect();
    expect(Number(end!.high)).toBe(6); // e1, commit marker, aborted-event, abort marker, e3, commit marker
    await waitFor(async () => (await stream!.committedOffsets(events, group)).get(0), {
      until: (n) => n === 6,
      what: 'commit at the end of the log',
    });

    const latest = await stream.readLatestByKey(cursors);
    expect(latest.get('org')?.value.toString()).toBe('cursor-1');
  });
});
