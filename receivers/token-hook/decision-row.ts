/**
 * How the ClickHouse sink writes `<prefix>.token-decisions` into
 * `{db}.token_decisions` (schemas/clickhouse/003_token_decisions.sql). The
 * mapping lives with the component that defines the record; the sink brings
 * the delivery guarantees (batches per partition, dedup tokens, commit after
 * insert, dead letters) through its `extraPipelines` option.
 */
import type { ExtraPipeline, MapResult } from '../../platform/store/table-writer.js';
import { formatDateTime64, parseTimestamp } from '../../platform/time.js';
import { Header } from '../../platform/stream/headers.js';
import type { ConsumedRecord } from '../../platform/stream/types.js';

/** One row of `{db}.token_decisions`; `ingested_at` is the table's default. */
export interface TokenDecisionRow {
  decided_at: string;
  org: string;
  hook_id: string;
  decision_id: string;
  event_id: string;
  request_id: string;
  user_id: string;
  client_id: string;
  grant_type: string;
  outcome: string;
  rules_matched: string[];
  commands: string;
  error_summary: string;
  error_kind: string;
  latency_us: number;
  received_at: string;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const UINT32_MAX = 4_294_967_295;

/** Maps a token-decisions record (value: audit.ts's JSON) to a row; refuses records without an id or time. */
export function mapTokenDecisionRecord(rec: ConsumedRecord): MapResult<TokenDecisionRow> {
  let v: unknown;
  try {
    v = JSON.parse(rec.value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'value is not valid JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { ok: false, reason: 'value is not a JSON object' };
  const d = v as Record<string, unknown>;
  const id = str(d.decision_id);
  if (id === '') return { ok: false, reason: 'decision has no decision_id' };
  const decidedAt = parseTimestamp(d.decided_at);
  if (decidedAt === null) return { ok: false, reason: 'decision has no usable decided_at' };
  const latency =
    typeof d.latency_us === 'number' && Number.isFinite(d.latency_us)
      ? Math.min(UINT32_MAX, Math.max(0, Math.round(d.latency_us)))
      : 0;
  return {
    ok: true,
    row: {
      decided_at: formatDateTime64(decidedAt),
      org: str(d.org) || (rec.headers[Header.org] ?? ''),
      hook_id: str(d.hook_id) || (rec.headers[Header.hookId] ?? ''),
      decision_id: id,
      event_id: str(d.event_id),
      request_id: str(d.request_id),
      user_id: str(d.user_id),
      client_id: str(d.client_id),
      grant_type: str(d.grant_type),
      outcome: str(d.outcome),
      rules_matched: Array.isArray(d.rules_matched)
        ? d.rules_matched.filter((r): r is string => typeof r === 'string')
        : [],
      commands: JSON.stringify(d.commands ?? []),
      error_summary: str(d.error_summary),
      error_kind: str(d.error_kind),
      latency_us: latency,
      received_at: formatDateTime64(parseTimestamp(rec.headers[Header.receivedAt]) ?? rec.timestamp),
    },
  };
}

/** The sink pipeline for the decisions topic: group `<sink group>.token-decisions`, table token_decisions. */
export function tokenDecisionsPipeline(topic: string): ExtraPipeline {
  return {
    name: 'token-decisions',
    topic,
    table: 'token_decisions',
    map: mapTokenDecisionRecord,
    onReject: 'deadletter',
  };
}
