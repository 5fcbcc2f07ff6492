/**
 * Reading a topic's end offsets waits out a partition without a leader (a
 * topic created a moment ago), and gives up at once on what retrying cannot fix.
 * Seen on the real broker: `hooklog start` died of NOT_LEADER_FOR_PARTITION
 * reading `<prefix>.risk` right after creating it (test/e2e/risk-fleet.test.ts).
 */
import { KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { topicOffsets } from './errors.js';

const protocolError = (type: string, code: number, retriable: boolean) =>
  new KafkaJSProtocolError({ message: type, type, code, retriable } as never);

describe('topicOffsets', () => {
  it('retries NOT_LEADER_FOR_PARTITION until the partition has a leader', async () => {
    let calls = 0;
    const admin = {
      fetchTopicOffsets: async () => {
        if (++calls < 3) throw protocolError('NOT_LEADER_FOR_PARTITION', 6, true);
        return [{ partition: 0, offset: '5', high: '5', low: '0' }];
      },
    };
    expect(await topicOffsets(admin, 't')).toEqual([{ partition: 0, offset: '5', high: '5', low: '0' }]);
    expect(calls).toBe(3);
  });

  it('does not retry what waiting cannot fix (authorisation)', async () => {
    let calls = 0;
    const admin = {
      fetchTopicOffsets: async () => {
        calls++;
        throw protocolError('TOPIC_AUTHORIZATION_FAILED', 29, false);
      },
    };
    await expect(topicOffsets(admin, 't')).rejects.toThrow(/reading the end offsets of t/);
    expect(calls).toBe(1);
  });
});
