/**
 * `hooklog rules test`: replays rules over the events already in ClickHouse
 * and reports what they would have raised. Nothing is sent or written.
 *
 * Stream rules see the range's events in event-time order, one engine per org
 * (the live engine holds an org's events in one partition, so per-org
 * watermarks are what it sees at best); at the end event time is advanced to
 * `until` + allowed lateness so absences and held stateful events are decided.
 * Scheduled rules run once per look-back tile of the range that holds events
 * (a live schedule runs more often over overlapping windows; the rows it finds
 * are the same, each alerted once). Slices of the range holding no events are
 * never read (backtest-slices.ts): a sparse range costs what its events cost.
 *
 * Identity context (`actor.groups`, `actor.adminRoles`, `actor.status`): the live engine reads it "as of now"
 * from the identity records; a backtest has no record of what users held when its events happened, and today's
 * state would put today's roles on last month's events. So it gives every actor the context of a user without a
 * record (empty lists, no status), as the live engine does for one: a rule that asks for a role finds none here.
 * Cases with `mocks.identity` are how such a rule is tested.
 */
import { attachEnrichment, boundEnrichment, type Enrichment } from '../../platform/enrichment/enrichment.js';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import type { Store } from '../../platform/store/index.js';
import type { Alert } from './alert.js';
import { PartitionEngine } from './engine.js';
import type { CompiledRule } from './rules/types.js';
import { runScheduledOnce, type QueryResolver, type ScheduledState } from './scheduled.js';
import { holdsEvents, planReads, type SliceCount } from './backtest-slices.js';
import { addActorContext, NO_IDENTITY } from './identity/context.js';

export interface BacktestOptions {
  readonly since: number;
  readonly until: number;
  readonly org?: string;
  readonly allowedLatenessMs: number;
  /** Alerts kept per rule for the report. */
  readonly sample?: number;
  /** Called as events are read: (events so far, total). */
  readonly onProgress?: (done: number, total: number) => void;
  /** Named analytics queries, for scheduled rules with `query:`. */
  readonly resolveQuery?: QueryResolver;
  /**
   * Length of the event-time slices the range is cut into (default 6 h, or the shortest scheduled look-back if
   * shorter); empty ones are never read.
   */
  readonly sliceMs?: number;
  /** Most events one read takes (default 100 000): consecutive non-empty slices share a read up to it. */
  readonly maxReadEvents?: number;
}

export interface BacktestResult {
  readonly events: number;
  readonly perRule: ReadonlyArray<{
    readonly rule: CompiledRule;
    readonly alerts: number;
    readonly first: readonly Alert[];
  }>;
  readonly late: number;
  /** Queries sent to ClickHouse: one for the slice counts, one per read, one per scheduled run. */
  readonly queries: number;
  readonly ms: number;
}

function chTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

export async function backtest(
  store: Store,
  rules: readonly CompiledRule[],
  o: BacktestOptions,
): Promise<BacktestResult> {
  const t0 = performance.now();
  const sample = o.sample ?? 3;
  const perRule = new Map<string, { rule: CompiledRule; alerts: number; first: Alert[] }>(
    rules.map((r) => [r.id, { rule: r, alerts: 0, first: [] }]),
  );
  const take = (alerts: readonly Alert[]) => {
    for (const a of alerts) {
      if (o.org !== undefined && a.org !== o.org) continue;
      const c = perRule.get(a.rule_id)!;
      // A grouped alert's later revisions replace the one shown, and count no further alert.
      if (a.revision) {
        const at = c.first.findIndex((x) => x.alert_id === a.alert_id);
        if (at >= 0) c.first[at] = a;
        continue;
      }
      c.alerts++;
      if (c.first.length < sample) c.first.push(a);
    }
  };
  const streamRules = rules.filter((r) => r.kind !== 'scheduled');
  const range = { since: chTime(o.since), until: chTime(o.until), ...(o.org !== undefined ? { org: o.org } : {}) };
  const where = `published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')}${o.org !== undefined ? ' AND org = {org:String}' : ''}`;
  // Finer than the shortest scheduled look-back, so a run is skipped exactly when its window holds no event
  // (a minute at least, which bounds the slice counts' size).
  const scheduledRules = rules.filter((r) => r.kind === 'scheduled');
  const sliceMs = Math.max(
    60_000,
    Math.min(o.sliceMs ?? 6 * 3_600_000, ...scheduledRules.map((r) => r.scheduled!.lookbackMs)),
  );
  let queries = 0;
  // Which slices hold events, in one query: reads and scheduled runs skip the empty ones (backtest-slices.ts).
  queries++;
  const counts: SliceCount[] = (
    await store.query<{ s: string; n: string }>(
      `SELECT intDiv(toUnixTimestamp64Milli(published) - {from:Int64}, {slice:Int64}) AS s, count() AS n FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE ${where} GROUP BY s ORDER BY s`,
      { ...range, from: o.since, slice: sliceMs },
    )
  ).map((r) => ({ slice: Number(r.s), events: Number(r.n) }));
  let events = 0;
  let late = 0;
  if (streamRules.length) {
    const total = counts.reduce((n, c) => n + c.events, 0);
    o.onProgress?.(0, total);
    const engines = new Map<string, PartitionEngine>();
    const every = Math.max(1, Math.floor(total / 200));
    // Each read is sorted on its own: consecutive reads keep the global order, and a read's FINAL merge and
    // sort stay small. One query over the whole range must hold every raw event of a month in ClickHouse's
    // sort at once, which exceeded 21 GiB on the 9.8M-event bench data set.
    for (const read of planReads(counts, o.since, o.until, sliceMs, o.maxReadEvents ?? 100_000)) {
      queries++;
      const rs = await store.client.query({
        // The enrichment columns too: rules read `enrichment.*` as the stream engine does (attachEnrichment).
        query: `SELECT org, uuid, toUnixTimestamp64Milli(published) AS t, raw, ${ENRICHMENT_SELECT} FROM ${store.database}.${EVENTS_TABLE} FINAL WHERE ${where} ORDER BY published, uuid`,
        query_params: { ...range, since: chTime(read.since), until: chTime(read.until) },
        format: 'JSONEachRow',
      });
      for await (const rows of rs.stream<
        { org: string; uuid: string; t: string | number; raw: string } & StoredEnrichment
      >()) {
        for (const row of rows) {
          const r = row.json();
          let engine = engines.get(r.org);
          if (!engine)
            engines.set(r.org, (engine = new PartitionEngine(streamRules, { allowedLatenessMs: o.allowedLatenessMs })));
          let event: unknown;
          try {
            event = JSON.parse(r.raw);
          } catch {
            continue;
          }
          if (!event || typeof event !== 'object' || Array.isArray(event)) continue;
          attachEnrichment(event as Record<string, unknown>, storedEnrichment(r));
          addActorContext(event as Record<string, unknown>, r.org, NO_IDENTITY);
          take(engine.process(event, { org: r.org, timeMs: Number(r.t), id: r.uuid }));
          if (++events % every === 0) o.onProgress?.(events, total);
        }
      }
    }
    for (const engine of engines.values()) {
      take(engine.advanceTo(o.until + o.allowedLatenessMs + 1));
      take(engine.flush());
      late += engine.state.late;
    }
    o.onProgress?.(events, total);
  }
  for (const rule of scheduledRules) {
    let state: ScheduledState = { last: 0, seen: {} };
    const step = rule.scheduled!.lookbackMs;
    for (let until = Math.min(o.since + step, o.until); ; until = Math.min(until + step, o.until)) {
      // A run over a look-back holding no event is skipped: a result row is taken to come from events in its
      // window (true of the shipped rules and of `query:` rules, which run per org with events in the range).
      if (holdsEvents(counts, o.since, sliceMs, until - step, until)) {
        queries++;
        const out = await runScheduledOnce(store, rule, state, until, o.resolveQuery);
        state = out.state;
        take(out.alerts);
      }
      if (until >= o.until) break;
    }
  }
  return { events, perRule: [...perRule.values()], late, queries, ms: performance.now() - t0 };
}

/** The enrichment columns (migration 037) as the backtest reads them. */
const ENRICHMENT_SELECT =
  'enrichment_country, enrichment_city, enrichment_lat, enrichment_lon, enrichment_as_number, enrichment_as_org';
interface StoredEnrichment {
  enrichment_country: string | null;
  enrichment_city: string | null;
  enrichment_lat: number | null;
  enrichment_lon: number | null;
  enrichment_as_number: number | null;
  enrichment_as_org: string | null;
}

/** A stored row's enrichment, as the record's header gave it to the sink (NULLs dropped). */
function storedEnrichment(r: StoredEnrichment): Enrichment | null {
  return boundEnrichment({
    geo: { country: r.enrichment_country, city: r.enrichment_city, lat: r.enrichment_lat, lon: r.enrichment_lon },
    asn: { number: r.enrichment_as_number, organization: r.enrichment_as_org },
  });
}
