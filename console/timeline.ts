/**
 * An alert's timeline: what the alert's users and IPs did around it, in the
 * alert's org only, grouped by session (`authenticationContext.externalSessionId`).
 * The window is the alert's span widened by `windowMinutes` each side (±1 h
 * unless the page asks otherwise), and the events are bounded (TIMELINE_LIMIT),
 * so a busy IP costs one bounded read.
 */
import type { Store } from '../platform/store/index.js';
import { formatDateTime64, parseTimestamp } from '../platform/time.js';
import { EVENTS_TABLE } from '../schemas/tables.js';
import type { AlertRow } from './alerts.js';
import { ParamError } from './range.js';

const TIME = "DateTime64(3, 'UTC')";
/** Events a timeline reads at most: a page's worth, and one read of the events table stays cheap. */
export const TIMELINE_LIMIT = 500;
/** Users and IPs of the alert taken as the timeline's subjects at most (an alert rarely has more). */
const SUBJECTS = 20;
export const DEFAULT_WINDOW_MINUTES = 60;
const MAX_WINDOW_MINUTES = 7 * 24 * 60;

export interface TimelineEvent {
  readonly uuid: string;
  readonly published: string;
  readonly event_type: string;
  readonly actor: string | null;
  readonly client_ip: string | null;
  readonly outcome: string | null;
  readonly display_message: string | null;
  readonly session: string;
  /** 1 when the event is by one of the alert's users, from one of its IPs. */
  readonly by_user: number;
  readonly from_ip: number;
}

export interface TimelineSession {
  /** The session id; '' for events without one. */
  readonly session: string;
  readonly first: string;
  readonly last: string;
  readonly events: TimelineEvent[];
}

export interface Timeline {
  readonly since: string;
  readonly until: string;
  readonly window_minutes: number;
  readonly users: string[];
  readonly ips: string[];
  readonly sessions: TimelineSession[];
  /** Whether events beyond TIMELINE_LIMIT were left out. */
  readonly truncated: boolean;
}

/** The URL's `window` (minutes each side of the alert): a whole number up to a week. */
export function parseWindow(v: string | undefined): number {
  if (v === undefined || v === '') return DEFAULT_WINDOW_MINUTES;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_WINDOW_MINUTES)
    throw new ParamError('window', `must be a whole number of minutes from 1 to ${MAX_WINDOW_MINUTES}`);
  return n;
}

const distinct = (vs: ReadonlyArray<unknown>): string[] =>
  [...new Set(vs.filter((v): v is string => typeof v === 'string' && v !== ''))].slice(0, SUBJECTS);

/** The timeline of `alert`, whose events (alerts.ts alertEvents) name its users and IPs. */
export async function alertTimeline(
  store: Store,
  alert: Pick<AlertRow, 'org' | 'event_time'> & { readonly first_event_time: string },
  events: ReadonlyArray<Record<string, unknown>>,
  windowMinutes: number,
): Promise<Timeline> {
  const users = distinct(events.map((e) => e.actor));
  const ips = distinct(events.map((e) => e.client_ip));
  const at = (t: string) => {
    const ms = parseTimestamp(`${t.replace(' ', 'T')}Z`);
    if (ms === null) throw new Error(`alert time ${JSON.stringify(t.slice(0, 40))} is not ClickHouse DateTime64 text`);
    return ms;
  };
  const sinceMs = at(alert.first_event_time) - windowMinutes * 60_000;
  const untilMs = at(alert.event_time) + windowMinutes * 60_000 + 1;
  const since = formatDateTime64(sinceMs);
  const until = formatDateTime64(untilMs);
  const base = { since, until, window_minutes: windowMinutes, users, ips };
  if (users.length === 0 && ips.length === 0) return { ...base, sessions: [], truncated: false };
  const rows = await store.query<TimelineEvent>(
    `SELECT uuid, toString(published) AS published, event_type, actor_alternate_id AS actor, client_ip,
       outcome_result AS outcome, display_message, ifNull(external_session_id, '') AS session,
       toUInt8(ifNull(actor_alternate_id IN {users:Array(String)}, 0)) AS by_user,
       toUInt8(ifNull(client_ip IN {ips:Array(String)}, 0)) AS from_ip
FROM ${store.database}.${EVENTS_TABLE} AS e FINAL
WHERE e.org = {org:String} AND e.published >= {since:${TIME}} AND e.published < {until:${TIME}}
  AND (e.actor_alternate_id IN {users:Array(String)} OR e.client_ip IN {ips:Array(String)})
ORDER BY e.published, e.uuid
LIMIT {limit:UInt32}`,
    { org: alert.org, since, until, users, ips, limit: TIMELINE_LIMIT + 1 },
  );
  const truncated = rows.length > TIMELINE_LIMIT;
  const bySession = new Map<string, TimelineEvent[]>();
  for (const r of rows.slice(0, TIMELINE_LIMIT)) {
    // 'unknown' is what the identity provider writes for no session: the same group as none.
    const key = r.session === 'unknown' ? '' : r.session;
    const list = bySession.get(key) ?? [];
    list.push({ ...r, session: key, by_user: Number(r.by_user), from_ip: Number(r.from_ip) });
    bySession.set(key, list);
  }
  const sessions = [...bySession.entries()]
    .map(([session, evs]) => ({ session, first: evs[0]!.published, last: evs.at(-1)!.published, events: evs }))
    .sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  return { ...base, sessions, truncated };
}
