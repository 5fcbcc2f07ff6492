/**
 * The sticky assigner in a group on a real broker that also has a member of a
 * release without it (a rolling upgrade): a kafkajs consumer offering round
 * robin only. The group must agree on round robin while that member is in it
 * — every member assigned, nothing owned twice — and switch to the sticky
 * protocol once it leaves, the members that stay keeping what round robin gave
 * them.
 */
import type { Consumer as KafkaJSConsumer } from 'kafkajs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Assignment, Stream } from '../types.js';
import { quietKafka } from './client.js';
import { openKafkaStream } from './index.js';
import { STICKY_PROTOCOL } from './sticky-assigner.js';

const streams: Stream[] = [];
const raw: KafkaJSConsumer[] = [];
afterEach(async () => {
  for (const c of raw.splice(0)) await c.disconnect();
  for (const s of streams.splice(0)) await s.close();
});
const admin = quietKafka({ clientId: 'sticky-test-admin', brokers: kafkaBrokerList() }).admin();
beforeAll(() => admin.connect());
afterAll(() => admin.disconnect());

const sorted = (s: Iterable<number>) => [...s].sort((a, b) => a - b);

describe('the sticky assigner beside a previous release', () => {
  it('runs round robin while a member without it is in the group, then sticky, keeping what members hold', async () => {
    const topic = randomName('sticky');
    const group = randomName('owners');
    const open = async (name: string) => {
      const s = await openKafkaStream({
        brokers: kafkaBrokerList(),
        clientId: 'sticky-test',
        instanceId: name,
        logger: silentLogger(),
        compression: 'none',
        sessionTimeoutMs: 6_000,
        heartbeatIntervalMs: 300,
      });
      streams.push(s);
      return s;
    };
    const a = await open('new-a');
    const b = await open('new-b');
    await a.ensureTopics([{ name: topic, partitions: 6 }]);
    const held = { a: new Set<number>(), b: new Set<number>(), old: new Set<number>() };
    const revokedAfter: number[] = [];
    let oldGone = false;
    const join = (s: Stream, mine: Set<number>): Promise<Assignment> =>
      s.assign({
        topic,
        group,
        onAssigned: async (ps) => void ps.forEach((p) => mine.add(p)),
        onRevoked: async (ps) => {
          if (oldGone) revokedAfter.push(...ps);
          ps.forEach((p) => mine.delete(p));
        },
      });
    // The previous release: kafkajs's default assigners (round robin only), no userData.
    const old = quietKafka({ clientId: 'sticky-test-old', brokers: kafkaBrokerList() }).consumer({
      groupId: group,
      sessionTimeout: 6_000,
      heartbeatInterval: 300,
      // A rebalance is noticed between fetches: kafkajs's 5 s default wait would slow every join down.
      maxWaitTimeInMs: 200,
    });
    raw.push(old);
    old.on(old.events.GROUP_JOIN, (e) => {
      held.old.clear();
      for (const p of e.payload.memberAssignment[topic] ?? []) held.old.add(p);
    });
    await old.connect();
    await old.subscribe({ topic });
    await old.run({ eachBatch: async () => undefined });
    const ja = await join(a, held.a);
    const jb = await join(b, held.b);
    const groupState = async () => (await admin.describeGroups([group])).groups[0]!;
    const snapshot = () => ({ a: sorted(held.a), b: sorted(held.b), old: sorted(held.old) });
    await waitFor(snapshot, {
      until: (s) => s.a.length === 2 && s.b.length === 2 && s.old.length === 2,
      timeoutMs: 30_000,
      what: 'two partitions each for the two new members and the old one',
    });
    expect(sorted([...held.a, ...held.b, ...held.old])).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await groupState()).protocol).toBe('RoundRobinAssigner');
    const before = snapshot();

    oldGone = true;
    await old.disconnect();
    raw.splice(0);
    await waitFor(snapshot, {
      until: (s) => s.a.length === 3 && s.b.length === 3,
      timeoutMs: 30_000,
      what: 'three partitions each once the old member left',
    });
    const after = snapshot();
    expect(after.a).toEqual(expect.arrayContaining(before.a));
    expect(after.b).toEqual(expect.arrayContaining(before.b));
    expect(revokedAfter).toEqual([]);
    expect((await groupState()).protocol).toBe(STICKY_PROTOCOL);
    await Promise.all([ja.stop(), jb.stop()]);
  });
});
