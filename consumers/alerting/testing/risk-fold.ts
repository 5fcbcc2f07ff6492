/**
 * The risk fold on a real stream, as one suite both stream kinds run
 * (risk.test.ts): a stateful rule's finding raises its user to high, once;
 * the level falls when the contribution expires although the org sends
 * nothing more; a restart repeats none of it.
 */
import { expect, it } from 'vitest';
import { silentLogger } from '../../../platform/log.js';
import { topicNames } from '../../../platform/stream/headers.js';
import type { Consumer, Stream } from '../../../platform/stream/types.js';
import { riskChangeSchema, riskKey, riskTopics, type RiskChange } from '../../../schemas/risk.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { alertingSchema } from '../config.js';
import { startAlerting } from '../index.js';
import { riskTravelEvents, riskTravelRules } from './events.js';
import { decodeState } from '../risk/records.js';

const log = silentLogger();

/**
 * Every change on the topic, read by a group of its own from the beginning. `toEnd` resolves once the reader has
 * committed past everything appended before the call (a repeat would be in `all` by then).
 */
export async function readChanges(
  stream: Stream,
  topic: string,
): Promise<{ all: RiskChange[]; toEnd: () => Promise<void>; stop: () => Promise<void> }> {
  const all: RiskChange[] = [];
  const group = randomName('changes-reader');
  const toEnd = async () => {
    const end = await stream.latestOffsets(topic);
    await waitFor(
      async () => {
        const c = await stream.committedOffsets(topic, group);
        return [...end].map(([p, next]) => ({ partition: p, next, committed: c.get(p) ?? 0 }));
      },
      {
        until: (parts) => parts.every((x) => x.committed >= x.next),
        timeoutMs: 60_000,
        what: `reading ${topic} to its end`,
      },
    );
  };
  const reader: Consumer = await stream.consume({
    topic,
    group,
    maxBatchWaitMs: 20,
    handler: async (b) =>
      void all.push(...b.records.map((r) => riskChangeSchema.parse(JSON.parse(r.value.toString())))),
  });
  return { all, toEnd, stop: () => reader.stop() };
}

/**
 * `expiresInMs`: how long after the test starts the short-lived contribution expires; it must outlast the start
 * of alerting on this stream kind (Kafka's group joins take seconds).
 */
export function riskFoldSuite(open: () => Stream, expiresInMs: number, timeoutMs: number): void {
  it(
    'a finding raises its user once, the level falls on expiry with no more events, a restart repeats nothing',
    async () => {
      const stream = open();
      const prefix = randomName('risk');
      const t = topicNames(prefix);
      const topics = riskTopics(prefix);
      await stream.ensureTopics([
        { name: t.logs, partitions: 3 },
        { name: t.deadletter, partitions: 1 },
      ]);
      const config = alertingSchema.parse({
        group: randomName('alerting'),
        rules: riskTravelRules('1h'),
        clickhouse: false,
        allowed_lateness_ms: 0,
        max_batch_wait_ms: 20,
        risk: { expiry_check_interval_ms: 200 },
      });
      const start = () =>
        startAlerting({
          config,
          stream,
          topicPrefix: prefix,
          partitions: 3,
          logsTopic: t.logs,
          deadletterTopic: t.deadletter,
          logger: log,
        });
      const now = Date.now();
      let alerting = await start();
      const changes = await readChanges(stream, topics.changes);
      try {
        // ann's trip an hour (her contribution's ttl) before `expiresInMs` from now; bob's and cid's ten minutes ago.
        await stream.append(t.logs, [
          ...riskTravelEvents(
            'acme',
            [
              { user: 'ann', tripAt: now - 3_600_000 + expiresInMs },
              { user: 'bob', tripAt: now - 600_000 },
            ],
            now - 1000,
          ),
          ...riskTravelEvents('globex', [{ user: 'cid', tripAt: now - 600_000 }], now - 1000),
        ]);
        await waitFor(() => changes.all.length, {
          until: (n) => n >= 3,
          timeoutMs,
          what: `three rises (${changes.all.length})`,
        });
        const rises = changes.all.slice(0, 3);
        expect(rises.map((c) => [c.org, c.entity.id, c.previous, c.current, c.cause]).sort()).toEqual([
          ['acme', '00uann', 'none', 'high', 'finding'],
          ['acme', '00ubob', 'none', 'high', 'finding'],
          ['globex', '00ucid', 'none', 'high', 'finding'],
        ]);
        expect(rises.find((c) => c.entity.id === '00uann')?.entity.login).toBe('ann@acme.example');
        const states = await stream.readLatestByKey(topics.state);
        const ann = riskKey('acme', { type: 'user', id: '00uann' });
        expect(decodeState(states.get(ann)!)?.level).toBe('high');

        // Nothing more arrives; ann's contribution expires and her level falls.
        await waitFor(() => changes.all.length, {
          until: (n) => n >= 4,
          timeoutMs: expiresInMs + timeoutMs,
          what: 'the fall',
        });
        const fall = changes.all[3]!;
        expect([fall.entity.id, fall.previous, fall.current, fall.cause]).toEqual(['00uann', 'high', 'none', 'expiry']);
        expect(fall.at).toBe(new Date(now + expiresInMs).toISOString());
        expect(fall.alert_id).toBe(rises.find((c) => c.entity.id === '00uann')!.alert_id);
        // Her state's tombstone: an empty value, or no record at all where the stream drops tombstoned keys as
        // compaction does (Kafka; Stream.readLatestByKey).
        await waitFor(async () => (await stream.readLatestByKey(topics.state)).get(ann)?.value.length ?? 0, {
          until: (n) => n === 0,
          timeoutMs,
          what: "ann's tombstone (her state record's length)",
        });

        // A restart, then a new finding as a marker: once it is in, anything repeated would be in too.
        await alerting.stop();
        alerting = await start();
        await stream.append(
          t.logs,
          // After every event so far (there is no allowed lateness): Paris, then New York half a second later.
          riskTravelEvents('acme', [{ user: 'dan', tripAt: Date.now() }], Date.now() + 1000, 500),
        );
        await waitFor(() => changes.all, {
          until: (got) => got.some((c) => c.entity.id === '00udan'),
          timeoutMs,
          what: "dan's rise",
        });
        expect(changes.all.map((c) => `${c.entity.id}:${c.current}`).sort()).toEqual([
          '00uann:high',
          '00uann:none',
          '00ubob:high',
          '00ucid:high',
          '00udan:high',
        ]);
        expect(new Set(changes.all.map((c) => c.change_id)).size).toBe(5);
        expect(alerting.riskCounters.changes).toBe(1);
      } finally {
        await changes.stop();
        await alerting.stop();
      }
    },
    timeoutMs * 3 + expiresInMs,
  );
}
