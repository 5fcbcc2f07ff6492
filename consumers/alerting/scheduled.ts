/**
 * Scheduled query rules: SQL (or a named analytics query) run every
 * `every_ms` over ClickHouse with a look-back, one alert per new result row.
 *
 * Runs are aligned: a run at wall time `now` covers [until − lookback_ms,
 * until) with until = now rounded down to a multiple of every_ms, so a run
 * repeated after a crash asks the same question. A row's identity is its
 * `key` columns (with its `org`); the alert id hashes it, never the run time.
 * The keys already alerted live in the rule's checkpoint on
 * `<prefix>.alerting-state` (key `<group>/scheduled/<rule>`), appended in ONE
 * atomic write with the run's alerts: a crash before the write re-runs the
 * window (same rows, same ids, written once); after it, the keys are known.
 * A key is forgotten once it has not been in a result for lookback_ms + every_ms
 * (then its events are gone from the look-back too), which bounds the state.
 *
 * Run scheduled rules in ONE process (alerting.scheduled: false elsewhere):
 * two schedulers would each alert a new row once.
 */
import { createHash } from 'node:crypto';
import { EVENTS_TABLE } from '../../schemas/tables.js';
import type { Store } from '../../platform/store/index.js';
import type { Stream } from '../../platform/stream/types.js';
import { makeAlert, withRisk, type Alert } from './alert.js';
import { user } from './risk/declaration.js';
import { alertRecord } from './consumer.js';
import { readFields } from './state/values.js';
import type { CompiledRule, ScheduledSpec } from './rules/types.js';
import type { AlertingTelemetry } from './telemetry.js';

export interface ScheduledState {
  /** `until` of the last completed run (epoch ms); 0 before the first. */
  last: number;
  /** Row identity → the `until` of the last run that returned it. */
  seen: Record<string, number>;
}

export type QueryResolver = (
  name: string,
  params: Readonly<Record<string, string>>,
) => { sql: string; params: Record<string, unknown> };

export interface SchedulerOptions {
  readonly stream: Stream;
  readonly store: Store;
  readonly rules: readonly CompiledRule[];
  readonly alertsTopic: string;
  readonly stateTopic: string;
  readonly group: string;
  readonly telemetry: AlertingTelemetry;
  /** Named analytics queries (`query:`); absent: only `sql:` rules can run. */
  readonly resolveQuery?: QueryResolver;
  /** Wall clock (tests). */
  readonly now?: () => number;
}

export function scheduledKey(group: string, ruleId: string): string {
  return `${group}/scheduled/${ruleId}`;
}

function chTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

function cell(v: unknown): string {
  return v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** What a scheduled rule remembers of a result row it alerted on: its org and key columns, hashed. */
export function rowIdentity(org: string, key: string): string {
  return createHash('sha256').update(`${org}\n${key}`).digest('hex').slice(0, 24);
}

/** One run of one rule over [until − lookback, until): the alerts for rows not alerted before, and the new state. */
export async function runScheduledOnce(
  store: Store,
  rule: CompiledRule,
  state: ScheduledState,
  until: number,
  resolveQuery?: QueryResolver,
): Promise<{ alerts: Alert[]; state: ScheduledState; rows: number }> {
  const s = rule.scheduled!;
  const since = until - s.lookbackMs;
  const range = { since: chTime(since), until: chTime(until) };
  let rows: Record<string, unknown>[];
  if (s.sql !== undefined) {
    rows = await store.query<Record<string, unknown>>(s.sql.replaceAll('{db}', store.database), {
      ...s.params,
      ...range,
    });
  } else {
    if (!resolveQuery) throw new Error(`rule ${rule.id}: named queries are not available here`);
    // A named query takes one org: run it for every org with events in the range.
    const orgs = await store.query<{ org: string }>(
      `SELECT DISTINCT org FROM ${store.database}.${EVENTS_TABLE} WHERE published >= {since:DateTime64(3, 'UTC')} AND published < {until:DateTime64(3, 'UTC')} ORDER BY org`,
      range,
    );
    rows = [];
    for (const { org } of orgs) {
      const q = resolveQuery(s.query!, {
        ...s.textParams,
        org,
        since: new Date(since).toISOString(),
        until: new Date(until).toISOString(),
      });
      const got = await store.query<Record<string, unknown>>(q.sql, q.params as Record<string, string>);
      rows.push(...got.map((r) => ({ org, ...r })));
    }
  }
  const seen = { ...state.seen };
  const alerts: Alert[] = [];
  for (const row of rows) {
    const org = cell(row['org']);
    const key = JSON.stringify(s.key.map((c) => cell(row[c])));
    const identity = rowIdentity(org, key);
    const known = seen[identity] !== undefined;
    seen[identity] = until;
    if (known) continue;
    const t =
      typeof row[s.timeColumn] === 'string' ? Date.parse(`${String(row[s.timeColumn]).replace(' ', 'T')}Z`) : NaN;
    const at = Number.isFinite(t) ? t : until;
    // Per-row title and severity read the result's columns as an event's fields.
    const labels = rule.labels?.of({ cur: readFields(rule.labels.paths, row, at), prev: null });
    const alert = makeAlert(rule, org, key, `row:${key}`, at, at, Number(row['count'] ?? 1) || 1, [], labels);
    const r = rule.risk;
    alerts.push(r ? withRisk(alert, r, user(cell(row[r.idColumn]), cell(row[r.loginColumn]))) : alert);
  }
  for (const [id, t] of Object.entries(seen)) if (t < until - s.lookbackMs - s.everyMs) delete seen[id];
  return { alerts, state: { last: until, seen }, rows: rows.length };
}

export interface Scheduler {
  stop(): Promise<void>;
}

/** Starts running every scheduled rule on its schedule, from its checkpoint. */
export async function startScheduler(o: SchedulerOptions): Promise<Scheduler> {
  const now = o.now ?? Date.now;
  const rules = o.rules.filter((r) => r.kind === 'scheduled');
  const latest = await o.stream.readLatestByKey(o.stateTopic);
  const states = new Map<string, ScheduledState>();
  for (const r of rules) {
    const rec = latest.get(scheduledKey(o.group, r.id));
    states.set(r.id, rec ? (JSON.parse(rec.value.toString('utf8')) as ScheduledState) : { last: 0, seen: {} });
  }
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const tick = async () => {
    for (const r of rules) {
      if (stopped) return;
      const s: ScheduledSpec = r.scheduled!;
      const st = states.get(r.id)!;
      const until = Math.floor(now() / s.everyMs) * s.everyMs;
      if (until <= st.last) continue;
      try {
        const out = await runScheduledOnce(o.store, r, st, until, o.resolveQuery);
        await o.stream.appendAtomically([
          ...(out.alerts.length ? [{ topic: o.alertsTopic, records: out.alerts.map(alertRecord) }] : []),
          {
            topic: o.stateTopic,
            records: [{ key: scheduledKey(o.group, r.id), value: Buffer.from(JSON.stringify(out.state)), headers: {} }],
          },
        ]);
        states.set(r.id, out.state);
        if (out.alerts.length)
          o.telemetry.log.info({ rule: r.id, rows: out.rows, alerts: out.alerts.length }, 'scheduled alerts raised');
        else o.telemetry.log.debug({ rule: r.id, rows: out.rows }, 'scheduled rule ran');
      } catch (err) {
        // Not advanced: the same window runs again at the next tick.
        o.telemetry.log.warn({ rule: r.id, err }, 'scheduled rule run failed; retrying');
      }
    }
  };
  const schedule = () => {
    if (stopped) return;
    const soonest = Math.min(
      ...rules.map((r) => {
        const every = r.scheduled!.everyMs;
        return (Math.floor(now() / every) + 1) * every - now();
      }),
    );
    timer = setTimeout(
      () => {
        running = tick().finally(schedule);
      },
      Math.max(10, Math.min(soonest, 60_000)),
    );
  };
  if (rules.length) {
    running = tick().finally(schedule);
  }
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
