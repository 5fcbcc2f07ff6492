import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import { openEmbeddedStream } from './embedded/index.js';
import { topicNames, type Topics } from './headers.js';
import { openKafkaStream } from './kafka/index.js';
import type { Stream } from './types.js';

/** Kafka when `stream.kafka` is configured, otherwise the embedded log under data_dir. */
export async function openStream(config: Config, logger: Logger): Promise<Stream> {
  const s = config.stream;
  if (s.kafka) {
    return openKafkaStream({
      brokers: s.kafka.brokers,
      clientId: s.kafka.client_id,
      ...(config.instance_id ? { instanceId: config.instance_id } : {}),
      topicPrefix: s.topic_prefix,
      sessionTimeoutMs: s.kafka.session_timeout_ms,
      heartbeatIntervalMs: s.kafka.heartbeat_interval_ms,
      replicationFactor: s.kafka.replication_factor,
      ssl: s.kafka.ssl,
      ...(s.kafka.sasl ? { sasl: s.kafka.sasl } : {}),
      logger,
    });
  }
  return openEmbeddedStream({
    dataDir: config.data_dir,
    segmentBytes: s.embedded.segment_bytes,
    retentionHours: s.embedded.retention_hours,
    logger,
  });
}

/** Creates hooklog's topics (missing ones only). Cursors are compacted: only the latest per key matters. */
export async function ensureHooklogTopics(stream: Stream, config: Config): Promise<Topics> {
  const topics = topicNames(config.stream.topic_prefix);
  const partitions = config.stream.partitions;
  await stream.ensureTopics([
    { name: topics.logs, partitions },
    { name: topics.legacyEvents, partitions },
    { name: topics.deadletter, partitions },
    { name: topics.cursors, partitions, compacted: true },
    { name: topics.tokenDecisions, partitions },
  ]);
  return topics;
}
