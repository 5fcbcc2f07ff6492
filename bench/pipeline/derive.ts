/**
 * Who should derive the events columns, the sink (JavaScript) or ClickHouse (issue 15)? Not part of
 * `npm test`; run it alone for figures:
 *
 *   npx tsx bench/pipeline/derive.ts [--events 20000] [--rounds 7]
 *
 * One chdb session, N generated events inserted in batches of 5000 (the sink's default) with a dedup
 * token each, in interleaved rounds, every path into its own copy of `EVENTS_TABLE`:
 *   js            the sink's path today: rows.ts builds every column, JSONEachRow into the table
 *   sql-columns   only the record's headers and the raw JSON go in (JSONEachRow, raw as a string)
 *                 to a Null table; a materialized view derives the columns with one JSONExtract per
 *                 column (the Kafka-engine baseline's view, baseline.ts). No validation in JS.
 *   sql-one-parse the sink validates and computes uuid and published as today (JSON.parse), sends them
 *                 with the headers and raw; the view parses raw once into a tuple of Dynamic leaves
 *                 (a leaf's JSON type decides text or NULL, as rows.ts does)
 * Prints each round's events/s and events per CPU-second of the process (Node + chdb threads), then
 * the medians and their ratio to js. The SQL views here are for measuring only: neither keeps every
 * rule of rows.ts (sql-columns stores an object as its JSON text and has no request.ipChain fall-back;
 * sql-one-parse reads an array where an object belongs as a positional tuple, and prints floats as
 * ClickHouse does). A Null table feeding views drops a replayed token only with
 * `deduplicate_blocks_in_dependent_materialized_views = 1` (checked on chdb 26.7: without it, both copies stay).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { mapEventRecord } from '../../consumers/clickhouse-sink/rows.js';
import { createLogger } from '../../platform/log.js';
import { parseObject } from '../../platform/store/json.js';
import { migrate, openStore, type Store } from '../../platform/store/index.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import { viewSelect } from './baseline.js';
import { buildWorkload } from './events.js';
import { summarize } from './stats.js';

const { values: args } = parseArgs({
  options: { events: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '7' } },
  strict: true,
});
const BATCH = 5000;

/** The one-parse view: every optional column from one JSONExtract of raw into a tuple of Dynamic leaves. */
function onePassSelect(table: string): string {
  const v = (path: string) => `text(e.${path})`;
  return `WITH
  (v -> multiIf(dynamicType(v) = 'String', v.String, dynamicType(v) = 'Int64', toString(v.Int64),
      dynamicType(v) = 'UInt64', toString(v.UInt64), dynamicType(v) = 'Float64', toString(v.Float64),
      dynamicType(v) = 'Bool', if(v.Bool, 'true', 'false'), NULL)) AS text,
  (v -> multiIf(dynamicType(v) = 'Int64', toFloat64(v.Int64), dynamicType(v) = 'UInt64', toFloat64(v.UInt64),
      dynamicType(v) = 'Float64', v.Float64,
      dynamicType(v) = 'String' AND trimBoth(v.String) != '', toFloat64OrNull(trimBoth(v.String)), NULL)) AS num,
  (s -> multiIf(isIPv4String(s), s, isIPv6String(s),
      replaceRegexpOne(toString(toIPv6(s)), '^::ffff:(\\\\d+\\\\.\\\\d+\\\\.\\\\d+\\\\.\\\\d+)$', '\\\\1'), NULL)) AS ip,
  JSONExtract(raw, 'Tuple(eventType Dynamic, version Dynamic, severity Dynamic, displayMessage Dynamic,
      legacyEventType Dynamic, actor Tuple(id Dynamic, type Dynamic, alternateId Dynamic, displayName Dynamic),
      client Tuple(ipAddress Dynamic, zone Dynamic, device Dynamic,
          userAgent Tuple(rawUserAgent Dynamic, browser Dynamic, os Dynamic),
          geographicalContext Tuple(country Dynamic, state Dynamic, city Dynamic, postalCode Dynamic,
              geolocation Tuple(lat Dynamic, lon Dynamic))),
      securityContext Tuple(asNumber Dynamic, asOrg Dynamic, isProxy Dynamic),
      outcome Tuple(result Dynamic, reason Dynamic), transaction Tuple(id Dynamic, type Dynamic),
      authenticationContext Tuple(externalSessionId Dynamic, rootSessionId Dynamic),
      request Tuple(ipChain Array(Tuple(ip Dynamic))), target Array(String))') AS e,
  arrayFilter(t -> JSONType(t) = 'Object', e.target) AS targets,
  num(e.securityContext.asNumber) AS asn
SELECT org, uuid, published, ifNull(${v('eventType')}, '') AS event_type,
  ${v('version')} AS version, ${v('severity')} AS severity, ${v('displayMessage')} AS display_message,
  ${v('legacyEventType')} AS legacy_event_type, ${v('actor.id')} AS actor_id, ${v('actor.type')} AS actor_type,
  ${v('actor.alternateId')} AS actor_alternate_id, ${v('actor.displayName')} AS actor_display_name,
  coalesce(ip(trimBoth(ifNull(${v('client.ipAddress')}, ''))),
      arrayFirst(x -> x IS NOT NULL, arrayMap(h -> ip(trimBoth(ifNull(text(h.ip), ''))), e.request.ipChain)))
      AS client_ip,
  ${v('client.userAgent.rawUserAgent')} AS client_user_agent, ${v('client.userAgent.browser')} AS client_browser,
  ${v('client.userAgent.os')} AS client_os, ${v('client.zone')} AS client_zone,
  ${v('client.device')} AS client_device, ${v('client.geographicalContext.country')} AS geo_country,
  ${v('client.geographicalContext.state')} AS geo_state, ${v('client.geographicalContext.city')} AS geo_city,
  ${v('client.geographicalContext.postalCode')} AS geo_postal_code,
  num(e.client.geographicalContext.geolocation.lat) AS geo_lat,
  num(e.client.geographicalContext.geolocation.lon) AS geo_lon,
  if(asn = floor(asn) AND asn BETWEEN 0 AND 4294967295, toUInt32(asn), NULL) AS as_number,
  ${v('securityContext.asOrg')} AS as_org,
  if(dynamicType(e.securityContext.isProxy) = 'Bool', e.securityContext.isProxy.Bool, NULL) AS is_proxy,
  ${v('outcome.result')} AS outcome_result, ${v('outcome.reason')} AS outcome_reason,
  arrayMap(t -> ifNull(text(JSONExtract(t, 'id', 'Dynamic')), ''), targets) AS target_id,
  arrayMap(t -> ifNull(text(JSONExtract(t, 'type', 'Dynamic')), ''), targets) AS target_type,
  arrayMap(t -> ifNull(text(JSONExtract(t, 'alternateId', 'Dynamic')), ''), targets) AS target_alternate_id,
  arrayMap(t -> ifNull(text(JSONExtract(t, 'displayName', 'Dynamic')), ''), targets) AS target_display_name,
  ${v('transaction.id')} AS transaction_id, ${v('transaction.type')} AS transaction_type,
  ${v('authenticationContext.externalSessionId')} AS external_session_id,
  ${v('authenticationContext.rootSessionId')} AS root_session_id,
  raw, source, hook_id, delivery_id, received_at
FROM ${table}`;
}

type Insert = (store: Store, batch: readonly ConsumedRecord[], token: string) => Promise<void>;

const headers = (r: ConsumedRecord) => ({
  org: r.headers[Header.org] ?? '',
  source: r.headers[Header.source] ?? '',
  hook_id: r.headers[Header.hookId] ?? '',
  delivery_id: r.headers[Header.deliveryId] ?? '',
  received_at: formatDateTime64(parseTimestamp(r.headers[Header.receivedAt]) ?? r.timestamp),
});

const PATHS: ReadonlyArray<[string, Insert]> = [
  [
    'js',
    (store, batch, token) =>
      store.insertJson(
        'd_js',
        batch.map((r) => {
          const m = mapEventRecord(r);
          if (!m.ok) throw new Error(m.reason);
          return m.row;
        }),
        { dedupToken: token },
      ),
  ],
  [
    'sql-columns',
    (store, batch, token) =>
      store.insertJson(
        'd_columns_in',
        batch.map((r) => ({ raw: r.value.toString('utf8'), ...headers(r) })),
        { dedupToken: token },
      ),
  ],
  [
    'sql-one-parse',
    (store, batch, token) =>
      store.insertJson(
        'd_one_in',
        batch.map((r) => {
          const p = parseObject(r.value);
          if (!p.ok) throw new Error(p.reason);
          const published = parseTimestamp(p.value.published);
          if (published === null) throw new Error('no published');
          const uuid = String(p.value.uuid).toLowerCase();
          return { uuid, published: formatDateTime64(published), raw: p.raw, ...headers(r) };
        }),
        { dedupToken: token },
      ),
  ],
];

async function setUp(store: Store): Promise<void> {
  const db = store.database;
  const inputs = `org String, source String, hook_id String, delivery_id String, received_at DateTime64(3, 'UTC')`;
  for (const t of ['d_js', 'd_columns', 'd_one'])
    await store.command(`CREATE TABLE ${db}.${t} AS ${db}.${EVENTS_TABLE}`);
  await store.command(`CREATE TABLE ${db}.d_columns_in (raw String, ${inputs}) ENGINE = Null`);
  const fromInput = {
    table: `${db}.d_columns_in`,
    header: (name: string) =>
      ({ [Header.org]: 'org', [Header.source]: 'source', [Header.hookId]: 'hook_id' })[name] ?? 'delivery_id',
    receivedAt: 'received_at',
  };
  await store.command(`CREATE MATERIALIZED VIEW ${db}.d_columns_mv TO ${db}.d_columns AS ${viewSelect(db, fromInput)}`);
  await store.command(
    `CREATE TABLE ${db}.d_one_in (uuid String, published DateTime64(3, 'UTC'), raw String, ${inputs}) ENGINE = Null`,
  );
  await store.command(`CREATE MATERIALIZED VIEW ${db}.d_one_mv TO ${db}.d_one AS ${onePassSelect(`${db}.d_one_in`)}`);
}

async function main(): Promise<void> {
  const n = Number(args.events);
  const rounds = Number(args.rounds);
  const logger = createLogger({ level: 'warn', destination: process.stderr });
  const dir = await mkdtemp(join(tmpdir(), 'hooklog-derive-'));
  const store = openStore({ database: 'derive', dataDir: dir, logger });
  try {
    await migrate(store, logger);
    await setUp(store);
    const records: ConsumedRecord[] = buildWorkload(n).records.map((r, offset) => ({
      ...r,
      topic: 'derive',
      partition: 0,
      offset,
      timestamp: Date.now(),
    }));
    const perCpu = new Map<string, number[]>();
    for (let round = 1; round <= rounds; round++) {
      for (const [label, insert] of round % 2 ? PATHS : [...PATHS].reverse()) {
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        for (let i = 0; i < n; i += BATCH) await insert(store, records.slice(i, i + BATCH), `${label}-${round}-${i}`);
        const cpu = process.cpuUsage(cpu0);
        const rate = n / ((cpu.user + cpu.system) / 1e6);
        (perCpu.get(label) ?? perCpu.set(label, []).get(label)!).push(rate);
        const wall = Math.round(n / ((performance.now() - t0) / 1000));
        process.stderr.write(`round ${round} ${label}: ${wall} ev/s, ${Math.round(rate)} ev/CPU-s\n`);
      }
    }
    const js = summarize(perCpu.get('js')!).median;
    for (const [label, rates] of perCpu) {
      const m = summarize(rates).median;
      process.stdout.write(`${label}: median ${Math.round(m)} ev/CPU-s, ${(m / js).toFixed(2)}x js\n`);
    }
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
