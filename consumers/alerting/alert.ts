import { createHash } from 'node:crypto';
import type { CompiledRule, RuleKind, Severity } from './rules/types.js';

/**
 * One finding, as published on `<prefix>.alerts`, stored in ClickHouse and
 * posted to webhooks. `alert_id` is a hash of what the finding is (rule, org,
 * group key and the events or instant that make it), never of when it was
 * computed, so re-evaluating the same events after a restart yields the same
 * id and every output can drop the repeat.
 */
export interface Alert {
  readonly alert_id: string;
  readonly rule_id: string;
  readonly rule_title: string;
  readonly severity: Severity;
  readonly kind: RuleKind;
  readonly org: string;
  /** The group key: JSON array of the group_by values (org is separate). */
  readonly key: string;
  /** ISO-8601 event time of the finding (last event, or when the silence reached window_ms). */
  readonly event_time: string;
  readonly first_event_time: string;
  readonly count: number;
  /** Ids of the events behind the finding (at most 20). */
  readonly event_ids: readonly string[];
}

export const MAX_EVENT_IDS = 20;

/** The stable id: 32 hex chars of sha256 over rule, org, key and the finding's identity. */
export function alertId(ruleId: string, org: string, key: string, identity: string): string {
  return createHash('sha256').update(`${ruleId}\n${org}\n${key}\n${identity}`).digest('hex').slice(0, 32);
}

export function makeAlert(
  rule: CompiledRule,
  org: string,
  key: string,
  identity: string,
  firstMs: number,
  lastMs: number,
  count: number,
  ids: readonly string[],
): Alert {
  return {
    alert_id: alertId(rule.id, org, key, identity),
    rule_id: rule.id,
    rule_title: rule.title,
    severity: rule.severity,
    kind: rule.kind,
    org,
    key,
    event_time: new Date(lastMs).toISOString(),
    first_event_time: new Date(firstMs).toISOString(),
    count,
    event_ids: ids.slice(0, MAX_EVENT_IDS),
  };
}
