import { describe, expect, it } from 'vitest';
import { total } from '../../../test/support/metrics.js';
import { silentLogger } from '../../log.js';
import { renderMetrics } from '../../metrics.js';
import { kafkaConsumerObserver } from './telemetry.js';

describe('kafkaConsumerObserver', () => {
  it('counts group events by group and type', async () => {
    const observe = kafkaConsumerObserver(silentLogger());
    observe({ type: 'assigned', consumer: 'sink-x#3', memberId: 'm', partitions: [0, 1] });
    observe({ type: 'commit-failed', consumer: 'sink-x#3', partition: 0, offset: 7 });
    observe({ type: 'commit-failed', consumer: 'sink-x#4', partition: 1, offset: 9 });
    const text = (await renderMetrics()).body;
    expect(total(text, 'hooklog_kafka_consumer_events_total', { group: 'sink-x', type: 'assigned' })).toBe(1);
    expect(total(text, 'hooklog_kafka_consumer_events_total', { group: 'sink-x', type: 'commit-failed' })).toBe(2);
  });
});
