import * as crypto from 'node:crypto';
import type { CompiledRule, RuleKind, Severity } from './rules/types.js';
import type { Labels } from './grouping/labels.js';
import type { RiskEntity, RiskLevel } from '../../schemas/risk.js';
import type { CompiledRisk, RiskUser } from './risk/declaration.js';

/**
 * One finding, as published on `<prefix>.alerts`, stored in ClickHouse and
 * posted to webhooks. `alert_id` is a hash of what the finding is (rule, org,
 * group key and the events or instant that make it), never of when it was
 * computed, so re-evaluating the same events after a restart yields the same
 * id and every output can drop the repeat.
 *
 * A grouped alert (a rule with `dedup`/`dedup_period`, grouping/groups.ts) is
 * published again as findings join it: the same alert_id and event_time, the
 * next `revision`, the new count, times and sample. A reader keeps the highest
 * revision of an id; the fields below `risk` are absent on other alerts (and
 * on records of earlier releases), which read as revision 0 of one finding.
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
  /** Present when the rule declares risk and the finding names a user: its contribution to the user's level. */
  readonly risk?: AlertRisk;
  /** Grouped: 0 for the opening record (the one webhooks post), n for the n-th update of the same alert. */
  readonly revision?: number;
  /** Grouped: findings in the alert (`count` is the events behind them). */
  readonly findings?: number;
  /** Grouped: ISO-8601 time of its latest event; `event_time` stays the opening finding's. */
  readonly last_event_time?: string;
  /** Grouped: ISO-8601 end of its period (opening event time + dedup_period); later findings open a new alert. */
  readonly group_until?: string;
  /** Grouped by a `dedup` expression: its text, bounded and with invisible characters shown. */
  readonly dedup?: string;
}

/** A finding's say on a user's risk level, carried by its alert (risk/fold.ts makes it a contribution). */
export interface AlertRisk {
  readonly entity: RiskEntity;
  readonly level: RiskLevel;
  readonly reason: string;
  /** ISO-8601: the finding's event time plus the rule's ttl. */
  readonly expires_at: string;
}

/** `alert` with the risk its rule declares, for `user`; unchanged without a user. */
export function withRisk(alert: Alert, risk: CompiledRisk, user: RiskUser | null): Alert {
  if (user === null) return alert;
  const expires = Date.parse(alert.event_time) + risk.ttlMs;
  return {
    ...alert,
    risk: {
      entity: { type: 'user', ...user },
      level: risk.level,
      reason: risk.reason,
      expires_at: new Date(expires).toISOString(),
    },
  };
}

export const MAX_EVENT_IDS = 20;

/**
 * SHA-256 as hex. The one-shot crypto.hash (Node 20.12+) skips creating a
 * Hash object per alert, a third of makeAlert's time when half the events
 * alert; the same digest either way.
 */
const sha256Hex: (s: string) => string =
  typeof crypto.hash === 'function'
    ? (s) => crypto.hash('sha256', s, 'hex')
    : (s) => crypto.createHash('sha256').update(s).digest('hex');

/** The stable id: 32 hex chars of sha256 over rule, org, key and the finding's identity. */
export function alertId(ruleId: string, org: string, key: string, identity: string): string {
  return sha256Hex(`${ruleId}\n${org}\n${key}\n${identity}`).slice(0, 32);
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
  labels?: Labels,
): Alert {
  // A match's first and last event are one: format the instant once.
  const last = new Date(lastMs).toISOString();
  return {
    alert_id: alertId(rule.id, org, key, identity),
    rule_id: rule.id,
    rule_title: labels?.title ?? rule.title,
    severity: labels?.severity ?? rule.severity,
    kind: rule.kind,
    org,
    key,
    event_time: last,
    first_event_time: firstMs === lastMs ? last : new Date(firstMs).toISOString(),
    count,
    event_ids: ids.slice(0, MAX_EVENT_IDS),
  };
}

/** Each alert once, as its highest revision, in the order their ids first appear. */
export function latestRevisions(alerts: readonly Alert[]): Alert[] {
  const byId = new Map<string, Alert>();
  for (const a of alerts) {
    const had = byId.get(a.alert_id);
    if (!had || (a.revision ?? 0) >= (had.revision ?? 0)) byId.set(a.alert_id, a);
  }
  return [...byId.values()];
}
