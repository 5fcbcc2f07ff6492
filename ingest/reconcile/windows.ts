/**
 * Pure parts of reconcile mode and backfill: bounded System Log requests,
 * the event-type filter, and recognising a lost hook delivery.
 *
 * A bounded request (`since` and `until`) is filtered by `published` and its
 * last page has no next link (protocols.md §3). Reconcile mode reads the log
 * in such windows, `delay` behind real time, so hooks have delivered (and the
 * sink stored) what they will before the window is read. The risk of bounded
 * windows — an event persisted after its window was read, with a `published`
 * inside it — is why the delay is minutes while the service persists events
 * within seconds of `published`.
 */
import { SYSTEM_LOG_PAGE_LIMIT, SYSTEM_LOG_PATH } from '../system-log/first-request.js';

/** The event type the service logs when it gave up on a hook delivery (protocols.md §1). */
export const LOST_DELIVERY_TYPE = 'event_hook.delivery';

/** `eventType eq "a" or eventType eq "b"`: the types a hook subscribes to, as a System Log filter. */
export function typeFilter(types: readonly string[]): string {
  if (types.length === 0) throw new RangeError('at least one event type');
  return types.map((t) => `eventType eq ${JSON.stringify(t)}`).join(' or ');
}

/** The first URL of the bounded window [sinceMs, untilMs). */
export function windowUrl(baseUrl: string, sinceMs: number, untilMs: number, filter: string | null): string {
  const p = new URLSearchParams({
    since: new Date(sinceMs).toISOString(),
    until: new Date(untilMs).toISOString(),
    limit: String(SYSTEM_LOG_PAGE_LIMIT),
    sortOrder: 'ASCENDING',
  });
  if (filter !== null) p.set('filter', filter);
  return `${baseUrl.replace(/\/+$/, '')}${SYSTEM_LOG_PATH}?${p.toString()}`;
}

/** The window a bounded URL (or a next link of one) belongs to; null when it is not bounded. */
export function windowOf(url: string): { sinceMs: number; untilMs: number } | null {
  try {
    const q = new URL(url).searchParams;
    const since = Date.parse(q.get('since') ?? '');
    const until = Date.parse(q.get('until') ?? '');
    return Number.isNaN(since) || Number.isNaN(until) ? null : { sinceMs: since, untilMs: until };
  } catch {
    return null;
  }
}

/**
 * The window after one ending at `fromMs`: `cadence` long, longer when
 * reconcile is behind (up to `maxMs`, never past `now − delay`) so a backlog
 * is read in few requests.
 */
export function nextWindow(
  fromMs: number,
  now: number,
  o: { cadenceMs: number; delayMs: number; maxMs: number },
): { sinceMs: number; untilMs: number } {
  const latest = now - o.delayMs;
  const until = Math.max(fromMs + o.cadenceMs, Math.min(latest, fromMs + o.maxMs));
  return { sinceMs: fromMs, untilMs: until };
}

export interface LostDelivery {
  /** The event_hook.delivery event's own uuid. */
  readonly uuid: string;
  /** When the service logged the loss (epoch ms). */
  readonly atMs: number;
  /** The service's id of the hook (the target of type EventHook), or '' when the event does not name it. */
  readonly hookId: string;
}

/**
 * An `event_hook.delivery` event whose outcome is not SUCCESS: the service
 * retried the delivery once and dropped it. The event's exact fields are
 * not documented beyond its type (protocols.md §1), so only the type, the
 * outcome and a target of type EventHook are relied on.
 */
export function lostDelivery(item: unknown): LostDelivery | null {
  if (typeof item !== 'object' || item === null) return null;
  const e = item as {
    uuid?: unknown;
    eventType?: unknown;
    published?: unknown;
    outcome?: { result?: unknown } | null;
    target?: unknown;
  };
  if (e.eventType !== LOST_DELIVERY_TYPE || typeof e.uuid !== 'string') return null;
  const result = typeof e.outcome?.result === 'string' ? e.outcome.result.toUpperCase() : '';
  if (result === 'SUCCESS' || result === 'ALLOW') return null;
  const atMs = typeof e.published === 'string' ? Date.parse(e.published) : NaN;
  if (Number.isNaN(atMs)) return null;
  const targets = Array.isArray(e.target) ? (e.target as Array<{ type?: unknown; id?: unknown } | null>) : [];
  const hook = targets.find((t) => t && typeof t.type === 'string' && t.type.toLowerCase() === 'eventhook');
  return { uuid: e.uuid, atMs, hookId: typeof hook?.id === 'string' ? hook.id : '' };
}
