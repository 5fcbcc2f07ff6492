/**
 * How the ClickHouse sink writes `<prefix>.risk-changes` into
 * `{db}.risk_changes` (schemas/clickhouse/020_risk_changes.sql), through its
 * `extraPipelines` option like the token hook's decisions: the mapping lives
 * with the component that writes the record, the sink brings the guarantees.
 */
import type { ExtraPipeline, MapResult } from '../../../platform/store/table-writer.js';
import type { ConsumedRecord } from '../../../platform/stream/types.js';
import { formatDateTime64, parseTimestamp } from '../../../platform/time.js';
import { riskChangeSchema } from '../../../schemas/risk.js';

/** One row of `{db}.risk_changes`; `ingested_at` is the table's default. */
export interface RiskChangeRow {
  at: string;
  org: string;
  entity_type: string;
  entity_id: string;
  entity_login: string;
  previous: string;
  current: string;
  cause: string;
  rule_id: string;
  alert_id: string;
  reason: string;
  change_id: string;
  appended_at: string;
}

/** Maps a risk-changes record (a RiskChange) to a row; refuses one that is not a change. */
export function mapRiskChangeRecord(rec: ConsumedRecord): MapResult<RiskChangeRow> {
  let v: unknown;
  try {
    v = JSON.parse(rec.value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'value is not valid JSON' };
  }
  const parsed = riskChangeSchema.safeParse(v);
  if (!parsed.success)
    return {
      ok: false,
      reason: `not a risk change: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    };
  const c = parsed.data;
  const at = parseTimestamp(c.at);
  if (at === null) return { ok: false, reason: 'change has no usable `at`' };
  return {
    ok: true,
    row: {
      at: formatDateTime64(at),
      org: c.org,
      entity_type: c.entity.type,
      entity_id: c.entity.id,
      entity_login: c.entity.login ?? '',
      previous: c.previous,
      current: c.current,
      cause: c.cause,
      rule_id: c.rule_id,
      alert_id: c.alert_id,
      reason: c.reason,
      change_id: c.change_id,
      appended_at: formatDateTime64(rec.timestamp),
    },
  };
}

/** The sink pipeline for the changes topic: group `<sink group>.risk-changes`, table risk_changes. */
export function riskChangesPipeline(topic: string): ExtraPipeline {
  return { name: 'risk-changes', topic, table: 'risk_changes', map: mapRiskChangeRecord, onReject: 'deadletter' };
}
