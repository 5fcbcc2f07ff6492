/**
 * ClickHouse output: `<prefix>.alerts` → `{db}.alerts` through the sink's own
 * writer (deterministic inserts per offset range with a dedup token, retried
 * without end, rejects to the deadletter topic), on group `<group>.clickhouse`.
 *
 * A grouped alert's revisions share its alert_id and event_time, so they are
 * one row of the ReplacingMergeTree: the latest inserted wins (its version,
 * ingested_at, is the insert's time, and within one insert the last row), and
 * the records of a partition are inserted in offset order, so that is the
 * highest revision once a redelivered range has been written again.
 */
import type { Logger } from '../../../platform/log.js';
import type { Store } from '../../../platform/store/index.js';
import type { ConsumedRecord, Consumer, Stream } from '../../../platform/stream/types.js';
import { createSinkTelemetry } from '../../../platform/store/table-writer-telemetry.js';
import { writeBatch, type MapResult, type Pipeline } from '../../../platform/store/table-writer.js';
import type { Alert } from '../alert.js';

export interface AlertRow {
  readonly event_time: string;
  readonly first_event_time: string;
  readonly alert_id: string;
  readonly rule_id: string;
  readonly rule_title: string;
  readonly severity: string;
  readonly kind: string;
  readonly org: string;
  readonly group_key: string;
  readonly event_count: number;
  readonly event_ids: readonly string[];
  /** Migration 033: a grouped alert's revision, findings, last event, period end, dedup text (default: 1 finding). */
  readonly revision: number;
  readonly finding_count: number;
  readonly last_event_time: string;
  readonly group_until: string | null;
  readonly dedup: string;
}

/** ClickHouse DateTime64 text from ISO-8601. */
const chTime = (iso: string) => iso.replace('T', ' ').replace('Z', '');

export function mapAlertRecord(rec: ConsumedRecord): MapResult<AlertRow> {
  let a: Alert;
  try {
    a = JSON.parse(rec.value.toString('utf8')) as Alert;
  } catch {
    return { ok: false, reason: 'alert record is not JSON' };
  }
  if (typeof a?.alert_id !== 'string' || typeof a.event_time !== 'string')
    return { ok: false, reason: 'alert record lacks alert_id/event_time' };
  return {
    ok: true,
    row: {
      event_time: chTime(a.event_time),
      first_event_time: chTime(a.first_event_time),
      alert_id: a.alert_id,
      rule_id: a.rule_id,
      rule_title: a.rule_title,
      severity: a.severity,
      kind: a.kind,
      org: a.org,
      group_key: a.key,
      event_count: a.count,
      event_ids: a.event_ids,
      revision: a.revision ?? 0,
      finding_count: a.findings ?? 1,
      last_event_time: chTime(a.last_event_time ?? a.event_time),
      group_until: a.group_until ? chTime(a.group_until) : null,
      dedup: a.dedup ?? '',
    },
  };
}

export interface ClickHouseOutputOptions {
  readonly stream: Stream;
  readonly store: Store;
  readonly alertsTopic: string;
  readonly deadletterTopic: string;
  readonly group: string;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly table?: string;
}

export function startClickHouseOutput(o: ClickHouseOutputOptions): Promise<Consumer> {
  const pipeline: Pipeline = { table: o.table ?? 'alerts', map: mapAlertRecord, onReject: 'deadletter' };
  const deps = {
    store: o.store,
    stream: o.stream,
    deadletterTopic: o.deadletterTopic,
    telemetry: createSinkTelemetry(o.logger),
    signal: o.signal,
  };
  return o.stream.consume({
    topic: o.alertsTopic,
    group: `${o.group}.clickhouse`,
    maxBatchRecords: 1000,
    maxBatchWaitMs: 500,
    handler: (batch) => writeBatch(deps, pipeline, batch),
  });
}
