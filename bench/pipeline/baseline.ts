/**
 * The baseline: ClickHouse's own Kafka table engine (built into chdb) reading
 * the same topic into the same events table the sink writes (`EVENTS_TABLE`, created by
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
import { EVENTS_TABLE } from '../../schemas/tables.js';

export interface EngineVariant {
  readonly label: string;
  /** Extra `SETTINGS` of the Kafka table, as `name = value` pairs. */
  readonly settings: Readonly<Record<string, string | number>>;
}

/**
 * `tuned` batches like hooklog's sink (`batchRecords`, the sink's max_batch_records, or 1 s, whichever
 * first) and runs one consumer thread per core (ClickHouse refuses more consumers than physical cores);
 * `defaults` is what a user gets without tuning (one consumer, blocks up to max_insert_block_size, 7.5 s
 * flushes).
 */
export function engineVariants(batchRecords: number): readonly EngineVariant[] {
  return [
    {
      label: TUNED,
      settings: {
        kafka_num_consumers: 2,
        kafka_thread_per_consumer: 1,
        kafka_max_block_size: batchRecords,
        kafka_flush_interval_ms: 1000,
      },
    },
    { label: 'kafka-engine defaults', settings: {} },
  ];
}
export const TUNED = 'kafka-engine tuned';

/** Where the view reads: the table, and how it names a record header and the receipt time. */
export interface ViewSource {
  readonly table: string;
  readonly header: (name: string) => string;
  readonly receivedAt: string;
}

const kafkaHeader = (name: string) => `_headers.value[indexOf(_headers.name, '${name}')]`;

/** The Kafka table's virtual columns. As the sink: the header when it parses, else the record's timestamp. */
const kafkaSource = (db: string): ViewSource => ({
  table: `${db}.kafka_queue`,
  header: kafkaHeader,
  receivedAt: `ifNull(parseDateTime64BestEffortOrNull(${kafkaHeader(Header.receivedAt)}, 3, 'UTC'), _timestamp_ms)`,
});
const json = (...path: string[]) => `JSONExtractString(raw, ${path.map((p) => `'${p}'`).join(', ')})`;
/** As the sink: a scalar as text, NULL when absent or null (an object comes out as its JSON, the sink's NULL). */
const opt = (...path: string[]) => `JSONExtract(raw, ${path.map((p) => `'${p}'`).join(', ')}, 'Nullable(String)')`;
const ip = `trimBoth(${json('client', 'ipAddress')})`;
/**
 * The table the view writes: the one the sink writes. Not `events`, which is a
 * plain view over it since migration 005: ClickHouse cannot insert into a view,
 * so an engine pointed at `events` fails every block ("Method write is not
 * supported by storage View") before its consumers subscribe, and the group
 * never appears on the broker.
 */
export const TARGET_TABLE = EVENTS_TABLE;

const targets = (field: string) =>
  `arrayMap(t -> JSONExtractString(t, '${field}'), JSONExtractArrayRaw(raw, 'target'))`;

/**
 * The view's SELECT: every column the sink fills (consumers/clickhouse-sink/rows.ts), from the same bytes and
 * headers.
 */
export function viewSelect(db: string, from: ViewSource = kafkaSource(db)): string {
  const header = from.header;
  const cols: Array<[string, string]> = [
    ['org', header(Header.org)],
    ['uuid', `lower(${json('uuid')})`],
    ['published', `parseDateTime64BestEffort(${json('published')}, 3, 'UTC')`],
    ['event_type', json('eventType')],
    ['version', opt('version')],
    ['severity', opt('severity')],
    ['display_message', opt('displayMessage')],
    ['legacy_event_type', opt('legacyEventType')],
    ['actor_id', opt('actor', 'id')],
    ['actor_type', opt('actor', 'type')],
    ['actor_alternate_id', opt('actor', 'alternateId')],
    ['actor_display_name', opt('actor', 'displayName')],
    // As the sink (without its request.ipChain fall-back): IPv4 as a.b.c.d, IPv6 canonical, else NULL.
    [
      'client_ip',
      `multiIf(isIPv4String(${ip}), ${ip}, isIPv6String(${ip}), ` +
        `replaceRegexpOne(toString(toIPv6(${ip})), '^::ffff:(\\d+\\.\\d+\\.\\d+\\.\\d+)$', '\\1'), NULL)`,
    ],
    ['client_user_agent', opt('client', 'userAgent', 'rawUserAgent')],
    ['client_browser', opt('client', 'userAgent', 'browser')],
    ['client_os', opt('client', 'userAgent', 'os')],
    ['client_zone', opt('client', 'zone')],
    ['client_device', opt('client', 'device')],
    ['geo_country', opt('client', 'geographicalContext', 'country')],
    ['geo_state', opt('client', 'geographicalContext', 'state')],
    ['geo_city', opt('client', 'geographicalContext', 'city')],
    ['geo_postal_code', opt('client', 'geographicalContext', 'postalCode')],
    ['geo_lat', `JSONExtract(raw, 'client', 'geographicalContext', 'geolocation', 'lat', 'Nullable(Float64)')`],
    ['geo_lon', `JSONExtract(raw, 'client', 'geographicalContext', 'geolocation', 'lon', 'Nullable(Float64)')`],
    ['as_number', `JSONExtract(raw, 'securityContext', 'asNumber', 'Nullable(UInt32)')`],
    ['as_org', opt('securityContext', 'asOrg')],
    ['is_proxy', `JSONExtract(raw, 'securityContext', 'isProxy', 'Nullable(Bool)')`],
    ['outcome_result', opt('outcome', 'result')],
    ['outcome_reason', opt('outcome', 'reason')],
    ['target_id', targets('id')],
    ['target_type', targets('type')],
    ['target_alternate_id', targets('alternateId')],
    ['target_display_name', targets('displayName')],
    ['transaction_id', opt('transaction', 'id')],
    ['transaction_type', opt('transaction', 'type')],
    ['external_session_id', opt('authenticationContext', 'externalSessionId')],
    ['root_session_id', opt('authenticationContext', 'rootSessionId')],
    ['raw', 'raw'],
    ['source', header(Header.source)],
    ['hook_id', header(Header.hookId)],
    ['delivery_id', header(Header.deliveryId)],
    ['received_at', from.receivedAt],
  ];
  return `SELECT ${cols.map(([name, expr]) => `${expr} AS ${name}`).join(',\n  ')}\nFROM ${from.table}`;
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
