/**
 * `hooklog status`: one line per org and source (hook, system-log,
 * legacy-events) saying whether events are arriving and landing: the last
 * event received by that path (from ClickHouse), when the poller last
 * succeeded beside when its position last moved, and how far behind the
 * newest event it has seen is (from the cursors topic: a quiet org's poller
 * succeeds while its position stays put; a stuck one does neither), the
 * sink's lag on the topic that path feeds, and the org's dead letters and
 * refused hook deliveries in the last hour; each line says when it was read.
 * An org whose System Log is read in reconcile mode has its position under
 * `reconcile:<org>`, not `system-log:<org>`: its system-log line reads that
 * record and says `mode: reconcile`, so the watch is not taken for a poller
 * that never ran.
 *
 * With alerting configured, each line also says how many of its org's events
 * came too late for a rule needing event order (behind the watermark: the
 * newest event time minus `alerting.allowed_lateness_ms`), read from the
 * engine's checkpoints, and per rule the last one's time and the watermark it
 * missed: such an event is not lost (it is stored, match rules saw it) but a
 * threshold, sequence or stateful rule decided without it.
 *
 * It needs both the stream and the store. While `hooklog start` runs on the
 * embedded log and chdb (each admits one process), the running process
 * answers through its admin socket; otherwise this process opens them.
 */
import type { Config } from './config/schema.js';
import type { Logger } from '../platform/log.js';
import type { Store } from '../platform/store/index.js';
import { topicNames } from '../platform/stream/headers.js';
import type { Stream } from '../platform/stream/types.js';
import type { ResultSet } from './format.js';
import { sinkGroup } from '../consumers/clickhouse-sink/index.js';
import { legacyEventsPipeline } from '../ingest/legacy-events/rows.js';
import { alertingTopics } from '../consumers/alerting/index.js';
import { readCheckpoints } from '../consumers/alerting/checkpoint.js';

/** Late events of one org for one rule, over every partition's checkpoint. */
export interface LateRuleStatus {
  readonly rule: string;
  readonly events: number;
  /** The event time of the latest late event (ISO), and the watermark it missed. */
  readonly last_event_at: string;
  readonly missed_watermark: string;
}

export interface StatusLine {
  readonly org: string;
  readonly source: 'hook' | 'system-log' | 'legacy-events';
  /**
   * How the poller reads (pollers only): `continuous` follows the log; `reconcile` is the System Log watch beside an
   * org's event hooks (ingest/reconcile), whose position is the `reconcile:<org>` record. Null for hooks.
   */
  readonly mode: 'continuous' | 'reconcile' | null;
  /** ISO time hooklog last received an event of this org by this path (as stored in ClickHouse), or null. */
  readonly last_event_at: string | null;
  /** When this line was read (ISO): the ages below are counted to it. */
  readonly checked_at: string;
  /**
   * When the poller last had a successful reply, as its stored position records it (ISO; pollers only): with every
   * page stored, and while caught up at most every `success_record_interval_ms`. Null before the first record.
   */
  readonly last_success_at: string | null;
  /** Seconds from `last_success_at` to `checked_at`: small for a quiet org too; growing means a stuck poller. */
  readonly last_success_age_s: number | null;
  /** Seconds since the poller's position last moved (pollers only): a quiet org's grows, and that is the org. */
  readonly cursor_age_s: number | null;
  /** Seconds between now and the newest `published` the poller has seen (pollers only). */
  readonly poller_lag_s: number | null;
  /** Records on the topic this path feeds that the sink has not committed yet (all orgs of the topic). */
  readonly sink_lag_records: number | null;
  /** Dead letters of this org received in the last hour (any origin). */
  readonly dead_letters_1h: number;
  /** Hook deliveries (or events in them) this org's hooks refused in the last hour (dead letters of the receiver). */
  readonly hook_failures_1h: number | null;
  /**
   * The org's events (by any path: the same on each of its lines) that a rule needing event order did not take
   * because they came behind the watermark, since the alerting checkpoints began; null without alerting.
   */
  readonly late_events: number | null;
  /** The same by rule, most late events first; empty without alerting or late events. */
  readonly late_rules: readonly LateRuleStatus[];
}

/** Name of the event-hook receiver in dead letters' origin header (receivers/event-hooks/delivery.ts). */
const HOOK_ORIGIN = 'event-hook';

interface CursorValue {
  org?: unknown;
  source?: unknown;
  saved_at?: unknown;
  checked_at?: unknown;
  newest_published?: unknown;
}

const seconds = (fromIso: unknown, now: number): number | null => {
  const t = typeof fromIso === 'string' ? Date.parse(fromIso) : NaN;
  return Number.isFinite(t) ? Math.max(0, Math.round((now - t) / 1000)) : null;
};

/** Collects the status with a stream and a store this process holds (the running one, or its own). */
export async function collectStatus(
  config: Config,
  stream: Stream,
  store: Store,
  now = Date.now(),
): Promise<StatusLine[]> {
  const topics = topicNames(config.stream.topic_prefix);
  const wanted: Array<{ org: string; source: StatusLine['source']; mode: StatusLine['mode'] }> = [];
  const add = (org: string, source: StatusLine['source'], mode: StatusLine['mode']) => {
    if (!wanted.some((w) => w.org === org && w.source === source)) wanted.push({ org, source, mode });
  };
  for (const h of config.event_hooks) add(h.org, 'hook', null);
  for (const o of config.orgs) {
    if (o.system_log.enabled) add(o.id, 'system-log', o.system_log.mode);
    if (o.legacy_events.enabled) add(o.id, 'legacy-events', 'continuous');
  }
  const orgs = [...new Set(wanted.map((w) => w.org))];
  const db = store.database;

  const last = new Map<string, string>();
  for (const r of await store.query<{ org: string; source: string; at: string }>(
    // From arrivals, not the events table: that folds a hook copy and a poller copy into one row with one
    // source, so a poller whose events also came by hook would look idle.
    `SELECT org, path AS source, toString(max(first_received)) AS at FROM ${db}.arrivals WHERE org IN {orgs:Array(String)} GROUP BY org, path`,
    { orgs },
  )) {
    last.set(`${r.org}/${r.source}`, r.at);
  }
  for (const r of await store.query<{ org: string; at: string }>(
    `SELECT org, toString(max(received_at)) AS at FROM ${db}.legacy_events WHERE org IN {orgs:Array(String)} GROUP BY org`,
    { orgs },
  )) {
    last.set(`${r.org}/legacy-events`, r.at);
  }
  const letters = new Map<string, { all: number; hook: number }>();
  for (const r of await store.query<{ org: string; all: string; hook: string }>(
    `SELECT org, count() AS all, countIf(origin = {hook:String}) AS hook FROM ${db}.deadletter FINAL
     WHERE org IN {orgs:Array(String)} AND received_at > now64(3) - INTERVAL 1 HOUR GROUP BY org`,
    { orgs, hook: HOOK_ORIGIN },
  )) {
    letters.set(r.org, { all: Number(r.all), hook: Number(r.hook) });
  }

  const cursors = new Map<string, CursorValue>();
  for (const rec of (await stream.readLatestByKey(topics.cursors)).values()) {
    try {
      const v = JSON.parse(rec.value.toString('utf8')) as CursorValue;
      if (typeof v.org === 'string' && typeof v.source === 'string') cursors.set(`${v.org}/${v.source}`, v);
    } catch {
      // An unreadable cursor record: the poller itself starts afresh and says so; here it is just unknown.
    }
  }

  // Each topic is read by its own sink group: the events' group for the logs, `<group>.legacy-events` for those.
  const sinkLag = async (topic: string, group: string): Promise<number | null> => {
    try {
      const [ends, committed] = await Promise.all([stream.latestOffsets(topic), stream.committedOffsets(topic, group)]);
      let n = 0;
      for (const [p, end] of ends) n += Math.max(0, end - (committed.get(p) ?? 0));
      return n;
    } catch {
      return null; // e.g. the topic does not exist yet
    }
  };
  const lagByTopic = new Map<string, number | null>([
    [topics.logs, await sinkLag(topics.logs, sinkGroup(config.sink.group, 'events'))],
    [
      topics.legacyEvents,
      await sinkLag(topics.legacyEvents, sinkGroup(config.sink.group, legacyEventsPipeline(topics.legacyEvents).name)),
    ],
  ]);

  const late = await lateByOrg(config, stream);

  return wanted.map(({ org, source, mode }): StatusLine => {
    // The reconcile watch's record says source `reconcile` (its key is `reconcile:<org>`, ingest/reconcile).
    const cursor = mode === null ? undefined : cursors.get(`${org}/${mode === 'reconcile' ? 'reconcile' : source}`);
    const at = last.get(`${org}/${source}`);
    const checked = typeof cursor?.checked_at === 'string' ? cursor.checked_at : null;
    return {
      org,
      source,
      mode,
      last_event_at: at ? `${at.replace(' ', 'T')}Z` : null,
      checked_at: new Date(now).toISOString(),
      last_success_at: checked,
      last_success_age_s: checked === null ? null : seconds(checked, now),
      cursor_age_s: cursor ? seconds(cursor.saved_at, now) : null,
      poller_lag_s: cursor ? seconds(cursor.newest_published, now) : null,
      sink_lag_records: lagByTopic.get(source === 'legacy-events' ? topics.legacyEvents : topics.logs) ?? null,
      dead_letters_1h: letters.get(org)?.all ?? 0,
      hook_failures_1h: source === 'hook' ? (letters.get(org)?.hook ?? 0) : null,
      late_events: late ? (late.get(org) ?? []).reduce((n, r) => n + r.events, 0) : null,
      late_rules: late?.get(org) ?? [],
    };
  });
}

/** Late events per org and rule from the alerting checkpoints (engine.ts `lateRules`); null without alerting. */
async function lateByOrg(config: Config, stream: Stream): Promise<Map<string, LateRuleStatus[]> | null> {
  const a = config.alerting;
  if (!a || !a.enabled) return null;
  const prefix = config.stream.topic_prefix;
  let checkpoints;
  try {
    checkpoints = await readCheckpoints(stream, alertingTopics(prefix).state, a.group, topicNames(prefix).logs);
  } catch {
    return new Map(); // no state topic yet: alerting has evaluated nothing
  }
  const sum = new Map<string, Map<string, [number, number, number]>>();
  for (const { state } of checkpoints.values()) {
    for (const [rule, byOrg] of Object.entries(state.lateRules ?? {})) {
      for (const [org, [n, lastMs, watermarkMs]] of Object.entries(byOrg)) {
        const rules = sum.get(org) ?? new Map<string, [number, number, number]>();
        sum.set(org, rules);
        const c = rules.get(rule);
        if (!c) rules.set(rule, [n, lastMs, watermarkMs]);
        else {
          c[0] += n;
          if (lastMs > c[1]) [c[1], c[2]] = [lastMs, watermarkMs];
        }
      }
    }
  }
  return new Map(
    [...sum].map(([org, rules]) => [
      org,
      [...rules]
        .map(([rule, [events, lastMs, watermarkMs]]) => ({
          rule,
          events,
          last_event_at: new Date(lastMs).toISOString(),
          missed_watermark: new Date(watermarkMs).toISOString(),
        }))
        .sort((x, y) => y.events - x.events || x.rule.localeCompare(y.rule)),
    ]),
  );
}

/** The lines as a result set for the table and CSV formats (the table says `checked_at` once, above: statusHeading). */
export function statusResultSet(lines: readonly StatusLine[], format: 'table' | 'csv' = 'table'): ResultSet {
  const columns = [
    ...(format === 'csv' ? (['checked_at'] as const) : []),
    'org',
    'source',
    'mode',
    'last_event_at',
    'last_success_age_s',
    'cursor_age_s',
    'poller_lag_s',
    'sink_lag_records',
    'dead_letters_1h',
    'hook_failures_1h',
    'late_events',
  ] as const;
  return { columns, rows: lines.map((l) => Object.fromEntries(columns.map((c) => [c, l[c] ?? '-']))) };
}

/** The line above the table: when it was checked, which every age in it counts to. */
export function statusHeading(lines: readonly StatusLine[], now = Date.now()): string {
  return `Status checked at ${lines[0]?.checked_at ?? new Date(now).toISOString()}\n`;
}

/**
 * The lines below the table: per org and rule with late events, how many and which watermark the last one missed.
 * Rule ids are the config's; org ids too.
 */
export function statusLateFooter(lines: readonly StatusLine[]): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const l of lines) {
    if (seen.has(l.org)) continue;
    seen.add(l.org);
    for (const r of l.late_rules)
      out.push(
        `Late for rule ${r.rule} (org ${l.org}): ${r.events} event${r.events === 1 ? '' : 's'} behind the watermark; the last, of ${r.last_event_at}, missed ${r.missed_watermark} by ${Math.round((Date.parse(r.missed_watermark) - Date.parse(r.last_event_at)) / 1000)} s`,
      );
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

/** For the CLI: through the running process's admin socket, else with a stream and store of its own. */
export async function runStatus(
  config: Config,
  logger: Logger,
  viaRunning: () => Promise<StatusLine[] | undefined>,
  open: () => Promise<{ stream: Stream; store: Store }>,
): Promise<StatusLine[]> {
  if (!config.stream.kafka || !config.store.clickhouse) {
    const running = await viaRunning();
    if (running) return running;
  }
  const { stream, store } = await open();
  try {
    return await collectStatus(config, stream, store);
  } finally {
    await stream.close().catch((err: unknown) => logger.warn({ err }, 'closing the stream failed'));
    await store.close();
  }
}
