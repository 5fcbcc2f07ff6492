/**
 * The System Log poller on real Kafka with pages as large as they get (issue 15):
 * a 1,000-event page of several MiB is stored with its cursor; an event too large
 * for any Kafka batch goes to the dead letters, cut short, instead of blocking the
 * org; and a page the broker refuses aborts its transaction without moving the
 * cursor, then is stored once when the broker takes it.
 */
import { ConfigResourceTypes } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { Header, topicNames, type Topics } from '../../platform/stream/headers.js';
import { quietKafka } from '../../platform/stream/kafka/client.js';
import { openKafkaStream } from '../../platform/stream/kafka/index.js';
import { MAX_RECORD_BYTES, TRUNCATED_LETTER_BYTES } from '../../platform/stream/record-size.js';
import type { Consumer, ConsumedRecord, Stream } from '../../platform/stream/types.js';
import { kafkaBrokerList } from '../../test/kafka/inject.js';
import { validLogEvents } from '../../test/fixtures/index.js';
import { capturingLogger, FAST_POLICIES, orgConfig } from '../../test/simulated-org/harness.js';
import { SimulatedOrg } from '../../test/simulated-org/index.js';
import { largePage } from '../../test/support/large-page.js';
import { randomName, waitFor } from '../../test/support/wait.js';
import { readCursor } from '../poller/cursor.js';
import { startIngest, type Ingest } from '../index.js';

const admin = () => quietKafka({ clientId: randomName('admin'), brokers: kafkaBrokerList() }).admin();

describe('System Log poller on Kafka: large pages', () => {
  let stream: Stream | undefined;
  let sim: SimulatedOrg | undefined;
  let ingest: Ingest | undefined;
  const consumers: Consumer[] = [];
  afterEach(async () => {
    await ingest?.stop();
    ingest = undefined;
    for (const c of consumers.splice(0)) await c.stop();
    await sim?.stop();
    await stream?.close();
  });

  /** A Kafka stream and hooklog's topics; `logsLimit` sets the logs topic's max.message.bytes. */
  async function open(logsLimit?: number): Promise<{ s: Stream; topics: Topics }> {
    const s = await openKafkaStream({
      brokers: kafkaBrokerList(),
      clientId: randomName('poll'),
      logger: silentLogger(),
    });
    stream = s;
    const topics = topicNames(randomName('big'));
    if (logsLimit !== undefined) {
      const a = admin();
      await a.connect();
      await a.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic: topics.logs,
            numPartitions: 2,
            configEntries: [{ name: 'max.message.bytes', value: `${logsLimit}` }],
          },
        ],
      });
      await a.disconnect();
    }
    await s.ensureTopics([
      { name: topics.logs, partitions: 2 },
      { name: topics.legacyEvents, partitions: 1 },
      { name: topics.deadletter, partitions: 1 },
      { name: topics.cursors, partitions: 2, compacted: true },
    ]);
    return { s, topics };
  }

  async function collect(s: Stream, topic: string): Promise<ConsumedRecord[]> {
    const got: ConsumedRecord[] = [];
    consumers.push(
      await s.consume({
        topic,
        group: randomName('collect'),
        maxBatchWaitMs: 20,
        handler: async (b) => void got.push(...b.records),
      }),
    );
    return got;
  }

  /** 1,000 events of about 8 KiB (the fixtures, padded as real events get), then `extra`. */
  async function orgWith(extra: Array<Record<string, unknown>> = []) {
    sim = await SimulatedOrg.start({ rateLimit: { logs: false } });
    const events = [...largePage(validLogEvents()).map((e) => JSON.parse(e) as Record<string, unknown>), ...extra];
    const now = Date.now();
    sim.addLogEvents(events.map((event, i) => ({ event, published: now - 60_000 + i })));
    return orgConfig(sim, { system_log: { start: '1d', poll_interval_ms: 200 } });
  }

  const start = (s: Stream, topics: Topics, org: ReturnType<typeof orgConfig>) =>
    startIngest({ orgs: [org], stream: s, topics, logger: silentLogger(), policies: FAST_POLICIES });

  it('stores a page of several MiB with its cursor; an event no batch holds is dead-lettered, cut short', async () => {
    const { s, topics } = await open();
    const oversized = { ...validLogEvents()[0]!, uuid: crypto.randomUUID(), padding: 'z'.repeat(MAX_RECORD_BYTES) };
    const after = validLogEvents()[1]!;
    const org = await orgWith([oversized, after]);
    const logs = await collect(s, topics.logs);
    const dead = await collect(s, topics.deadletter);
    ingest = await start(s, topics, org);

    await waitFor(() => logs.length >= 1_001 && dead.length >= 1, {
      what: 'the page, the next one and a dead letter',
      seen: () => ({ 'logs.length': logs.length, 'dead.length': dead.length }),
    });
    const ids = logs.map((r) => (JSON.parse(r.value.toString('utf8')) as { uuid: string }).uuid);
    const expected = sim!.logs
      .all()
      .map((e) => e.id)
      .filter((id) => id !== oversized.uuid);
    expect(ids).toEqual(expected);
    expect(dead).toHaveLength(1);
    const letter = dead[0]!;
    const raw = sim!.logs.all().find((e) => e.id === oversized.uuid)!.json;
    expect(Number(letter.headers[Header.truncatedFromBytes])).toBeGreaterThan(MAX_RECORD_BYTES);
    expect(letter.value.length).toBe(TRUNCATED_LETTER_BYTES);
    expect(letter.value.toString('utf8')).toBe(raw.slice(0, TRUNCATED_LETTER_BYTES));
    expect(letter.headers[Header.reason]).toMatch(/over the largest stream record/);
    expect(letter.headers[Header.org]).toBe(org.id);
    // Not blocked: the position moved past both pages.
    const cursor = await waitFor(
      async () => ({
        cursor: readCursor(await s.readLatestByKey(topics.cursors), 'system-log', org.id),
        position: ingest!.pollers[0]!.position(),
      }),
      {
        until: (c) => c.cursor?.next === c.position && c.cursor.newestPublished !== null,
        what: "the cursor at the poller's position",
      },
    ).then((c) => c.cursor!);
    expect(cursor.next).toMatch(/after=/);
    expect(ingest.pollers[0]!.health().blocked).toBe(0);
  });

  it('a page the broker refuses aborts its transaction: nothing visible, the cursor stays, then it is stored once', async () => {
    // A logs topic whose limit is below one produce request, even gzipped (a broker configured below the default).
    const { s, topics } = await open(32 * 1024);
    const org = await orgWith();
    const logs = await collect(s, topics.logs);
    const { logger, lines } = capturingLogger();
    ingest = await startIngest({ orgs: [org], stream: s, topics, logger, policies: FAST_POLICIES });
    await waitFor(() => ingest!.pollers[0]!.health().blocked, {
      until: (n) => n >= 2,
      what: 'the page to be refused twice',
    });
    expect(logs).toEqual([]);
    expect(readCursor(await s.readLatestByKey(topics.cursors), 'system-log', org.id)).toBeNull();
    // Reported once, as what it is: the broker refused the records (not an outage).
    expect(
      lines()
        .filter((l) => l.msg === 'poller_blocked')
        .map((l) => l.code),
    ).toEqual(['STREAM_APPEND_FAILED']);

    const a = admin();
    await a.connect();
    await a.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: topics.logs,
          configEntries: [{ name: 'max.message.bytes', value: '1048588' }],
        },
      ],
    });
    await a.disconnect();
    await waitFor(async () => readCursor(await s.readLatestByKey(topics.cursors), 'system-log', org.id), {
      what: 'the cursor, once the broker takes the page',
      seen: () => ({ blocked: ingest!.pollers[0]!.health().blocked, 'events on the topic': logs.length }),
      timeoutMs: 30_000,
    });
    await waitFor(() => logs.length, { until: (n) => n >= 1_000, what: 'the page' });
    const ids = logs.map((r) => (JSON.parse(r.value.toString('utf8')) as { uuid: string }).uuid);
    expect(ids).toEqual(sim!.logs.all().map((e) => e.id));
  });
});
