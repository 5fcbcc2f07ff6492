import type { PlatformConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { openEmbeddedStream } from './embedded/index.js';
import { topicNames, type Topics } from './headers.js';
import { openKafkaStream } from './kafka/index.js';
import { kafkaConsumerObserver } from './kafka/telemetry.js';
import type { Stream } from './types.js';
import { withRecordFormats, wrapsRecordFormats } from './formats.js';
import { openGeoIp, withEnrichment } from '../enrichment/stream.js';
import { claimDataDir } from '../release/data-dir-marker.js';
import { currentRelease } from '../release/current.js';
import { identityTopic } from '../../schemas/identity.js';
import { riskTopics } from '../../schemas/risk.js';

/**
 * Kafka when `stream.kafka` is configured, otherwise the embedded log under
 * data_dir. A second kind of process beside `hooklog start` (a backfill) passes
 * its own `transactionalId`, so neither fences the other's producer.
 */
export async function openStream(
  config: PlatformConfig,
  logger: Logger,
  opts: { transactionalId?: string } = {},
): Promise<Stream> {
  // Before the stream opens: a GeoIP file that does not load is a CONFIG error now, not after the first event.
  const g = config.enrichment?.geoip;
  const geo = g && (g.city || g.asn) ? openGeoIp(g, config.enrichment!.reload_interval_ms, logger) : null;
  // Every record appended carries its format version, and every record read is checked against what this release
  // reads (formats.ts).
  const prefix = config.stream.topic_prefix;
  let stream: Stream;
  try {
    stream = withRecordFormats(await openBareStream(config, logger, opts), { prefix, logger });
  } catch (err) {
    geo?.stop();
    throw err;
  }
  if (!geo) return stream;
  // Events appended to <prefix>.logs are enriched once, here (platform/enrichment/stream.ts).
  const enriching = withEnrichment(stream, { prefix, lookup: geo, onClose: () => geo.stop() });
  wrapsRecordFormats(enriching, stream);
  return enriching;
}

async function openBareStream(
  config: PlatformConfig,
  logger: Logger,
  opts: { transactionalId?: string },
): Promise<Stream> {
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
      observer: kafkaConsumerObserver(logger),
      ...(opts.transactionalId ? { transactionalId: opts.transactionalId } : {}),
      logger,
    });
  }
  const topics = topicNames(s.topic_prefix);
  // Before the log opens (or creates) anything: a directory a newer release has made require a newer hooklog is
  // refused here, untouched, and this start is recorded.
  claimDataDir(config.data_dir, currentRelease());
  return openEmbeddedStream({
    dataDir: config.data_dir,
    segmentBytes: s.embedded.segment_bytes,
    retentionHours: s.embedded.retention_hours,
    maxBytes: s.embedded.max_bytes,
    // The cap refuses what comes in from outside; consumers' own writes (dead letters, alerts,
    // their state, cursors) must still go, or a full log could never drain.
    cappedTopics: [topics.logs, topics.legacyEvents, topics.tokenDecisions, topics.securityEvents],
    logger,
  });
}

/**
 * Creates hooklog's topics (missing ones only). Cursors and risk states are compacted: only the latest per key
 * matters. The risk topics (schemas/risk.ts) are made here, not by alerting, because their readers (the token
 * hook's view, the Shared Signals transmitter) may start before any alerting process has.
 */
export async function ensureHooklogTopics(stream: Stream, config: PlatformConfig): Promise<Topics> {
  const topics = topicNames(config.stream.topic_prefix);
  const partitions = config.stream.partitions;
  await stream.ensureTopics([
    { name: topics.logs, partitions },
    { name: topics.legacyEvents, partitions },
    { name: topics.deadletter, partitions },
    { name: topics.cursors, partitions, compacted: true },
    { name: topics.tokenDecisions, partitions },
    { name: riskTopics(config.stream.topic_prefix).state, partitions, compacted: true },
    { name: riskTopics(config.stream.topic_prefix).changes, partitions },
    { name: topics.securityEvents, partitions },
    // The identity sync's records (schemas/identity.ts): one per user, the latest kept.
    { name: identityTopic(config.stream.topic_prefix), partitions, compacted: true },
  ]);
  return topics;
}
