/**
 * Ownership of work on a real broker (see transactor.ts, assignment.ts):
 * claiming an owner fences its earlier holder, whose appends then fail with
 * STREAM_FENCED and leave nothing visible; a group's partitions are shared
 * among members and move to the survivor at once when a member leaves.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HooklogError } from '../../errors.js';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Assignment, Stream, StreamRecord } from '../types.js';
import { quietKafka } from './client.js';
import { openKafkaStream } from './index.js';

const rec = (key: string): StreamRecord => ({ key, value: Buffer.from(key), headers: {} });
const streams: Stream[] = [];
const PREFIX = randomName('own');
const open = async (instanceId: string, clientId = 'own-test') => {
  const s = await openKafkaStream({
    brokers: kafkaBrokerList(),
    clientId,
    instanceId,
    // Its own prefix, so the latest-by-key reader groups it counts are this file's, not a concurrent file's.
    topicPrefix: PREFIX,
    logger: silentLogger(),
    compression: 'none',
    sessionTimeoutMs: 6_000,
    heartbeatIntervalMs: 500,
  });
  streams.push(s);
  return s;
};
afterEach(async () => {
  for (const s of streams.splice(0)) await s.close();
});
const admin = quietKafka({ clientId: 'own-test-admin', brokers: kafkaBrokerList() }).admin();
beforeAll(() => admin.connect());
afterAll(() => admin.disconnect());

describe('kafka ownership', () => {
  it('fences the earlier holder of a claim: its appends fail and nothing it appends afterwards is visible', async () => {
    const a = await open('a');
    const b = await open('b');
    const topic = randomName('owned');
    await a.ensureTopics([{ name: topic, partitions: 1 }]);
    const owner = randomName('work');
    const first = await a.claim(owner);
    await first.appendAtomically([{ topic, records: [rec('a-before')] }]);
    const second = await b.claim(owner);
    const err = await first.appendAtomically([{ topic, records: [rec('a-zombie')] }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HooklogError);
    expect((err as HooklogError).code).toBe('STREAM_FENCED');
    expect((err as HooklogError).retriable).toBe(false);
    // A fenced claim stays fenced: it does not re-initialise (that would fence the new holder in turn).
    await expect(first.appendAtomically([{ topic, records: [rec('a-again')] }])).rejects.toMatchObject({
      code: 'STREAM_FENCED',
    });
    await second.appendAtomically([{ topic, records: [rec('b-after')] }]);
    const keys = [...(await b.readLatestByKey(topic)).keys()].sort();
    expect(keys).toEqual(['a-before', 'b-after']);
    await Promise.all([first.close(), second.close()]);
  });

  it('gives two instances of one config different transactional ids for unowned atomic appends', async () => {
    const a = await open('inst-a');
    const b = await open('inst-b');
    const topic = randomName('shared');
    await a.ensureTopics([{ name: topic, partitions: 2 }]);
    for (let i = 0; i < 5; i++) {
      await a.appendAtomically([{ topic, records: [rec(`a${i}`)] }]);
      await b.appendAtomically([{ topic, records: [rec(`b${i}`)] }]);
    }
    expect((await a.readLatestByKey(topic)).size).toBe(10);
  });

  it('restores the latest per key on a hand-over through one long-lived reader per process', async () => {
    const a = await open('t-a');
    const b = await open('t-b');
    const topic = randomName('cursors');
    await a.ensureTopics([{ name: topic, partitions: 2 }]);
    await Promise.all([a.follow(topic), b.follow(topic)]);
    const readers = async () =>
      (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`${PREFIX}.latest-by-key.`));
    const before = await readers();
    const owner = randomName('work');
    // Hand-overs back and forth: each new holder claims (which completes the old holder's last commit), then
    // reads; the read waits until the reader has passed a sync record appended after the claim (table.ts).
    for (let i = 0; i < 6; i++) {
      const [from, to] = i % 2 ? [b, a] : [a, b];
      const tx = await from.claim(owner);
      await tx.appendAtomically([
        { topic, records: [rec(`other${i}`), { ...rec('cursor'), value: Buffer.from(`v${i}`) }] },
      ]);
      const next = await to.claim(owner);
      expect((await to.readLatestByKey(topic)).get('cursor')?.value.toString()).toBe(`v${i}`);
      await Promise.all([tx.close(), next.close()]);
    }
    expect((await b.readLatestByKey(topic, [0, 1])).size).toBe(7);
    // No group per read: the readers' groups are the ones `follow` made.
    expect((await readers()).sort()).toEqual(before.sort());
  });

  it("shares a topic's partitions among members and moves them to the survivor when one leaves", async () => {
    const a = await open('m-a');
    const b = await open('m-b');
    const topic = randomName('work');
    const group = randomName('owners');
    await a.ensureTopics([{ name: topic, partitions: 4 }]);
    const held = { a: new Set<number>(), b: new Set<number>() };
    const join = (s: Stream, mine: Set<number>) =>
      s.assign({
        topic,
        group,
        onAssigned: async (ps) => void ps.forEach((p) => mine.add(p)),
        onRevoked: async (ps) => void ps.forEach((p) => mine.delete(p)),
      });
    const ja: Assignment = await join(a, held.a);
    expect([...held.a].sort()).toEqual([0, 1, 2, 3]);
    expect(ja.current()).toBe(true);
    expect(ja.partitionOf('system-log:acme')).toBe(ja.partitionOf('system-log:acme'));
    const jb = await join(b, held.b);
    await waitFor(() => held.a.size === 2 && held.b.size === 2, {
      timeoutMs: 15_000,
      what: 'two partitions each',
      seen: () => ({ 'held.a.size': held.a.size, 'held.b.size': held.b.size }),
    });
    expect([...held.a, ...held.b].sort()).toEqual([0, 1, 2, 3]);
    const left = Date.now();
    await ja.stop();
    expect(held.a.size).toBe(0);
    await waitFor(() => held.b.size, {
      until: (n) => n === 4,
      timeoutMs: 10_000,
      what: 'the survivor to own all four',
    });
    // Leaving the group hands over within a few heartbeats, not a session time-out.
    expect(Date.now() - left).toBeLessThan(4_000);
    await jb.stop();
  });
});
