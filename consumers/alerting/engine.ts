/**
 * The rule engine for one stream partition. Deterministic by construction:
 * its output depends only on its state and the records fed to it, in order,
 * never on the clock or on batch boundaries — which is what lets a restart
 * rebuild exactly the alerts it had (or had not yet) produced.
 *
 * Event time: the watermark is the highest event time seen minus
 * allowed_lateness_ms. An event older than the watermark is "late": match
 * rules still see it (a match needs no window), window rules do not (their
 * windows behind the watermark are closed and pruned); `late` counts them,
 * and `lateRules` counts per rule and org the late events a rule needing event
 * order would have taken (its condition held), with the last one's time and the
 * watermark it missed: what `hooklog status`, the log and
 * hooklog_alerting_late_events_total show (telemetry.ts).
 */
import { makeAlert, withRisk, type Alert } from './alert.js';
import type { RiskUser } from './risk/declaration.js';
import { firstString } from './fields.js';
import { anyOf, needsOf, RuleIndex, type Needs } from './prefilter.js';
import type { CompiledRule } from './rules/types.js';
import { findPartner, findRun, insertSorted, pruneBefore, type Entry, type SeqState } from './windows.js';
import { addToStep, pruneSteps, type StepLists } from './correlation.js';
import type { EventMeta } from './meta.js';
import { drainKeyed, enqueueKeyed, pruneKeyed, type KeyedRuleState } from './state/keyed.js';
import { readFields } from './state/values.js';
import type { Labels } from './grouping/labels.js';
import { flushGroups, groupFinding, GroupCounts, pruneGroups, type GroupingState } from './grouping/groups.js';

/** "Never" as a JSON-safe number (-Infinity would serialize as null). */
const NEVER = -8.64e15;

export interface EngineOptions {
  readonly allowedLatenessMs: number;
  /**
   * How long (event time, behind the watermark) an emitted alert id is
   * remembered. The identity service may send an event twice (same uuid);
   * the repeat derives the same alert id and is dropped here. Default 10 min.
   */
  readonly dedupWindowMs?: number;
}

/** Serializable engine state (checkpointed with the alerts it produced). */
export interface EngineState extends GroupingState {
  v: 1;
  maxEventMs: number;
  late: number;
  suppressed: number;
  win: Record<string, Record<string, Entry[]>>;
  seq: Record<string, Record<string, SeqState>>;
  /** Absence: per rule, per org, the last event time seen and the last one alerted on. */
  seen: Record<string, Record<string, [number, number]>>;
  supp: Record<string, number>;
  /** Alert ids emitted recently → their event time (see EngineOptions.dedupWindowMs). */
  emitted: Record<string, number>;
  duplicates: number;
  /** Stateful and first_seen rules (state/keyed.ts); absent in checkpoints from before they existed. */
  keyed?: Record<string, KeyedRuleState>;
  /** Temporal correlations: per rule, per group, one sorted entry list per step. */
  corr?: Record<string, Record<string, StepLists>>;
  /**
   * Late events a rule needing event order did not take, per rule id and org: [count, the last one's event
   * time, the watermark it missed] (ms). Bounded by the rules and orgs; absent in older checkpoints.
   */
  lateRules?: Record<string, Record<string, LateCount>>;
}

/** [late events, the last one's event time, the watermark it missed] (epoch ms). */
export type LateCount = [number, number, number];

export function emptyState(): EngineState {
  return {
    v: 1,
    maxEventMs: NEVER,
    late: 0,
    suppressed: 0,
    win: {},
    seq: {},
    seen: {},
    supp: {},
    emitted: {},
    duplicates: 0,
  };
}

export type { EventMeta } from './meta.js';

const PRUNE_EVERY = 1024;

/** What an event must carry for `rule` to do anything with it (prefilter.ts). */
function ruleNeeds(rule: CompiledRule): Needs {
  if (rule.kind === 'sequence') return anyOf([rule.where, rule.then]);
  if (rule.kind === 'temporal') return anyOf((rule.steps ?? []).map((s) => s.where));
  return needsOf(rule.where);
}

export class PartitionEngine {
  readonly #rules: readonly CompiledRule[];
  /** The rules an event can match, found by its event type (or whatever most rules name) instead of trying all. */
  readonly #index: RuleIndex<CompiledRule>;
  readonly #lateness: number;
  readonly #dedupWindow: number;
  readonly #s: EngineState;
  #sincePrune = 0;
  #nextAbsenceDue = Infinity;
  readonly #hasKeyed: boolean;
  /** Grouped rules' dedup_period by rule id, and their open groups per rule (grouping/groups.ts). */
  readonly #periods: ReadonlyMap<string, number>;
  readonly #groupCounts: GroupCounts;

  constructor(rules: readonly CompiledRule[], opts: EngineOptions, state: EngineState = emptyState()) {
    this.#rules = rules;
    this.#index = new RuleIndex(rules, ruleNeeds);
    this.#lateness = opts.allowedLatenessMs;
    this.#dedupWindow = opts.dedupWindowMs ?? 600_000;
    this.#s = state;
    this.#hasKeyed = rules.some((r) => r.kind === 'stateful' || r.kind === 'first_seen');
    this.#periods = new Map(rules.flatMap((r) => (r.dedupPeriodMs !== undefined ? [[r.id, r.dedupPeriodMs]] : [])));
    this.#groupCounts = new GroupCounts(state.groups);
    // Late counts are kept for the rules loaded: a rule taken out of the config takes its counts with it.
    if (state.lateRules) {
      const ids = new Set(rules.map((r) => r.id));
      for (const id of Object.keys(state.lateRules)) if (!ids.has(id)) delete state.lateRules[id];
    }
    this.#recomputeAbsenceDue();
  }

  get state(): Readonly<EngineState> {
    return this.#s;
  }

  get watermark(): number {
    return this.#s.maxEventMs - this.#lateness;
  }

  /** Feeds one event; returns the alerts it completes (after suppression). */
  process(event: unknown, meta: EventMeta): Alert[] {
    const s = this.#s;
    const out: Alert[] = [];
    if (meta.timeMs > s.maxEventMs) {
      s.maxEventMs = meta.timeMs;
      if (this.watermark >= this.#nextAbsenceDue) this.#checkAbsence(out);
      if (this.#hasKeyed) this.#drainKeyed(out);
    }
    const late = meta.timeMs < this.watermark;
    if (late) s.late++;
    for (const rule of this.#index.candidates(event)) {
      if (late && rule.kind !== 'match' && rule.kind !== 'absence') {
        if (this.#wouldTake(rule, event)) this.#lateFor(rule, meta);
        continue;
      }
      switch (rule.kind) {
        case 'match':
          if (rule.where(event)) {
            const key = this.#key(rule, event);
            const labels = labelsOf(rule, event, meta.timeMs);
            this.#emit(
              out,
              rule,
              makeAlert(rule, meta.org, key, meta.id, meta.timeMs, meta.timeMs, 1, [meta.id], labels),
              rule.risk?.entityOf(event),
              labels,
            );
          }
          break;
        case 'threshold':
        case 'distinct':
          if (rule.where(event)) this.#window(out, rule, event, meta);
          break;
        case 'sequence':
          this.#sequence(out, rule, event, meta);
          break;
        case 'absence':
          if (rule.where(event)) this.#seen(rule, meta);
          break;
        case 'temporal':
          this.#temporal(out, rule, event, meta);
          break;
        case 'stateful':
        case 'first_seen':
          // Held until the watermark passes them, then taken in event-time order (state/keyed.ts).
          if (rule.where(event)) enqueueKeyed((s.keyed ??= {}), rule, event, meta, this.#key(rule, event));
          break;
      }
    }
    if (++this.#sincePrune >= PRUNE_EVERY) this.prune();
    return out;
  }

  /** Whether a rule needing event order would have taken `event` had it come in time. */
  #wouldTake(rule: CompiledRule, event: unknown): boolean {
    if (rule.kind === 'sequence') return rule.where(event) || rule.then(event);
    if (rule.kind === 'temporal') return (rule.steps ?? []).some((st) => st.where(event));
    return rule.where(event);
  }

  #lateFor(rule: CompiledRule, meta: EventMeta): void {
    const byOrg = ((this.#s.lateRules ??= {})[rule.id] ??= {});
    const c = byOrg[meta.org];
    if (c) {
      c[0]++;
      c[1] = meta.timeMs;
      c[2] = this.watermark;
    } else byOrg[meta.org] = [1, meta.timeMs, this.watermark];
  }

  /**
   * Moves event time forward to `timeMs` with no event (a backtest's end of
   * range): absences and held stateful events up to the new watermark are decided.
   */
  advanceTo(timeMs: number): Alert[] {
    const out: Alert[] = [];
    if (timeMs <= this.#s.maxEventMs) return out;
    this.#s.maxEventMs = timeMs;
    if (this.watermark >= this.#nextAbsenceDue) this.#checkAbsence(out);
    if (this.#hasKeyed) this.#drainKeyed(out);
    return out;
  }

  /**
   * The records of grouped alerts that findings joined since the last flush: one per alert, its next revision.
   * The consumer calls it once per evaluated batch (so a flood makes one record per alert and batch), a
   * backtest or case at its end.
   */
  flush(): Alert[] {
    return flushGroups(this.#s);
  }

  #key(rule: CompiledRule, event: unknown): string {
    return JSON.stringify(rule.groupBy.map((p) => firstString(event, p)));
  }

  /**
   * `user`: who the finding is about, for a rule declaring risk (the event that completed it names them);
   * `labels`: what that event made of the rule's title, severity and dedup.
   */
  #emit(out: Alert[], rule: CompiledRule, alert: Alert, user?: RiskUser | null, labels?: Labels | null): void {
    if (this.#s.emitted[alert.alert_id] !== undefined) {
      this.#s.duplicates++;
      return;
    }
    if (rule.suppressMs > 0) {
      const sk = `${rule.id}\u0000${alert.org}\u0000${alert.key}`;
      const t = Date.parse(alert.event_time);
      const last = this.#s.supp[sk];
      if (last !== undefined && Math.abs(t - last) < rule.suppressMs) {
        this.#s.suppressed++;
        return;
      }
      this.#s.supp[sk] = t;
    }
    this.#s.emitted[alert.alert_id] = Date.parse(alert.event_time);
    if (rule.dedupPeriodMs !== undefined) {
      const { before, opening } = groupFinding(
        this.#s,
        { id: rule.id, maxKeys: rule.maxKeys, dedupPeriodMs: rule.dedupPeriodMs },
        alert,
        labels?.dedup ?? null,
        this.watermark,
        this.#groupCounts,
      );
      out.push(...before);
      if (!opening) return;
      alert = opening;
    }
    out.push(rule.risk ? withRisk(alert, rule.risk, user ?? null) : alert);
  }

  #window(out: Alert[], rule: CompiledRule, event: unknown, meta: EventMeta): void {
    const key = this.#key(rule, event);
    const gk = JSON.stringify([meta.org, key]);
    const byKey = (this.#s.win[rule.id] ??= {});
    const list = (byKey[gk] ??= []);
    const dv = rule.distinct ? firstString(event, rule.distinct) : '';
    if (rule.distinct && dv === '') return;
    // A repeat of an event (same id) must not count twice.
    if (list.some((e) => e[1] === meta.id)) return;
    const at = insertSorted(list, [meta.timeMs, meta.id, dv]);
    const run = findRun(list, at, rule.windowMs, rule.threshold, rule.distinct !== null);
    if (!run) return;
    const taken = list.splice(run[0], run[1] - run[0] + 1);
    if (list.length === 0) delete byKey[gk];
    const ids = taken.map((e) => e[1]);
    const identity = `${ids[0]}..${ids[ids.length - 1]}`;
    const count = rule.distinct ? new Set(taken.map((e) => e[2])).size : taken.length;
    const labels = labelsOf(rule, event, meta.timeMs);
    this.#emit(
      out,
      rule,
      makeAlert(rule, meta.org, key, identity, taken[0]![0], taken[taken.length - 1]![0], count, ids, labels),
      rule.risk?.entityOf(event),
      labels,
    );
  }

  #sequence(out: Alert[], rule: CompiledRule, event: unknown, meta: EventMeta): void {
    const isA = rule.where(event);
    const isB = rule.then(event);
    if (!isA && !isB) return;
    const key = this.#key(rule, event);
    const gk = JSON.stringify([meta.org, key]);
    const byKey = (this.#s.seq[rule.id] ??= {});
    const st = (byKey[gk] ??= { a: [], b: [] });
    const e: Entry = [meta.timeMs, meta.id, ''];
    if (st.a.some((x) => x[1] === meta.id) || st.b.some((x) => x[1] === meta.id)) return;
    for (const [mine, others, first] of [
      [isA, st.b, true],
      [isB, st.a, false],
    ] as const) {
      if (!mine) continue;
      const i = findPartner(others, e, first, rule.windowMs, rule.order);
      if (i < 0) {
        insertSorted(first ? st.a : st.b, e);
        continue;
      }
      const [p] = others.splice(i, 1);
      const [a, b] = first ? [e, p!] : [p!, e];
      const lo = Math.min(a[0], b[0]);
      const hi = Math.max(a[0], b[0]);
      const labels = labelsOf(rule, event, meta.timeMs);
      this.#emit(
        out,
        rule,
        makeAlert(rule, meta.org, key, `${a[1]}>${b[1]}`, lo, hi, 2, [a[1], b[1]], labels),
        rule.risk?.entityOf(event),
        labels,
      );
      break;
    }
    if (st.a.length === 0 && st.b.length === 0) delete byKey[gk];
  }

  #temporal(out: Alert[], rule: CompiledRule, event: unknown, meta: EventMeta): void {
    const steps = rule.steps!;
    for (let k = 0; k < steps.length; k++) {
      if (!steps[k]!.where(event)) continue;
      const key = JSON.stringify(steps[k]!.groupBy.map((p) => firstString(event, p)));
      const gk = JSON.stringify([meta.org, key]);
      const byKey = ((this.#s.corr ??= {})[rule.id] ??= {});
      const lists = (byKey[gk] ??= steps.map(() => []));
      const taken = addToStep(lists, k, [meta.timeMs, meta.id, ''], rule.windowMs, rule.order === 'ordered');
      if (lists.every((l) => l.length === 0)) delete byKey[gk];
      if (!taken) continue;
      const times = taken.map((x) => x[0]);
      const ids = taken.map((x) => x[1]);
      const labels = labelsOf(rule, event, meta.timeMs);
      this.#emit(
        out,
        rule,
        makeAlert(rule, meta.org, key, ids.join('>'), Math.min(...times), Math.max(...times), ids.length, ids, labels),
        rule.risk?.entityOf(event),
        labels,
      );
      return;
    }
  }

  #drainKeyed(out: Alert[]): void {
    const wm = this.watermark;
    for (const rule of this.#rules) {
      if (rule.kind !== 'stateful' && rule.kind !== 'first_seen') continue;
      const st = this.#s.keyed?.[rule.id];
      if (!st || st.p.length === 0 || st.p[0]![0] >= wm) continue;
      for (const f of drainKeyed(st, rule, wm)) {
        this.#emit(
          out,
          rule,
          makeAlert(rule, f.org, f.key, f.identity, f.firstMs, f.lastMs, f.ids.length, f.ids, f.labels ?? undefined),
          f.user,
          f.labels,
        );
      }
    }
  }

  #seen(rule: CompiledRule, meta: EventMeta): void {
    const byOrg = (this.#s.seen[rule.id] ??= {});
    const cur = byOrg[meta.org];
    if (!cur) byOrg[meta.org] = [meta.timeMs, NEVER];
    else if (meta.timeMs > cur[0]) cur[0] = meta.timeMs;
    else return;
    this.#nextAbsenceDue = Math.min(this.#nextAbsenceDue, byOrg[meta.org]![0] + rule.windowMs);
  }

  /** Orgs whose last event is window_ms behind the watermark, not yet alerted for that silence. */
  #checkAbsence(out: Alert[]): void {
    const wm = this.watermark;
    for (const rule of this.#rules) {
      if (rule.kind !== 'absence') continue;
      for (const [org, st] of Object.entries(this.#s.seen[rule.id] ?? {})) {
        if (st[1] === st[0] || wm - st[0] < rule.windowMs) continue;
        st[1] = st[0];
        const key = '[]';
        this.#emit(out, rule, makeAlert(rule, org, key, `silent-since:${st[0]}`, st[0], st[0] + rule.windowMs, 0, []));
      }
    }
    this.#recomputeAbsenceDue();
  }

  #recomputeAbsenceDue(): void {
    let due = Infinity;
    for (const rule of this.#rules) {
      if (rule.kind !== 'absence') continue;
      for (const st of Object.values(this.#s.seen[rule.id] ?? {}))
        if (st[1] !== st[0]) due = Math.min(due, st[0] + rule.windowMs);
    }
    this.#nextAbsenceDue = due;
  }

  /** Drops window entries and suppression marks that no on-time event can reach any more. */
  prune(): void {
    this.#sincePrune = 0;
    const wm = this.watermark;
    for (const rule of this.#rules) {
      const horizon = wm - rule.windowMs;
      for (const [gk, list] of Object.entries(this.#s.win[rule.id] ?? {})) {
        pruneBefore(list, horizon);
        if (list.length === 0) delete this.#s.win[rule.id]![gk];
      }
      for (const [gk, st] of Object.entries(this.#s.seq[rule.id] ?? {})) {
        pruneBefore(st.a, horizon);
        pruneBefore(st.b, horizon);
        if (st.a.length === 0 && st.b.length === 0) delete this.#s.seq[rule.id]![gk];
      }
    }
    for (const rule of this.#rules) {
      const st = this.#s.keyed?.[rule.id];
      if (st) pruneKeyed(st, rule, wm);
      for (const [gk, lists] of Object.entries(this.#s.corr?.[rule.id] ?? {})) {
        pruneSteps(lists, wm - rule.windowMs);
        if (lists.every((l) => l.length === 0)) delete this.#s.corr![rule.id]![gk];
      }
    }
    pruneGroups(this.#s, this.#periods, wm, this.#groupCounts);
    const maxSuppress = Math.max(0, ...this.#rules.map((r) => r.suppressMs));
    // for-in, not Object.entries: `emitted` holds every alert id of the dedup window (thousands), and
    // copying it into pairs on each prune was most of the prune's cost. Deleting while iterating is safe.
    const supp = this.#s.supp;
    for (const k in supp) if (supp[k]! < wm - maxSuppress) delete supp[k];
    const emitted = this.#s.emitted;
    for (const id in emitted) if (emitted[id]! < wm - this.#dedupWindow) delete emitted[id];
  }
}

/** A finding's labels from the event that completed it (absent when the rule's are all constant). */
function labelsOf(rule: CompiledRule, event: unknown, timeMs: number): Labels | undefined {
  const l = rule.labels;
  // The rule's fields win over a path of the same name, as in the expressions' compile (state/expr.ts).
  return (
    l && l.of({ cur: { ...readFields(l.paths, event, timeMs), ...readFields(rule.fields, event, timeMs) }, prev: null })
  );
}
