import { z } from 'zod';
import { secret } from './secrets.js';
import type { IpListsConfig } from '../iplists/lists.js';

/**
 * The ground floor's part of hooklog's configuration schema: the sections
 * platform/ itself reads (server, stream, store, data_dir, log_level, log).
 * Each component keeps its own section's schema beside its code, and
 * cli/config/schema.ts composes the whole, where the process is assembled.
 * The schema is the one source of truth for the config's TypeScript type, its
 * validation and its documentation. Every option has a description and a
 * default; objects are strict (an unknown key is an error, usually a typo that
 * would otherwise silently do nothing); units live in names.
 */
const port = z.number().int().min(0).max(65535);
const identifier = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a letter or _ followed by letters, digits or _');
const slug = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of letters, digits, . _ - (not starting with . _ -)');

const tlsSchema = z
  .strictObject({
    cert_path: z.string().min(1).describe('PEM certificate chain file for serving HTTPS directly.'),
    key_path: z.string().min(1).describe('PEM private key file matching cert_path.'),
  })
  .describe(
    'Serve HTTPS directly. Omit when a TLS-terminating proxy sits in front (the identity service only calls https URIs).',
  );

export const serverSchema = z
  .strictObject({
    host: z.string().default('0.0.0.0').describe('Address to listen on.'),
    port: port.default(8080).describe('HTTP(S) port. 0 picks a free port (tests).'),
    body_limit_bytes: z
      .number()
      .int()
      .min(1024)
      .default(5 * 1024 * 1024)
      .describe('Largest request body accepted; larger requests get 413. Deliveries batch events, so leave room.'),
    ack_timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(2900)
      .default(2000)
      .describe(
        "How long a delivery may wait for the stream to acknowledge before hooklog answers 503 so the service retries once. Must stay under the service's 3 s time-out.",
      ),
    tls: tlsSchema.optional(),
    trust_proxy: z.boolean().default(false).describe('Trust X-Forwarded-* headers (only behind a proxy you run).'),
    headers_timeout_ms: z
      .number()
      .int()
      .min(500)
      .max(60_000)
      .default(5000)
      .describe(
        'A client must finish sending its request headers within this long or its socket is closed (slow-header attacks). The service sends whole requests at once.',
      ),
    request_timeout_ms: z
      .number()
      .int()
      .min(1000)
      .max(300_000)
      .default(10_000)
      .describe(
        'A client must finish sending its whole request (headers and body) within this long or its socket is closed. Must be above headers_timeout_ms.',
      ),
  })
  .prefault({})
  .describe('The HTTP server that receives hooks and serves health, metrics and the query API.');

const kafkaSchema = z
  .strictObject({
    brokers: z
      .array(z.string().regex(/^[^:\s]+:\d+$/, 'must be host:port'))
      .min(1)
      .describe('Bootstrap brokers, host:port. Setting this section selects Kafka.'),
    client_id: z
      .string()
      .default('hooklog')
      .describe('Kafka client id; also the base of every transactional id (see docs/operate/fleet.md, "Identities").'),
    session_timeout_ms: z
      .number()
      .int()
      .min(3000)
      .max(300_000)
      .default(10_000)
      .describe(
        'Consumer-group session time-out: how long the partitions (and polled orgs) of an instance that died without a goodbye stay with it ' +
          "before others take over. A stopped instance leaves at once. Must be within the broker's group.min/max.session.timeout.ms (6 s..30 min by default).",
      ),
    heartbeat_interval_ms: z
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(1000)
      .describe(
        'Consumer-group heartbeat interval: how soon a member notices a rebalance. Below a third of session_timeout_ms.',
      ),
    replication_factor: z
      .number()
      .int()
      .min(1)
      .default(1)
      .describe('Replication factor for topics hooklog creates. Use 3 in production.'),
    ssl: z.boolean().default(false).describe('Connect with TLS.'),
    sasl: z
      .strictObject({
        mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).describe('SASL mechanism.'),
        username: z.string().min(1).describe('SASL user.'),
        password: secret(z.string().min(1).describe('SASL password (use ${ENV_VAR}).')),
      })
      .optional()
      .describe('SASL authentication.'),
  })
  .describe('Apache Kafka. When absent, hooklog uses the embedded log under data_dir.');

const embeddedStreamSchema = z
  .strictObject({
    segment_bytes: z
      .number()
      .int()
      .min(1024)
      .default(64 * 1024 * 1024)
      .describe('Size at which the embedded log starts a new segment file.'),
    retention_hours: z
      .number()
      .min(1)
      .default(168)
      .describe(
        'Segments older than this are deleted once every consumer group has committed them (never before). The embedded log is a buffer, not an archive: ClickHouse is.',
      ),
    max_bytes: z
      .number()
      .int()
      .min(4096)
      .default(8 * 1024 * 1024 * 1024)
      .describe(
        'Disk cap of the embedded log (at least 4 segments). Beyond it new records are refused (hooks get 503 with Retry-After, pollers wait) until consumers catch up; nothing is deleted that a consumer group has not committed.',
      ),
  })
  .prefault({})
  .describe('The embedded log used when stream.kafka is not set.');

export const streamSchema = z
  .strictObject({
    topic_prefix: slug
      .default('hooklog')
      .describe(
        'Topics are <prefix>.logs, .legacy-events, .deadletter, .cursors, .token-decisions, and with alerting .alerts and .alerting-state.',
      ),
    partitions: z
      .number()
      .int()
      .min(1)
      .max(1024)
      .default(4)
      .describe('Partitions for topics hooklog creates. Records are keyed by org, so one org keeps its order.'),
    kafka: kafkaSchema.optional(),
    embedded: embeddedStreamSchema,
  })
  .prefault({})
  .describe('Where events are made durable before they are acknowledged.');

export const storeSchema = z
  .strictObject({
    database: identifier.default('hooklog').describe("ClickHouse database holding hooklog's tables."),
    clickhouse: z
      .strictObject({
        url: z
          .url()
          .describe('ClickHouse HTTP(S) URL, e.g. http://clickhouse:8123. Setting this section selects a server.'),
        username: z.string().default('default').describe('ClickHouse user.'),
        password: secret(z.string().default('').describe('ClickHouse password (use ${ENV_VAR}).')),
        request_timeout_ms: z.number().int().min(1000).default(30_000).describe('Per-request time-out.'),
      })
      .optional()
      .describe('A ClickHouse server. When absent, hooklog runs embedded ClickHouse (chdb) under data_dir.'),
    retention_days: z
      .number()
      .int()
      .min(0)
      .max(36_500)
      .default(0)
      .describe(
        'Events older than this many days (by published) are dropped by ClickHouse (a TTL set at start-up). 0 keeps them forever.',
      ),
  })
  .prefault({})
  .describe('Where events are stored and queried.');

export const logSchema = z
  .strictObject({
    format: z
      .enum(['auto', 'pretty', 'json'])
      .default('auto')
      .describe(
        'auto: human-readable lines when stdout is a terminal, JSON lines otherwise; pretty or json to choose. Secrets are redacted in both.',
      ),
    repeat_interval_s: z
      .number()
      .int()
      .min(0)
      .max(3600)
      .default(10)
      .describe(
        'A warning or error that repeats (same component, message and kind) is written once, then summarised with a count every this many seconds while it lasts, and once when it stops. Metrics still count each failure. 0 writes every line.',
      ),
  })
  .prefault({})
  .describe('How log lines are written.');

export const dataDirSchema = z
  .string()
  .min(1)
  .default('./data')
  .describe('Directory for the embedded log and embedded ClickHouse.');
export const logLevelSchema = z
  .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  .default('info')
  .describe('Log level.');

/** The sections platform/ reads; the whole config (cli/config/schema.ts) has these and the components' own. */
export interface PlatformConfig {
  readonly instance_id?: string | undefined;
  readonly data_dir: z.output<typeof dataDirSchema>;
  readonly log_level: z.output<typeof logLevelSchema>;
  readonly log: z.output<typeof logSchema>;
  readonly server: z.output<typeof serverSchema>;
  readonly stream: z.output<typeof streamSchema>;
  readonly store: z.output<typeof storeSchema>;
  /** enrichment.ip_lists (platform/iplists/); absent in configs built by hand (tests). */
  readonly enrichment?: IpListsConfig | undefined;
}
