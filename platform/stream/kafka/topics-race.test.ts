/**
 * Instances of a fleet start together and create the same topics. Each must
 * come up: losing the creation race ("already exists", then "unknown topic"
 * while the winner's topic reaches the brokers) is waiting, not failing.
 * Found by the fleet e2e test, where one of three instances exited with
 * STREAM_UNAVAILABLE on a fresh broker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../log.js';
import { randomName, waitFor } from '../../../test/support/wait.js';
import { kafkaBrokerList } from '../../../test/kafka/inject.js';
import type { Stream, TopicSpec } from '../types.js';
import { openKafkaStream } from './index.js';

const streams: Stream[] = [];
afterEach(async () => {
  for (const s of streams.splice(0)) await s.close();
});

describe('kafka topic creation', () => {
  it('lets several instances create the same fresh topics at once, every one succeeding', async () => {
    const opened = await Promise.all(
      ['a', 'b', 'c', 'd', 'e', 'f'].map((instanceId) =>
        openKafkaStream({ brokers: kafkaBrokerList(), clientId: 'race-test', instanceId, logger: silentLogger() }),
      ),
    );
    streams.push(...opened);
    for (let round = 0; round < 6; round++) {
      const prefix = randomName('race');
      const specs: TopicSpec[] = ['logs', 'deadletter', 'cursors', 'alerts', 'state'].map((t) => ({
        name: `${prefix}.${t}`,
        partitions: 8,
        compacted: t === 'cursors' || t === 'state',
      }));
      const results = await Promise.allSettled(opened.map((s) => s.ensureTopics(specs)));
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(opened.map(() => 'ok'));
      // Usable by any of them: an append by one is soon readable by another. Right after creation a broker
      // may still answer NOT_LEADER_FOR_PARTITION (retriable) for a moment, so this polls with a deadline.
      await opened[opened.length - 1]!.append(specs[0]!.name, [{ key: 'k', value: Buffer.from('v'), headers: {} }]);
      await waitFor(
        async () => [...(await opened[0]!.latestOffsets(specs[0]!.name)).values()].reduce((n, o) => n + o, 0),
        {
          until: (n) => n === 1,
          timeoutMs: 20_000,
          what: `the appended record visible to another instance in round ${round}`,
        },
      );
    }
  });
});
