/**
 * The Kafka consumers' group events (assignments, revocations, pauses,
 * replacements, commits) in the process's registry and log: a rebalance storm or commits
 * the broker refuses are otherwise invisible. Labels: the consumer group and
 * the event type (a closed list).
 */
import type { Logger } from '../../log.js';
import { counter } from '../../metrics.js';
import type { KafkaConsumerEvent } from './options.js';

const events = counter({
  name: 'hooklog_kafka_consumer_events_total',
  help: 'Kafka consumer group events: assigned, revoked, paused, resumed, replaced, commit-issued, commit-succeeded, commit-failed.',
  labelNames: ['group', 'type'],
});

const produceRequests = counter({
  name: 'hooklog_kafka_produce_requests_total',
  help: 'Produce requests sent for appends. Each carries every append queued while the previous one was in flight (group commit), so hooklog_kafka_produced_records_total over this is how well appends coalesce: the fewer records a request carries, the more each record costs.',
});
const producedRecords = counter({
  name: 'hooklog_kafka_produced_records_total',
  help: "Records sent in appends' produce requests (retries of a request not counted again).",
});

/** An append's produce request of `records` records is being sent. */
export function produceRequestSent(records: number): void {
  produceRequests.inc();
  producedRecords.inc(records);
}

/** An observer for KafkaStreamOptions.observer. */
export function kafkaConsumerObserver(logger: Logger): (e: KafkaConsumerEvent) => void {
  const log = logger.child({ component: 'kafka-consumer' });
  return (e) => {
    // Consumer names are `<group>#<n>` (one per consume() call in this process).
    const group = e.consumer.replace(/#\d+$/, '');
    events.inc({ group, type: e.type });
    if (e.type === 'assigned') log.info({ group, partitions: e.partitions }, 'kafka partitions assigned');
    else if (e.type === 'revoked')
      log.info({ group, partitions: e.partitions, reason: e.reason }, 'kafka partitions revoked');
    else if (e.type === 'replaced') log.warn({ group, attempt: e.attempt, error: e.error }, 'kafka consumer replaced');
  };
}
