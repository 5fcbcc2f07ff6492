/**
 * Rebalancing on a real broker: a second member joins mid-stream, later the
 * first leaves. Every record must be handled, the group's committed positions
 * must end at the high watermarks, and no member may commit for a partition it
 * does not own at that moment (judged from both members' assignment events).
 */
import { quietKafka } from './client.js';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Consumer, RecordBatch, Stream, StreamRecord } from '../types.js';
import { openKafkaStream, type KafkaConsumerEvent } from './index.js';

const open: Array<{ stream: Stream; consumers: Consumer[] }> = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    for (const c of o.consumers) await c.stop();
    await o.stream.close();
  }
});

async function stream(observer?: (e: KafkaConsumerEvent) => void) {
  const s = await openKafkaStream({
    brokers: kafkaBrokerList(),
    clientId: randomName('rebalance'),
    logger: silentLogger(),
    heartbeatIntervalMs: 300,
    sessionTimeoutMs: 6_000,
    ...(observer ? { observer } : {}),
  });
  const slot = { stream: s, consumers: [] as Consumer[] };
  open.push(slot);
  return slot;
}

const records = (from: number, n: number): StreamRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    key: `k${(from + i) % 40}`,
    value: Buffer.from(String(from + i)),
    headers: { id: String(from + i) },
  }));

async function highWatermarks(topic: string): Promise<Map<number, number>> {
  const admin = quietKafka({ clientId: 'hw', brokers: kafkaBrokerList() }).admin();
  await admin.connect();
  try {
    return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
  } finally {
    await admin.disconnect();
  }
}

/** Which partitions `consumer` owned just before event index `at`, by its own assigned/revoked events. */
function ownedAt(
  events: KafkaConsumerEvent[],
  consumer: string,
  at: number,
): { partitions: Set<number>; since: number } {
  let owned = new Set<number>();
  let since = -1;
  for (let i = 0; i < at; i++) {
    const e = events[i]!;
    if (e.consumer !== consumer) continue;
    if (e.type === 'assigned') {
      owned = new Set(e.partitions);
      since = i;
    }
    if (e.type === 'revoked') for (const p of e.partitions) owned.delete(p);
  }
  return { partitions: owned, since };
}

describe('kafka consumer group rebalancing', () => {
  it('hands every record over, commits to the end, and never commits for a partition it does not own', async () => {
    const events: KafkaConsumerEvent[] = [];
    const observe = (e: KafkaConsumerEvent) => void events.push(e);
    const producer = await stream();
    const topic = randomName('t');
    const group = randomName('g');
    await producer.stream.ensureTopics([{ name: topic, partitions: 4 }]);

    const seen = new Map<string, number>();
    const byMember = new Map<string, number>();
    // While the second member joins, the first one's handler calls are held open,
    // so it has in-flight and buffered work for partitions it is about to lose.
    let release: () => void = () => undefined;
    let holdM1: Promise<void> | null = null;
    const handler = (member: string) => async (b: RecordBatch) => {
      if (member === 'm1' && holdM1) await holdM1;
      for (const r of b.records) seen.set(r.headers.id!, (seen.get(r.headers.id!) ?? 0) + 1);
      byMember.set(member, (byMember.get(member) ?? 0) + b.records.length);
    };
    const consumeOpts = (member: string) => ({
      topic,
      group,
      maxBatchRecords: 7,
      maxBatchWaitMs: 20,
      handler: handler(member),
    });

    await producer.stream.append(topic, records(0, 100));
    const m1 = await stream(observe);
    const c1 = await m1.stream.consume(consumeOpts('m1'));
    m1.consumers.push(c1);
    await waitFor(() => byMember.get('m1') ?? 0, { until: (n) => n >= 30, what: 'first member under way' });

    holdM1 = new Promise((r) => (release = r));
    const m2 = await stream(observe);
    m2.consumers.push(await m2.stream.consume(consumeOpts('m2')));
    await waitFor(() => events, {
      until: (got) => got.some((e) => e.type === 'assigned' && e.consumer !== events[0]!.consumer),
      what: 'second member assigned',
    });
    holdM1 = null;
    release();
    for (let i = 100; i < 200; i += 10) await producer.stream.append(topic, records(i, 10));
    await waitFor(() => byMember.get('m2') ?? 0, { until: (n) => n > 0, what: 'second member handling records' });

    await c1.stop();
    m1.consumers.splice(0);
    for (let i = 200; i < 300; i += 10) await producer.stream.append(topic, records(i, 10));

    await waitFor(() => seen.size, { until: (n) => n === 300, what: 'all 300 records handled', timeoutMs: 45_000 });
    const hw = await highWatermarks(topic);
    expect([...hw.values()].reduce((a, b) => a + b, 0)).toBe(300);
    await waitFor(
      async () => {
        const committed = await producer.stream.committedOffsets(topic, group);
        return [...hw].map(([p, end]) => ({ partition: p, end, committed: committed.get(p) ?? null }));
      },
      {
        until: (parts) => parts.every((x) => x.committed === x.end),
        what: 'committed offsets at the high watermarks',
        timeoutMs: 30_000,
      },
    );

    // The scenario really rebalanced: the second member got partitions the first one gave up.
    const assigned = events.filter((e) => e.type === 'assigned');
    const members = [...new Set(assigned.map((e) => e.consumer))];
    expect(members).toHaveLength(2);
    expect(events.some((e) => e.type === 'revoked' && e.consumer === members[0])).toBe(true);
    expect(assigned.some((e) => e.consumer === members[1] && e.partitions.length === 4)).toBe(true);

    const succeeded = events.map((e, i) => [e, i] as const).filter(([e]) => e.type === 'commit-succeeded');
    expect(succeeded.length).toBeGreaterThan(0);
    const lastCommit = new Map<number, number>();
    for (const [e, i] of succeeded) {
      if (e.type !== 'commit-succeeded') continue;
      const issued = events
        .slice(0, i)
        .findLastIndex(
          (x) =>
            x.type === 'commit-issued' &&
            x.consumer === e.consumer &&
            x.partition === e.partition &&
            x.offset === e.offset,
        );
      expect(issued).toBeGreaterThanOrEqual(0);
      const own = ownedAt(events, e.consumer, issued);
      expect(
        own.partitions.has(e.partition),
        `${e.consumer} committed ${e.partition}@${e.offset} without owning it`,
      ).toBe(true);
      const takenOver = events
        .slice(own.since + 1, issued)
        .some((x) => x.type === 'assigned' && x.consumer !== e.consumer && x.partitions.includes(e.partition));
      expect(takenOver, `${e.consumer} committed ${e.partition}@${e.offset} after another member was given it`).toBe(
        false,
      );
      // Positions only move forward: a stale commit from a former owner would move one back.
      expect(e.offset).toBeGreaterThanOrEqual(lastCommit.get(e.partition) ?? 0);
      lastCommit.set(e.partition, e.offset);
    }
  }, 90_000);
});

describe('partition callbacks across members (Kafka)', () => {
  it('onAssigned shares the partitions out between two members, and gives them all to the one left', async () => {
    const a = await stream();
    const b = await stream();
    const topic = randomName('owned');
    const group = randomName('g');
    await a.stream.ensureTopics([{ name: topic, partitions: 4 }]);
    const mine = { a: new Set<number>(), b: new Set<number>() };
    const member = (name: 'a' | 'b') => ({
      topic,
      group,
      handler: async () => undefined,
      onAssigned: (ps: readonly number[]) => ps.forEach((p) => mine[name].add(p)),
      onRevoked: (ps: readonly number[]) => ps.forEach((p) => mine[name].delete(p)),
    });
    const ca = await a.stream.consume(member('a'));
    const cb = await b.stream.consume(member('b'));
    b.consumers.push(cb);
    const split = () =>
      mine.a.size > 0 && mine.b.size > 0 && mine.a.size + mine.b.size === 4 && [...mine.a].every((p) => !mine.b.has(p));
    await waitFor(split, { timeoutMs: 30_000, what: 'a split', seen: () => ({ a: [...mine.a], b: [...mine.b] }) });
    await ca.stop();
    expect(mine.a.size).toBe(0);
    await waitFor(() => mine.b.size, {
      until: (n) => n === 4,
      timeoutMs: 30_000,
      what: 'all to b',
      seen: () => ({ a: [...mine.a], b: [...mine.b] }),
    });
  }, 60_000);
});
