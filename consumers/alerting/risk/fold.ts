/**
 * The level fold: one entity's risk state, a finding's contribution arriving,
 * contributions expiring. Pure: the same state, alert and instant give the
 * same state and changes, and every change id derives from what the change
 * is (never from when it was computed), so a change derived again after a
 * crash has the id it had.
 *
 * - The level is the highest contribution not yet expired (schemas/risk.ts
 *   `levelAt`). A contribution that another at or above its level outlasts
 *   can never decide the level and is dropped: a state holds at most one
 *   contribution per level, the higher expiring sooner.
 * - Expiries are taken in the order of their instants, one step per instant,
 *   each step that lowers the level a change (cause `expiry`, `at` the
 *   instant): whether they are applied at once or late (after downtime), the
 *   same changes with the same ids come out.
 * - Before a contribution is added, everything expired by then is applied;
 *   a contribution already expired when it arrives (a backfilled finding
 *   older than its ttl) changes nothing.
 */
import * as crypto from 'node:crypto';
import {
  riskKey,
  riskRank,
  type RiskChange,
  type RiskContribution,
  type RiskLevel,
  type RiskState,
} from '../../../schemas/risk.js';
import type { Alert } from '../alert.js';

/** 32 hex characters of sha256 over the parts. */
function idOf(...parts: string[]): string {
  return crypto.createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32);
}

/** The id of the change a finding's contribution makes (or would make) to an entity. */
export function findingChangeId(org: string, key: string, alertId: string): string {
  return idOf('finding', org, key, alertId);
}

/** The id of the change the expiry of `alertId`'s contribution at `at` makes. */
export function expiryChangeId(org: string, key: string, alertId: string, at: string): string {
  return idOf('expiry', org, key, alertId, at);
}

/** The highest level among contributions (all taken as unexpired), `none` for none. */
function top(cs: readonly RiskContribution[]): RiskLevel {
  let best: RiskLevel = 'none';
  for (const c of cs) if (riskRank(c.level) > riskRank(best)) best = c.level;
  return best;
}

/** The contributions that can still decide the level, in ascending order of expiry. */
function undominated(cs: readonly RiskContribution[]): RiskContribution[] {
  // Latest expiry first; ties by level (highest first), then alert id, so the survivor is always the same one.
  const sorted = [...cs].sort(
    (a, b) =>
      Date.parse(b.expires_at) - Date.parse(a.expires_at) ||
      riskRank(b.level) - riskRank(a.level) ||
      (a.alert_id < b.alert_id ? -1 : a.alert_id > b.alert_id ? 1 : 0),
  );
  const kept: RiskContribution[] = [];
  let best = -1;
  for (const c of sorted) {
    // Everything kept so far outlasts c; c counts only when it is above all of them.
    if (riskRank(c.level) > best) {
      kept.push(c);
      best = riskRank(c.level);
    }
  }
  return kept.reverse();
}

/** When the next contribution of `state` expires (epoch ms), Infinity when none does. */
export function nextExpiry(state: RiskState): number {
  let due = Infinity;
  for (const c of state.contributions) due = Math.min(due, Date.parse(c.expires_at));
  return due;
}

export interface Step {
  /** The entity's state after the step; null when nothing holds it above none any more (a tombstone). */
  readonly state: RiskState | null;
  /** The level changes of the step, in order. */
  readonly changes: readonly RiskChange[];
}

/**
 * Applies every expiry due at `nowMs` (expires_at ≤ now). Returns null when nothing expired (the state stands).
 */
export function expire(state: RiskState, nowMs: number): Step | null {
  let cs = state.contributions;
  if (nextExpiry(state) > nowMs) return null;
  const key = riskKey(state.org, state.entity);
  const changes: RiskChange[] = [];
  let updatedAt = state.updated_at;
  let changeId = state.change_id;
  const instants = [...new Set(cs.map((c) => Date.parse(c.expires_at)))]
    .filter((t) => t <= nowMs)
    .sort((a, b) => a - b);
  for (const t of instants) {
    const gone = cs.filter((c) => Date.parse(c.expires_at) === t);
    const before = top(cs);
    cs = cs.filter((c) => Date.parse(c.expires_at) !== t);
    const after = top(cs);
    // The contribution that held the level, or (nothing fell) the highest that went.
    const holder = [...gone].sort(
      (a, b) => riskRank(b.level) - riskRank(a.level) || (a.alert_id < b.alert_id ? -1 : 1),
    )[0]!;
    const at = new Date(t).toISOString();
    changeId = expiryChangeId(state.org, key, holder.alert_id, at);
    updatedAt = at;
    if (after !== before)
      changes.push({
        change_id: changeId,
        org: state.org,
        entity: state.entity,
        previous: before,
        current: after,
        cause: 'expiry',
        rule_id: holder.rule_id,
        alert_id: holder.alert_id,
        reason: holder.reason,
        at,
      });
  }
  if (cs.length === 0) return { state: null, changes };
  return {
    state: { ...state, level: top(cs), contributions: cs, updated_at: updatedAt, change_id: changeId },
    changes,
  };
}

/**
 * Folds a finding (an alert carrying risk) into its entity's state (`prior`, null when it has none) at `nowMs`:
 * expiries due first, then the contribution. Returns null when nothing changes (no state to write).
 */
export function applyFinding(prior: RiskState | null, alert: Alert, nowMs: number): Step | null {
  const risk = alert.risk;
  if (!risk) return null;
  const expired = prior ? expire(prior, nowMs) : null;
  const base = expired ? expired.state : prior;
  const earlier = expired?.changes ?? [];
  const unchanged = (): Step | null => (expired ? { state: base, changes: earlier } : null);
  if (Date.parse(risk.expires_at) <= nowMs) return unchanged();
  const key = riskKey(alert.org, risk.entity);
  const contribution: RiskContribution = {
    rule_id: alert.rule_id,
    alert_id: alert.alert_id,
    level: risk.level,
    reason: risk.reason,
    expires_at: risk.expires_at,
  };
  const had = base?.contributions ?? [];
  if (had.some((c) => c.alert_id === alert.alert_id)) return unchanged();
  const cs = undominated([...had, contribution]);
  if (!cs.includes(contribution)) return unchanged();
  const before = base?.level ?? 'none';
  const after = top(cs);
  const changeId = findingChangeId(alert.org, key, alert.alert_id);
  // The newest finding's login is kept (a user renamed since, or the first finding did not know it).
  const entity = risk.entity.login || !base ? risk.entity : base.entity;
  const state: RiskState = {
    org: alert.org,
    entity,
    level: after,
    contributions: cs,
    updated_at: alert.event_time,
    change_id: changeId,
  };
  const changes = [...earlier];
  if (after !== before)
    changes.push({
      change_id: changeId,
      org: alert.org,
      entity,
      previous: before,
      current: after,
      cause: 'finding',
      rule_id: alert.rule_id,
      alert_id: alert.alert_id,
      reason: risk.reason,
      at: alert.event_time,
    });
  return { state, changes };
}
