/**
 * The Kafka consumers' group events (assignments, revocations, pauses,
 * replacements, commits) in the process's registry and log: a rebalance storm or commits
 * the broker refuses are otherwise invisible. Labels: the consumer group and
 * the event type (a closed list).
 */
import type { Logger } from '../../log.js';
import { counter, gauge } from '../../metrics.js';
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

const tableKeys = gauge({
  name: 'hooklog_kafka_table_keys',
  help: "Keys a compacted topic's long-lived reader keeps in this process (the latest record of each; a tombstone removes its key): bounded by the topic's live keys, not its history.",
  labelNames: ['topic'],
});
const tableBytes = gauge({
  name: 'hooklog_kafka_table_bytes',
  help: "Bytes of the values a compacted topic's long-lived reader keeps in this process (each in its own buffer, not the fetch response it came in).",
  labelNames: ['topic'],
});

/** What the reader of `topic` keeps now (table.ts). */
export function tableSize(topic: string, size: { keys: number; bytes: number }): void {
  tableKeys.set({ topic }, size.keys);
  tableBytes.set({ topic }, size.bytes);
}

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
