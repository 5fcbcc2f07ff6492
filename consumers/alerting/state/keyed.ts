/**
 * Per-key state for `stateful` and `first_seen` rules.
 *
 * Order: "the previous event of this user" must mean previous in event time,
 * whatever order the stream delivers them in, or a finding would depend on
 * arrival order and a replay could differ from the live run. So matching
 * events wait in `p` (sorted by time, then id) until the watermark passes
 * them — by then no on-time event can come before them — and are taken in
 * that order (ties by org: one partition holds many orgs, and event ids are
 * unique only within an org, so (org, id) is what tells two waiting events
 * apart). Alerts of these rules therefore come `allowed_lateness_ms`
 * (in event time) after the event; events behind the watermark are late and
 * do not enter (counted in `late`, as for window rules).
 *
 * Bounds: `p` holds at most the events of the last allowed_lateness_ms; `k`
 * holds at most `max_keys` groups (least recently updated forgotten first —
 * object key order is insertion order, and a group is re-inserted on update),
 * each forgetting what is older than `ttl_ms` (stateful) or `window_ms`
 * (first_seen), and at most `max_values` values (first_seen). All of it is
 * JSON in the engine checkpoint, written atomically with the alerts.
 */
import type { EventMeta } from '../meta.js';
import type { CompiledRule } from '../rules/types.js';
import type { Value } from './expr.js';
import { readFields } from './values.js';
import { user, type RiskUser } from '../risk/declaration.js';
import type { Labels } from '../grouping/labels.js';

/** [event time, event id, org, group key, the rule's fields] */
export type Pending = [number, string, string, string, Record<string, Value>];

export interface KeyState {
  /** Last event: time, id, fields (stateful). */
  t: number;
  id: string;
  v: Record<string, Value>;
  /** first_seen: value → last time seen. */
  seen?: Record<string, number>;
}

export interface KeyedRuleState {
  p: Pending[];
  k: Record<string, KeyState>;
  /** Groups forgotten to stay within max_keys (a sign max_keys is too small). */
  evicted: number;
}

export interface KeyedFinding {
  readonly org: string;
  readonly key: string;
  readonly identity: string;
  readonly firstMs: number;
  readonly lastMs: number;
  readonly ids: string[];
  /** Rules declaring risk: the user the finding's last event names. */
  readonly user: RiskUser | null;
  /** Rules computing labels (grouping/labels.ts): what the finding's last event (and its previous one) made of them. */
  readonly labels: Labels | null;
}

/** A rule declaring risk keeps the user each held event names beside its fields (`$`: no `when` can read them). */
const RISK_ID = '$risk_id';
const RISK_LOGIN = '$risk_login';

function userOf(vals: Record<string, Value>): RiskUser | null {
  const id = vals[RISK_ID];
  return typeof id === 'string' ? user(id, typeof vals[RISK_LOGIN] === 'string' ? vals[RISK_LOGIN] : '') : null;
}

function before(a: Pending, b: Pending): boolean {
  return a[0] < b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && a[2] < b[2])));
}

/**
 * Queues a matching, on-time event. A repeat of one already queued (same org
 * and event id: the service sent it twice) is dropped; another org's event with
 * the same id is another event.
 */
export function enqueueKeyed(
  all: Record<string, KeyedRuleState>,
  rule: CompiledRule,
  event: unknown,
  meta: EventMeta,
  key: string,
): void {
  const st = (all[rule.id] ??= { p: [], k: {}, evicted: 0 });
  // The event paths the rule's labels read are held beside its fields (fields win a name both have).
  const fields = rule.labels
    ? { ...readFields(rule.labels.paths, event, meta.timeMs), ...readFields(rule.fields, event, meta.timeMs) }
    : readFields(rule.fields, event, meta.timeMs);
  if (rule.kind === 'first_seen')
    fields['$value'] = readFields([['v', rule.distinct!]], event, meta.timeMs)['v'] ?? null;
  if (rule.risk) {
    const u = rule.risk.entityOf(event);
    fields[RISK_ID] = u?.id ?? null;
    fields[RISK_LOGIN] = u?.login ?? null;
  }
  const e: Pending = [meta.timeMs, meta.id, meta.org, key, fields];
  if (st.p.some((x) => x[1] === meta.id && x[2] === meta.org)) return;
  let lo = 0;
  let hi = st.p.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (before(e, st.p[mid]!)) hi = mid;
    else lo = mid + 1;
  }
  st.p.splice(lo, 0, e);
}

function touch(st: KeyedRuleState, gk: string, ks: KeyState, maxKeys: number): void {
  delete st.k[gk];
  st.k[gk] = ks;
  let over = Object.keys(st.k).length - maxKeys;
  for (const old in st.k) {
    if (over-- <= 0) break;
    delete st.k[old];
    st.evicted++;
  }
}

/** Takes the queued events older than `watermark`, in order; returns the findings. */
export function drainKeyed(st: KeyedRuleState, rule: CompiledRule, watermark: number): KeyedFinding[] {
  const out: KeyedFinding[] = [];
  let n = 0;
  while (n < st.p.length && st.p[n]![0] < watermark) n++;
  for (const [t, id, org, key, vals] of st.p.splice(0, n)) {
    const gk = JSON.stringify([org, key]);
    const ks = st.k[gk];
    if (rule.kind === 'stateful') {
      const prev = ks && t - ks.t <= rule.ttlMs && ks.id !== id ? ks : undefined;
      const ctx = { cur: vals, prev: prev ? { ...prev.v, time: prev.t } : null };
      if (rule.when!(ctx) === true) {
        out.push({
          org,
          key,
          identity: prev ? `${prev.id}>${id}` : id,
          firstMs: prev?.t ?? t,
          lastMs: t,
          ids: prev ? [prev.id, id] : [id],
          user: rule.risk ? userOf(vals) : null,
          labels: rule.labels?.of(ctx) ?? null,
        });
      }
      touch(st, gk, { t, id, v: vals }, rule.maxKeys);
      continue;
    }
    // first_seen
    const value = vals['$value'];
    if (value === null || value === undefined || value === '') continue;
    const v = String(value).toLowerCase();
    const seen = ks?.seen ?? {};
    for (const [x, at] of Object.entries(seen)) if (at < t - rule.windowMs) delete seen[x];
    const hasHistory = Object.keys(seen).length > 0;
    if (hasHistory && !(v in seen) && (rule.when === null || rule.when({ cur: vals, prev: null }) === true)) {
      out.push({
        org,
        key,
        identity: id,
        firstMs: t,
        lastMs: t,
        ids: [id],
        user: rule.risk ? userOf(vals) : null,
        labels: rule.labels?.of({ cur: vals, prev: null }) ?? null,
      });
    }
    delete seen[v];
    seen[v] = t;
    let over = Object.keys(seen).length - rule.maxValues;
    for (const old in seen) {
      if (over-- <= 0) break;
      delete seen[old];
    }
    touch(st, gk, { t, id, v: {}, seen }, rule.maxKeys);
  }
  return out;
}

/** Forgets groups whose last event is older than the rule's horizon behind the watermark. */
export function pruneKeyed(st: KeyedRuleState, rule: CompiledRule, watermark: number): void {
  const horizon = watermark - (rule.kind === 'stateful' ? rule.ttlMs : rule.windowMs);
  for (const [gk, ks] of Object.entries(st.k)) if (ks.t < horizon) delete st.k[gk];
}
