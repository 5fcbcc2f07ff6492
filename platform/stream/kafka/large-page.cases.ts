/**
 * Issue 15: a 1,000-event System Log page, appended atomically with its cursor,
 * on a broker and topic with Kafka's default message limit (1 MiB). The page is
 * several MiB before compression and over 1 MiB after gzip, so it fits only when
 * sent as several produce requests inside its transaction. Shared by
 * large-page.test.ts (the repository's fixtures) and large-page.corpora.test.ts
 * (the public sample events).
 */
import { gzipSync } from 'node:zlib';
import { ConfigResourceTypes } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import { largePage } from '../../../test/support/large-page.js';
import { MAX_RECORD_BYTES } from '../record-size.js';
import type { Consumer, Stream, StreamRecord, TopicWrite, Transactor } from '../types.js';
import { quietKafka } from './client.js';
import { openKafkaStream } from './index.js';

/** Kafka's default message.max.bytes, and so every topic's default max.message.bytes. */
const KAFKA_DEFAULT_LIMIT = 1_048_588;
const ORG = 'org-large-page';

/** The broker's message.max.bytes and the topic's max.message.bytes, as the broker reports them. */
async function limits(topic: string): Promise<{ broker: number; topic: number }> {
  const admin = quietKafka({ clientId: randomName('limits'), brokers: kafkaBrokerList() }).admin();
  await admin.connect();
  try {
    const { brokers } = await admin.describeCluster();
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [
        { type: ConfigResourceTypes.BROKER, name: String(brokers[0]!.nodeId), configNames: ['message.max.bytes'] },
        { type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] },
      ],
    });
    const value = (type: ConfigResourceTypes, name: string) =>
      Number(
        resources.find((r) => r.resourceType === type)?.configEntries.find((e) => e.configName === name)?.configValue,
      );
    return {
      broker: value(ConfigResourceTypes.BROKER, 'message.max.bytes'),
      topic: value(ConfigResourceTypes.TOPIC, 'max.message.bytes'),
    };
  } finally {
    await admin.disconnect();
  }
}

export function largePageCases(samplesFrom: string, samples: () => ReadonlyArray<Record<string, unknown>>): void {
  describe(`a 1,000-event page of the largest ${samplesFrom} events under Kafka's default message limit`, () => {
    let stream: Stream | undefined;
    let claim: Transactor | undefined;
    const consumers: Consumer[] = [];
    /** The page, made once for the four appends (each to topics of its own): making one costs seconds of CPU. */
    let made: string[] | undefined;
    const thePage = () => (made ??= largePage(samples()));
    afterEach(async () => {
      for (const c of consumers.splice(0)) await c.stop();
      await claim?.close();
      claim = undefined;
      await stream?.close();
      stream = undefined;
    });

    /** A stream with fresh topics, created as hooklog creates them: no limit raised. */
    async function open(compression: 'gzip' | 'none') {
      stream = await openKafkaStream({
        brokers: kafkaBrokerList(),
        clientId: randomName('page'),
        logger: silentLogger(),
        compression,
      });
      const topics = { events: randomName('logs'), cursors: randomName('cursors'), deadletter: randomName('dead') };
      await stream.ensureTopics([
        { name: topics.events, partitions: 2 },
        { name: topics.cursors, partitions: 2, compacted: true },
        { name: topics.deadletter, partitions: 1 },
      ]);
      return { stream, topics };
    }

    /** Every committed record of `topic`, read by a hooklog consumer until its group has committed the end. */
    async function readAll(s: Stream, topic: string, expected: number): Promise<StreamRecord[]> {
      const got: StreamRecord[] = [];
      const group = randomName('read');
      consumers.push(
        await s.consume({ topic, group, maxBatchWaitMs: 20, handler: async (b) => void got.push(...b.records) }),
      );
      await waitFor(() => got.length, {
        until: (n) => n >= expected,
        what: `${expected} records of ${topic}`,
        timeoutMs: 30_000,
      });
      // Everything in the log (markers included) is committed: no copy can arrive later.
      const end = await s.latestOffsets(topic);
      await waitFor(
        async () => {
          const committed = await s.committedOffsets(topic, group);
          return [...end].map(([p, o]) => ({ partition: p, end: o, committed: committed.get(p) ?? null }));
        },
        {
          until: (parts) => parts.every((x) => x.end === 0 || x.committed === x.end),
          what: `${group} at the end of ${topic}`,
        },
      );
      return got;
    }

    const cursorRecord = (next: string): StreamRecord => ({
      key: `system-log:${ORG}`,
      value: Buffer.from(JSON.stringify({ next })),
      headers: {},
    });

    for (const compression of ['gzip', 'none'] as const) {
      for (const via of ['stream', 'claim'] as const) {
        it(`${via}.appendAtomically, compression ${compression}: every event once, in order, with its cursor`, async () => {
          const { stream: s, topics } = await open(compression);
          const limit = await limits(topics.events);
          expect(limit).toEqual({ broker: KAFKA_DEFAULT_LIMIT, topic: KAFKA_DEFAULT_LIMIT });

          const page = thePage();
          const bytes = Buffer.from(page.join(''));
          // Several MiB as sent, and still over the limit after gzip: one batch could not hold it either way.
          expect(bytes.length).toBeGreaterThan(6 * 1024 * 1024);
          expect(gzipSync(bytes).length).toBeGreaterThan(KAFKA_DEFAULT_LIMIT);

          const headers = { 'hooklog-org': ORG, 'hooklog-source': 'system-log' };
          const writes: TopicWrite[] = [
            { topic: topics.events, records: page.map((e) => ({ key: ORG, value: Buffer.from(e), headers })) },
            { topic: topics.deadletter, records: [] },
            { topic: topics.cursors, records: [cursorRecord('https://org.example.com/api/v1/logs?after=page-1')] },
          ];
          if (via === 'claim') {
            claim = await s.claim(randomName('owner'));
            await claim.appendAtomically(writes);
          } else await s.appendAtomically(writes);

          const got = await readAll(s, topics.events, page.length);
          expect(got.length).toBe(page.length);
          expect(got.map((r) => r.value.toString('utf8'))).toEqual(page);
          expect(got.every((r) => r.key === ORG && r.headers['hooklog-org'] === ORG)).toBe(true);
          const cursor = (await s.readLatestByKey(topics.cursors)).get(`system-log:${ORG}`);
          expect(JSON.parse(cursor!.value.toString('utf8'))).toEqual({
            next: 'https://org.example.com/api/v1/logs?after=page-1',
          });
        });
      }
    }

    it('a record no batch can hold is refused before the transaction: nothing of its write is visible', async () => {
      const { stream: s, topics } = await open('gzip');
      claim = await s.claim(randomName('owner'));
      const page = largePage(samples(), { count: 10 });
      const huge = Buffer.alloc(MAX_RECORD_BYTES + 1, 'x');
      const write = (values: Buffer[], next: string): TopicWrite[] => [
        { topic: topics.events, records: values.map((value) => ({ key: ORG, value, headers: {} })) },
        { topic: topics.cursors, records: [cursorRecord(next)] },
      ];
      for (const t of [s, claim]) {
        const failed = await t.appendAtomically(write([Buffer.from(page[0]!), huge], 'never')).then(
          () => null,
          (err: unknown) => err,
        );
        expect(failed).toBeInstanceOf(HooklogError);
        expect((failed as HooklogError).code).toBe('STREAM_APPEND_FAILED');
        expect((failed as HooklogError).retriable).toBe(false);
      }
      // Both still take the next append; only those records and that cursor are there.
      await s.appendAtomically(write([Buffer.from(page[1]!)], 'first'));
      await claim.appendAtomically(write([Buffer.from(page[2]!)], 'second'));
      const got = await readAll(s, topics.events, 2);
      expect(got.map((r) => r.value.toString('utf8'))).toEqual([page[1], page[2]]);
      const cursor = (await s.readLatestByKey(topics.cursors)).get(`system-log:${ORG}`);
      expect(JSON.parse(cursor!.value.toString('utf8'))).toEqual({ next: 'second' });
    });
  });
}
