/**
 * How the ClickHouse sink writes `<prefix>.legacy-events` into
 * `{db}.legacy_events` (schemas/clickhouse/004_legacy_events.sql). The mapping
 * lives with the component that defines the records; the sink brings the
 * guarantees (per-partition batches, dedup tokens, commit after insert, dead
 * letters) through its `extraPipelines` option. Tolerant like the events
 * mapping: only a missing eventId or published makes a record uninsertable.
 */
import { obj, objects, parseObject, str } from '../../platform/store/json.js';
import type { ExtraPipeline, MapResult } from '../../platform/store/table-writer.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';

/** One row of `{db}.legacy_events`; `ingested_at` is the table's default. */
export interface LegacyEventRow {
  org: string;
  event_id: string;
  published: string;
  action_object_type: string;
  action_message: string;
  action_categories: string[];
  action_request_uri: string;
  session_id: string;
  request_id: string;
  actor_id: string[];
  actor_object_type: string[];
  actor_display_name: string[];
  actor_login: string[];
  client_ip: string;
  target_id: string[];
  target_object_type: string[];
  target_display_name: string[];
  target_login: string[];
  raw: string;
  source: string;
  received_at: string;
}

const MAX_ID_CHARS = 256;

/** Maps a `<prefix>.legacy-events` record (value: one legacy event's JSON) to a row. */
export function mapLegacyEventRecord(rec: ConsumedRecord): MapResult<LegacyEventRow> {
  const parsed = parseObject(rec.value);
  if (!parsed.ok) return parsed;
  const { raw, value: e } = parsed;
  const eventId = str(e.eventId);
  if (eventId.trim() === '' || eventId.length > MAX_ID_CHARS)
    return { ok: false, reason: 'legacy event has no usable eventId' };
  const published = parseTimestamp(e.published);
  if (published === null) return { ok: false, reason: 'legacy event has no usable published timestamp' };
  const action = obj(e.action);
  const actors = objects(e.actors);
  const targets = objects(e.targets);
  const h = rec.headers;
  return {
    ok: true,
    row: {
      org: h[Header.org] ?? '',
      event_id: eventId,
      published: formatDateTime64(published),
      action_object_type: str(action.objectType),
      action_message: str(action.message),
      action_categories: Array.isArray(action.categories) ? action.categories.map(str) : [],
      action_request_uri: str(action.requestUri),
      session_id: str(e.sessionId),
      request_id: str(e.requestId),
      actor_id: actors.map((a) => str(a.id)),
      actor_object_type: actors.map((a) => str(a.objectType)),
      actor_display_name: actors.map((a) => str(a.displayName)),
      actor_login: actors.map((a) => str(a.login)),
      client_ip: str(actors.find((a) => a.objectType === 'Client')?.ipAddress),
      target_id: targets.map((t) => str(t.id)),
      target_object_type: targets.map((t) => str(t.objectType)),
      target_display_name: targets.map((t) => str(t.displayName)),
      target_login: targets.map((t) => str(t.login)),
      raw,
      source: h[Header.source] ?? '',
      received_at: formatDateTime64(parseTimestamp(h[Header.receivedAt]) ?? rec.timestamp),
    },
  };
}

/** The sink pipeline for legacy events: `<group>.legacy-events` reads `topic` into `legacy_events`. */
export function legacyEventsPipeline(topic: string): ExtraPipeline {
  return { name: 'legacy-events', topic, table: 'legacy_events', map: mapLegacyEventRecord, onReject: 'deadletter' };
}
