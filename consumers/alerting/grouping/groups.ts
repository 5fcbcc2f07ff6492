/**
 * Grouped alerts: a rule with `dedup` or `dedup_period` makes one alert per
 * group and period instead of one per finding (the anchor's dedup string and
 * period). A group is (rule, org, dedup text — default the group key —,
 * severity): a finding of higher severity never hides in a lower alert.
 *
 * The first finding of a group opens its alert: that record (revision 0) is
 * emitted at once, with the finding's own alert id, and is the one outputs
 * that notify (webhooks, Slack) post. A later finding whose event time is
 * within dedup_period of the opening one joins it: count, findings, first and
 * last event time and the sample of event ids change, and the engine's next
 * flush (once per evaluated batch) emits the whole alert again with the same
 * id and the next revision. Event time and id never change, so the alerts
 * table folds the revisions into one row (the latest inserted wins) and risk
 * counts the alert once. A finding outside the period opens the next alert.
 *
 * A group is forgotten once its period is behind the watermark and no finding
 * joined it since the last prune; a late event's finding after that opens an
 * alert of its own (whether it still found its group depends on when the
 * engine pruned, as for suppression and duplicate ids).
 *
 * The state is part of the engine checkpoint, written atomically with the
 * records it produced, so a crash neither repeats an opening nor loses an
 * update; a partition's groups move with it through a fleet. Bounded per rule
 * by `max_keys` open groups (the oldest opened is closed first), each holding
 * at most MAX_EVENT_IDS event ids.
 */
import { alertId, MAX_EVENT_IDS, type Alert } from '../alert.js';
import type { CompiledRule } from '../rules/types.js';
import { clip, MAX_TITLE_CHARS, visibleText, type Severity } from './labels.js';

/** The sample keeps this many first event ids of the group, and as many of its latest. */
const HALF = MAX_EVENT_IDS / 2;

export interface OpenGroup {
  /** The opening record without its ids and risk: what every update repeats. */
  a: Omit<Alert, 'event_ids' | 'risk'>;
  /** Start of the period: the opening finding's event time (ms). */
  t: number;
  /** First and last event time of all its findings (ms). */
  f: number;
  l: number;
  /** Events behind it (the findings' counts summed), and findings. */
  c: number;
  n: number;
  /** Sample: the first event ids, then the latest ones (a ring of HALF). */
  h: string[];
  r: string[];
  /** Revision of the last record emitted. */
  v: number;
  /** Joined since its last record: an update is due at the next flush. */
  d?: 1;
  /** Joined since the last prune: kept while (late) findings still come after its period is behind the watermark. */
  j?: 1;
}

/** Rule id → group id → open group (insertion order: the oldest opened first). */
export type GroupsState = Record<string, Record<string, OpenGroup>>;

/** A group's id: bounded whatever the dedup text's length (which is attacker-chosen). */
export function groupId(ruleId: string, org: string, key: string, dedup: string | null, severity: Severity): string {
  return alertId(ruleId, org, dedup === null ? `k:${key}` : `d:${dedup}`, severity);
}

function addIds(g: OpenGroup, ids: readonly string[]): void {
  for (const id of ids) {
    if (g.h.length < HALF) g.h.push(id);
    else {
      g.r.push(id);
      if (g.r.length > HALF) g.r.shift();
    }
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Opens a group with `finding`: the group and its opening record (revision 0). */
export function openGroup(finding: Alert, periodMs: number, dedup: string | null): [OpenGroup, Alert] {
  const t = Date.parse(finding.event_time);
  const { event_ids: ids, risk, ...rest } = finding;
  const a: OpenGroup['a'] = {
    ...rest,
    revision: 0,
    findings: 1,
    last_event_time: finding.event_time,
    group_until: iso(t + periodMs),
    ...(dedup !== null ? { dedup: clip(visibleText(dedup), MAX_TITLE_CHARS) } : {}),
  };
  const g: OpenGroup = {
    a,
    t,
    f: Date.parse(finding.first_event_time),
    l: t,
    c: finding.count,
    n: 1,
    h: [],
    r: [],
    v: 0,
  };
  addIds(g, ids);
  return [g, { ...a, event_ids: ids, ...(risk ? { risk } : {}) }];
}

export function joinGroup(g: OpenGroup, finding: Alert): void {
  g.f = Math.min(g.f, Date.parse(finding.first_event_time));
  g.l = Math.max(g.l, Date.parse(finding.event_time));
  g.c += finding.count;
  g.n++;
  addIds(g, finding.event_ids);
  g.d = 1;
  g.j = 1;
}

/** The group's next record (same alert id, next revision), marking it flushed. */
export function updateRecord(g: OpenGroup): Alert {
  delete g.d;
  g.v++;
  return {
    ...g.a,
    first_event_time: iso(g.f),
    count: g.c,
    event_ids: [...g.h, ...g.r],
    revision: g.v,
    findings: g.n,
    last_event_time: iso(g.l),
  };
}

/**
 * Groups' bookkeeping in the engine: the open count per rule is kept beside the state (not in it), so
 * bounding a rule's groups costs nothing per finding.
 */
export class GroupCounts {
  readonly #n = new Map<string, number>();
  constructor(state: GroupsState | undefined) {
    for (const [rule, groups] of Object.entries(state ?? {})) this.#n.set(rule, Object.keys(groups).length);
  }
  add(rule: string, d: number): number {
    const n = (this.#n.get(rule) ?? 0) + d;
    this.#n.set(rule, n);
    return n;
  }
}

/** The part of the engine state grouping keeps (engine.ts EngineState). */
export interface GroupingState {
  groups?: GroupsState;
  /** Findings that joined an open alert instead of making one. */
  grouped?: number;
  /** Groups closed early to stay within max_keys (a sign it is too small). */
  groupsEvicted?: number;
}

/**
 * Takes a finding of a grouped rule (`finding` made as an ungrouped alert would be, its duplicate check done):
 * it joins its group's open alert, or opens one. `before`: records due first (the last update of a group it
 * replaces or pushes out); `opening`: the new alert's first record, or null when the finding joined.
 */
export function groupFinding(
  s: GroupingState,
  rule: Pick<CompiledRule, 'id' | 'maxKeys'> & { readonly dedupPeriodMs: number },
  finding: Alert,
  dedup: string | null,
  watermark: number,
  counts: GroupCounts,
): { before: Alert[]; opening: Alert | null } {
  const byRule = ((s.groups ??= {})[rule.id] ??= {});
  const gid = groupId(rule.id, finding.org, finding.key, dedup, finding.severity);
  const t = Date.parse(finding.event_time);
  const period = rule.dedupPeriodMs;
  // Two slots per group: the open alert of the stream's present, and one for late events (a backlog the
  // poller catches up on while the same user is active now), so neither splits the other's findings.
  const slots = [gid, `${gid}~`];
  for (const id of slots) {
    const g = byRule[id];
    if (g && Math.abs(t - g.t) < period) {
      joinGroup(g, finding);
      s.grouped = (s.grouped ?? 0) + 1;
      return { before: [], opening: null };
    }
  }
  const slot = t >= watermark ? slots[0]! : slots[1]!;
  const before: Alert[] = [];
  const had = byRule[slot];
  if (had) {
    if (had.d) before.push(updateRecord(had));
    delete byRule[slot];
    counts.add(rule.id, -1);
  }
  const [g, opening] = openGroup(finding, period, dedup);
  byRule[slot] = g;
  let over = counts.add(rule.id, 1) - rule.maxKeys;
  for (const old in byRule) {
    if (over-- <= 0) break;
    const o = byRule[old]!;
    if (o.d) before.push(updateRecord(o));
    delete byRule[old];
    counts.add(rule.id, -1);
    s.groupsEvicted = (s.groupsEvicted ?? 0) + 1;
  }
  return { before, opening };
}

/** The updates due: one record per group joined since the last flush. */
export function flushGroups(s: GroupingState): Alert[] {
  const out: Alert[] = [];
  for (const byRule of Object.values(s.groups ?? {}))
    for (const g of Object.values(byRule)) if (g.d) out.push(updateRecord(g));
  return out;
}

/**
 * Forgets the groups whose period is behind the watermark and that no finding joined since the last prune (late
 * events may still join one that findings keep coming to), and those of rules that no longer group. A group with
 * an update due is kept until flushed.
 */
export function pruneGroups(
  s: GroupingState,
  periods: ReadonlyMap<string, number>,
  watermark: number,
  counts: GroupCounts,
): void {
  for (const [ruleId, byRule] of Object.entries(s.groups ?? {})) {
    const period = periods.get(ruleId);
    for (const [gid, g] of Object.entries(byRule)) {
      if (period !== undefined && g.t + period > watermark) continue;
      if (g.d || (g.j && period !== undefined)) {
        delete g.j;
        continue;
      }
      delete byRule[gid];
      counts.add(ruleId, -1);
    }
    if (Object.keys(byRule).length === 0) delete s.groups![ruleId];
  }
}
