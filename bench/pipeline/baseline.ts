/**
 * The baseline: ClickHouse's own Kafka table engine (built into chdb) reading
 * the same topic into the same `events_v2` table the sink writes (created by
 * hooklog's own migrations), through a materialized view that extracts the
 * same columns with JSONExtract*. What hooklog's sink does in TypeScript, done inside the
 * engine: the bar a hand-written consumer has to be measured against.
 *
 * The Kafka engine consumes on ClickHouse's background threads once a
 * materialized view reads from it, so it runs inside the chdb process with no
 * server (checked before this bench was written: 100 000 records arrive with
 * default settings; see BENCHMARKS.md).
 */
import type { Store } from '../../platform/store/index.js';
import { Header } from '../../platform/stream/headers.js';

export interface EngineVariant {
  readonly label: string;
  /** Extra `SETTINGS` of the Kafka table, as `name = value` pairs. */
  readonly settings: Readonly<Record<string, string | number>>;
}

/**
 * `tuned` batches like hooklog's sink does by default (5000 records or 1 s,
 * whichever first) and runs one consumer thread per core (ClickHouse refuses
 * more consumers than physical cores); `defaults` is what a user gets without
 * tuning (one consumer, blocks up to max_insert_block_size, 7.5 s flushes).
 */
export const ENGINE_VARIANTS: readonly EngineVariant[] = [
  {
    label: 'kafka-engine tuned',
    settings: {
      kafka_num_consumers: 2,
      kafka_thread_per_consumer: 1,
      kafka_max_block_size: 5000,
      kafka_flush_interval_ms: 1000,
    },
  },
  { label: 'kafka-engine defaults', settings: {} },
];

const header = (name: string) => `_headers.value[indexOf(_headers.name, '${name}')]`;
const json = (...path: string[]) => `JSONExtractString(raw, ${path.map((p) => `'${p}'`).join(', ')})`;
/**
 * The table the view writes: the one the sink writes. Not `events`, which is a
 * plain view over it since migration 005: ClickHouse cannot insert into a view,
 * so an engine pointed at `events` fails every block ("Method write is not
 * supported by storage View") before its consumers subscribe, and the group
 * never appears on the broker.
 */
export const TARGET_TABLE = 'events_v2';

const targets = (field: string) =>
  `arrayMap(t -> JSONExtractString(t, '${field}'), JSONExtractArrayRaw(raw, 'target'))`;

/**
 * The view's SELECT: every column the sink fills (consumers/clickhouse-sink/rows.ts), from the same bytes and
 * headers.
 */
export function viewSelect(db: string): string {
  const cols: Array<[string, string]> = [
    ['org', header(Header.org)],
    ['uuid', json('uuid')],
    ['published', `parseDateTime64BestEffort(${json('published')}, 3, 'UTC')`],
    ['event_type', json('eventType')],
    ['version', json('version')],
    ['severity', json('severity')],
    ['display_message', json('displayMessage')],
    ['legacy_event_type', json('legacyEventType')],
    ['actor_id', json('actor', 'id')],
    ['actor_type', json('actor', 'type')],
    ['actor_alternate_id', json('actor', 'alternateId')],
    ['actor_display_name', json('actor', 'displayName')],
    // As the sink: an address that does not parse becomes '::' (IPv4 maps into IPv6).
    ['client_ip', `toIPv6OrDefault(trimBoth(${json('client', 'ipAddress')}))`],
    ['client_user_agent', json('client', 'userAgent', 'rawUserAgent')],
    ['client_browser', json('client', 'userAgent', 'browser')],
    ['client_os', json('client', 'userAgent', 'os')],
    ['client_zone', json('client', 'zone')],
    ['client_device', json('client', 'device')],
    ['geo_country', json('client', 'geographicalContext', 'country')],
    ['geo_state', json('client', 'geographicalContext', 'state')],
    ['geo_city', json('client', 'geographicalContext', 'city')],
    ['geo_postal_code', json('client', 'geographicalContext', 'postalCode')],
    ['geo_lat', `JSONExtract(raw, 'client', 'geographicalContext', 'geolocation', 'lat', 'Nullable(Float64)')`],
    ['geo_lon', `JSONExtract(raw, 'client', 'geographicalContext', 'geolocation', 'lon', 'Nullable(Float64)')`],
    ['as_number', `JSONExtractUInt(raw, 'securityContext', 'asNumber')`],
    ['as_org', json('securityContext', 'asOrg')],
    ['is_proxy', `JSONExtractBool(raw, 'securityContext', 'isProxy')`],
    ['outcome_result', json('outcome', 'result')],
    ['outcome_reason', json('outcome', 'reason')],
    ['target_id', targets('id')],
    ['target_type', targets('type')],
    ['target_alternate_id', targets('alternateId')],
    ['target_display_name', targets('displayName')],
    ['transaction_id', json('transaction', 'id')],
    ['transaction_type', json('transaction', 'type')],
    ['external_session_id', json('authenticationContext', 'externalSessionId')],
    ['root_session_id', json('authenticationContext', 'rootSessionId')],
    ['raw', 'raw'],
    ['source', header(Header.source)],
    ['hook_id', header(Header.hookId)],
    ['delivery_id', header(Header.deliveryId)],
    // As the sink: the header when it parses, else the record's timestamp.
    ['received_at', `ifNull(parseDateTime64BestEffortOrNull(${header(Header.receivedAt)}, 3, 'UTC'), _timestamp_ms)`],
  ];
  return `SELECT ${cols.map(([name, expr]) => `${expr} AS ${name}`).join(',\n  ')}\nFROM ${db}.kafka_queue`;
}

export interface EngineTarget {
  readonly brokers: string;
  readonly topic: string;
  readonly group: string;
}

/** Creates the Kafka table (idle until a view reads it). `store.database` must already hold `events`. */
export async function createQueue(store: Store, variant: EngineVariant, t: EngineTarget): Promise<void> {
  const settings = {
    kafka_broker_list: `'${t.brokers}'`,
    kafka_topic_list: `'${t.topic}'`,
    kafka_group_name: `'${t.group}'`,
    kafka_format: `'JSONAsString'`,
    ...variant.settings,
  };
  const list = Object.entries(settings)
    .map(([k, v]) => `${k} = ${v}`)
    .join(',\n  ');
  await store.command(`CREATE TABLE ${store.database}.kafka_queue (raw String) ENGINE = Kafka SETTINGS\n  ${list}`);
}

/** Attaching the view is what starts consumption. */
export async function createView(store: Store): Promise<void> {
  const db = store.database;
  await store.command(`CREATE MATERIALIZED VIEW ${db}.kafka_mv TO ${db}.${TARGET_TABLE} AS\n${viewSelect(db)}`);
}

interface KafkaConsumerRow {
  consumer_id: string;
  topics: string[];
  partitions: number[];
  offsets: string[];
  exceptions: string[];
  num_messages_read: string;
  num_commits: string;
  is_currently_used: number;
}

/**
 * What the engine's consumers report about themselves (`system.kafka_consumers`):
 * one line per consumer with its assignment, offsets, messages read, commits and
 * the last exception, if any. For a stalled baseline's error message.
 */
export async function engineConsumers(store: Store): Promise<{ text: string; exceptions: string[] }> {
  let rows: KafkaConsumerRow[];
  try {
    rows = await store.query<KafkaConsumerRow>(
      `SELECT consumer_id, assignments.topic AS topics, assignments.partition_id AS partitions,
              assignments.current_offset AS offsets, exceptions.text AS exceptions,
              num_messages_read, num_commits, is_currently_used
       FROM system.kafka_consumers WHERE database = {db:String} AND table = 'kafka_queue'`,
      { db: store.database },
    );
  } catch (err) {
    return {
      text: `system.kafka_consumers unreadable: ${err instanceof Error ? err.message : String(err)}`,
      exceptions: [],
    };
  }
  if (rows.length === 0) return { text: 'system.kafka_consumers: no consumer for the engine table', exceptions: [] };
  const exceptions = [
    ...new Set(rows.flatMap((r) => r.exceptions.map((e) => e.split(', Stack trace')[0]!.split('\n')[0]!))),
  ];
  const lines = rows.map((r) => {
    const assigned = r.partitions.map((p, i) => `${r.topics[i]}[${p}]@${r.offsets[i]}`).join(' ') || 'none';
    return (
      `consumer ${r.consumer_id || '(not subscribed)'}: assigned ${assigned}; ${r.num_messages_read} read, ` +
      `${r.num_commits} commits, in use ${r.is_currently_used === 1}`
    );
  });
  if (exceptions.length > 0) lines.push(`engine exceptions: ${exceptions.join(' | ')}`);
  return { text: lines.join('; '), exceptions };
}

/** Stops the engine's consumers before the database goes: the view first, so nothing is read and dropped. */
export async function dropQueue(store: Store): Promise<void> {
  const db = store.database;
  await store.command(`DROP VIEW IF EXISTS ${db}.kafka_mv SYNC`);
  await store.command(`DROP TABLE IF EXISTS ${db}.kafka_queue SYNC`);
}
