/**
 * Runs test cases offline, through the code the live stream runs.
 *
 * Stream rules: a fresh PartitionEngine holding the case's rule takes the
 * case's events in the order written, each as the bytes the stream would
 * carry, parsed and timed as the live consumer does (consumer.ts:
 * parseEventValue, eventMeta): event-time order, watermark, allowed lateness,
 * windows and keyed state are the engine's own. At the end event time moves
 * on to `until` (default: past the last event by the allowed lateness, so
 * held stateful and first_seen events are decided), as a later event would.
 *
 * Scheduled rules: their SQL runs against a throwaway embedded ClickHouse
 * holding exactly the case's events, written as the sink writes them (the
 * store comes from the caller: cli/rules-test.ts), by runScheduledOnce, the
 * function the live scheduler calls, once at the first aligned run time after
 * the case's events (or at `until`). So a case checks the SQL itself, not
 * rows someone wrote down for it.
 */
import { attachEnrichment } from '../../../platform/enrichment/enrichment.js';
import type { Store } from '../../../platform/store/index.js';
import { latestRevisions, type Alert } from '../alert.js';
import { eventMeta, parseEventValue } from '../consumer.js';
import { PartitionEngine } from '../engine.js';
import { runScheduledOnce, type QueryResolver } from '../scheduled.js';
import type { CaseProblem, FeedEvent, LoadedCase, LoadedCases, RuleWithFile } from './load.js';
import type { CaseSpec } from './schema.js';
import { allOf, renderExplained, shownValue, type Explained } from '../rules/explain.js';
import { firstString, type FieldPath } from '../fields.js';
import type { Value } from '../state/expr.js';
import { readFields } from '../state/values.js';

/** A store for scheduled cases: `load` replaces the events it holds with a case's. */
export interface CaseStore {
  readonly store: Store;
  load(feed: readonly FeedEvent[]): Promise<void>;
  close(): Promise<void>;
}

export interface CaseRunOptions {
  /** alerting.allowed_lateness_ms, unless a case sets lateness_ms. */
  readonly allowedLatenessMs: number;
  readonly dedupWindowMs?: number;
  /** Opened once, at the first scheduled case; without it scheduled cases are errors. */
  readonly openStore?: () => Promise<CaseStore>;
  /** Named analytics queries, for scheduled rules with `query:`. */
  readonly resolveQuery?: QueryResolver;
}

export type CaseStatus = 'passed' | 'failed' | 'error';

export interface CaseResult {
  readonly file: string;
  readonly line: number;
  readonly rule: string;
  readonly name: string;
  readonly status: CaseStatus;
  /** What happened, for a case that did not pass. */
  readonly message: string;
  readonly alerts: readonly Alert[];
  readonly ms: number;
}

export interface RuleCoverage extends RuleWithFile {
  /** Cases expecting an alert, and expecting none. */
  readonly firing: number;
  readonly silent: number;
}

export interface CasesReport {
  readonly results: readonly CaseResult[];
  readonly coverage: readonly RuleCoverage[];
  readonly ms: number;
}

/** Where event time stands at the end of a stream case: `until`, else past the last event by the lateness. */
export function caseEndMs(c: LoadedCase, latenessMs: number): number {
  if (c.untilMs !== null) return c.untilMs;
  const last = Math.max(...c.feed.map((f) => eventMeta(f.event as Record<string, unknown>, f.org, 0, '').timeMs));
  return last + latenessMs + 1;
}

/** A stream case through the engine: its alerts, and how many of its events were late. */
export function runStreamCase(c: LoadedCase, o: CaseRunOptions): { alerts: Alert[]; late: number } {
  const lateness = c.spec.lateness_ms ?? o.allowedLatenessMs;
  const engine = new PartitionEngine(
    [c.rule],
    {
      allowedLatenessMs: lateness,
      ...(o.dedupWindowMs !== undefined ? { dedupWindowMs: o.dedupWindowMs } : {}),
    },
    // The state the case's mocks give (cases/mocks.ts), a copy: the engine changes what it is given.
    c.mocked.engine ? structuredClone(c.mocked.engine) : undefined,
  );
  const alerts: Alert[] = [];
  c.feed.forEach((f, i) => {
    // The bytes the stream would carry, read back as the consumer reads them.
    const event = parseEventValue(Buffer.from(JSON.stringify(f.event)))!;
    // As the consumer attaches the record's enrichment header (consumer.ts).
    attachEnrichment(event, f.enrichment ?? null);
    alerts.push(...engine.process(event, eventMeta(event, f.org, 0, `case/${i}`)));
  });
  alerts.push(...engine.advanceTo(caseEndMs(c, lateness)), ...engine.flush());
  // A grouped alert is judged as it ends up: its last revision.
  return { alerts: latestRevisions(alerts), late: engine.state.late };
}

/** The run time of a scheduled case: the first multiple of every_ms at or after `until`, else after the last event. */
export function scheduledRunAt(c: LoadedCase): number {
  const every = c.rule.scheduled!.everyMs;
  if (c.untilMs !== null) return Math.ceil(c.untilMs / every) * every;
  const last = Math.max(...c.feed.map((f) => eventMeta(f.event as Record<string, unknown>, f.org, 0, '').timeMs));
  return (Math.floor(last / every) + 1) * every;
}

/** What went wrong, or null when the alerts are what the case expects. */
export function judge(spec: CaseSpec, alerts: readonly Alert[], late = 0): string | null {
  const n = alerts.length;
  const first = n ? `: ${describe(alerts[0]!)}${n > 1 ? ', …' : ''}` : '';
  if (!spec.alert) return n === 0 ? null : `expected no alert, got ${n}${first}`;
  if (n === 0) {
    const why = late
      ? `; ${late} event${late === 1 ? ' was' : 's were'} late (behind the newest event by more than the allowed lateness), which only match rules take`
      : '';
    return `expected an alert, got none${why}`;
  }
  if (spec.alerts !== undefined && n !== spec.alerts) return `expected ${spec.alerts} alerts, got ${n}${first}`;
  const key = spec.key && JSON.stringify(spec.key.map((v) => (v === null ? '' : String(v))));
  for (const a of alerts) {
    if (key !== undefined && a.key !== key) return `expected key ${key}, got ${a.key} (${describe(a)})`;
    if (spec.severity !== undefined && a.severity !== spec.severity)
      return `expected severity ${spec.severity}, got ${a.severity}`;
    if (spec.title !== undefined && a.rule_title !== spec.title)
      return `expected title ${JSON.stringify(spec.title)}, got ${JSON.stringify(a.rule_title)} (${describe(a)})`;
    if (spec.count !== undefined && a.count !== spec.count)
      return `expected count ${spec.count}, got ${a.count} (${describe(a)})`;
  }
  return null;
}

/**
 * For a case that failed on its verdict: the rule's detection over the event that decided, each condition
 * with the value the event had (rules/explain.ts). Expected an alert and got none: the last event the
 * detection did not take (or, when it took them all, that it did); got an alert not expected: the last event
 * behind the first alert. Empty when the rule has nothing to explain.
 */
export function explainFailure(c: LoadedCase, alerts: readonly Alert[]): string {
  const explain = c.rule.explain;
  if (!explain || c.feed.length === 0) return '';
  const n = c.feed.length;
  const at = (i: number) => (n > 1 ? `event ${i + 1} of ${n}: ` : '');
  if (c.spec.alert && alerts.length === 0) {
    const trees = c.feed.map((f) => explain(f.event));
    const i = trees.map((t) => t.ok).lastIndexOf(false);
    if (i < 0 && c.rule.kind === 'stateful') {
      // Every event was taken: the last one's `when`, with the previous event of its group it was judged against.
      const last = n - 1;
      return `: ${at(last)}${renderExplained(explain(c.feed[last]!.event, previousOf(c, last)))}`;
    }
    if (i < 0 && c.rule.kind === 'first_seen') {
      // Every event was taken: whether the last one's value was new for its group, and what the group had seen.
      const last = n - 1;
      return `: ${at(last)}${renderExplained(allOf([trees[last]!, newValueLeaf(c, last)]))}`;
    }
    if (i < 0)
      return n > 1
        ? `; the detection took all ${n} events: what the ${c.rule.kind} rule needs beyond it (window, count, state) was not met`
        : `; the detection took the event (${renderExplained(trees[0]!)}): what the ${c.rule.kind} rule needs beyond it was not met`;
    return `: ${at(i)}${renderExplained(trees[i]!)}`;
  }
  if (!c.spec.alert && alerts.length > 0) {
    const ids = alerts[0]!.event_ids;
    const i = c.feed.findIndex((f) => f.event['uuid'] === ids[ids.length - 1]);
    if (i < 0) return '';
    const prev = c.rule.kind === 'stateful' ? previousOf(c, i) : undefined;
    return `; ${at(i)}${renderExplained(explain(c.feed[i]!.event, prev))}`;
  }
  return '';
}

/**
 * The previous event of event `i`'s group, as the engine would have it (state/keyed.ts): the latest earlier
 * one in event time that the detection takes, else the case's mocked one; its fields and time, null for none.
 */
function previousOf(c: LoadedCase, i: number): Record<string, Value> | null {
  const rule = c.rule;
  const meta = (k: number) => eventMeta(c.feed[k]!.event as Record<string, unknown>, c.feed[k]!.org, 0, '');
  const groupOf = (k: number) =>
    JSON.stringify([c.feed[k]!.org, JSON.stringify(rule.groupBy.map((p) => firstString(c.feed[k]!.event, p)))]);
  const t = meta(i).timeMs;
  let best: number | null = null;
  for (let k = 0; k < c.feed.length; k++) {
    if (k === i || groupOf(k) !== groupOf(i) || !rule.where(c.feed[k]!.event)) continue;
    const tk = meta(k).timeMs;
    if (tk <= t && (best === null || tk >= meta(best).timeMs)) best = k;
  }
  if (best !== null) {
    const tb = meta(best).timeMs;
    if (t - tb > rule.ttlMs) return null;
    // Its fields, then its time (as a mocked one reads: the order the explanation shows them in).
    const { time, ...fields } = readFields(rule.fields, c.feed[best]!.event, tb);
    return { ...fields, time: time ?? null };
  }
  const mocked = c.mocked.engine?.keyed?.[rule.id]?.k[groupOf(i)];
  return mocked && t - mocked.t <= rule.ttlMs ? { ...mocked.v, time: mocked.t } : null;
}

/**
 * A first_seen rule's own condition for event `i` as a leaf: its value, and the values its group had seen
 * within window_ms before (earlier events of the case the detection took, and the mocked ones), as the engine
 * compares them (lower-cased). A group that had seen none is learning: no alert.
 */
function newValueLeaf(c: LoadedCase, i: number): Explained {
  const rule = c.rule;
  const timeOf = (k: number) => eventMeta(c.feed[k]!.event as Record<string, unknown>, c.feed[k]!.org, 0, '').timeMs;
  const groupOf = (k: number) =>
    JSON.stringify([c.feed[k]!.org, JSON.stringify(rule.groupBy.map((p) => firstString(c.feed[k]!.event, p)))]);
  const valueOf = (k: number) => firstString(c.feed[k]!.event, rule.distinct!).toLowerCase();
  const t = timeOf(i);
  const seen = new Set<string>();
  const mocked = c.mocked.engine?.keyed?.[rule.id]?.k[groupOf(i)]?.seen ?? {};
  for (const [v, at] of Object.entries(mocked)) if (at >= t - rule.windowMs) seen.add(v);
  for (let k = 0; k < c.feed.length; k++) {
    const tk = timeOf(k);
    if (k === i || groupOf(k) !== groupOf(i) || tk > t || tk < t - rule.windowMs) continue;
    if (rule.where(c.feed[k]!.event) && valueOf(k) !== '') seen.add(valueOf(k));
  }
  const v = valueOf(i);
  const path = (rule.distinct as FieldPath).raw ?? rule.distinct!;
  const before = seen.size ? `seen before ${shownValue([...seen].slice(0, 10))}` : 'nothing seen before (learning)';
  return {
    op: 'leaf',
    ok: v !== '' && seen.size > 0 && !seen.has(v),
    test: `${path.join('.')} new for the group`,
    seen: `${shownValue(v)}, ${before}`,
  };
}

function describe(a: Alert): string {
  const grouped = a.findings !== undefined ? `, ${a.findings} finding${a.findings === 1 ? '' : 's'}` : '';
  return `key ${a.key}, count ${a.count}${grouped}, at ${a.event_time}`;
}

/** Runs every case (stream cases first, then scheduled ones on one store) and counts each rule's cases. */
export async function runCases(loaded: LoadedCases, o: CaseRunOptions): Promise<CasesReport> {
  const t0 = performance.now();
  const results: CaseResult[] = loaded.problems.map((p) => problemResult(p));
  const scheduled = loaded.cases.filter((c) => c.rule.kind === 'scheduled');
  for (const c of loaded.cases) {
    if (c.rule.kind === 'scheduled') continue;
    const t = performance.now();
    const { alerts, late } = runStreamCase(c, o);
    const failure = judge(c.spec, alerts, late);
    results.push(result(c, failure && failure + explainFailure(c, alerts), alerts, performance.now() - t));
  }
  if (scheduled.length) {
    let cs: CaseStore | undefined;
    try {
      cs = o.openStore ? await o.openStore() : undefined;
      for (const c of scheduled) {
        const t = performance.now();
        if (!cs) {
          results.push(errorResult(c, 'scheduled rules need a store to run their SQL in, and none was given', t));
          continue;
        }
        try {
          await cs.load(c.feed);
          const { alerts } = await runScheduledOnce(
            cs.store,
            c.rule,
            { last: 0, seen: { ...c.mocked.scheduledSeen } },
            scheduledRunAt(c),
            o.resolveQuery,
          );
          results.push(result(c, judge(c.spec, alerts), alerts, performance.now() - t));
        } catch (err) {
          results.push(errorResult(c, `the case could not run: ${(err as Error).message}`, t));
        }
      }
    } finally {
      await cs?.close();
    }
  }
  results.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
  const coverage = loaded.rules.map((r) => {
    const mine = loaded.cases.filter((c) => c.rule.id === r.rule.id);
    return { ...r, firing: mine.filter((c) => c.spec.alert).length, silent: mine.filter((c) => !c.spec.alert).length };
  });
  return { results, coverage, ms: performance.now() - t0 };
}

function result(c: LoadedCase, failure: string | null, alerts: readonly Alert[], ms: number): CaseResult {
  return {
    file: c.file,
    line: c.line,
    rule: c.rule.id,
    name: c.name,
    status: failure === null ? 'passed' : 'failed',
    message: failure ?? '',
    alerts,
    ms,
  };
}

function errorResult(c: LoadedCase, message: string, t0: number): CaseResult {
  return { ...result(c, message, [], performance.now() - t0), status: 'error' };
}

function problemResult(p: CaseProblem): CaseResult {
  return {
    file: p.file,
    line: p.line,
    rule: p.rule,
    name: p.name,
    status: 'error',
    message: p.message,
    alerts: [],
    ms: 0,
  };
}
