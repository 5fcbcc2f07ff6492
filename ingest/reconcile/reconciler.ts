/**
 * Reconcile mode for an org that also sends event hooks: instead of polling
 * the whole System Log continuously, read it behind real time, only for the
 * event types the org's hooks subscribe to, and append only what the hooks
 * did not deliver.
 *
 * Two loops share the org's System Log budget and one cursor record
 * (`reconcile:<org>` on the cursors topic, appended atomically with the
 * events it covers, like the pollers' positions):
 * - **windows**: bounded requests [since, until) with the type filter, each
 *   read once `until + delay` has passed, following next links within a
 *   window; the position is the next URL (a next link, or the next window's
 *   first URL once a window's last page is stored);
 * - **lost-delivery watch**: a polling request filtered to
 *   `event_hook.delivery`, every `lost_delivery_interval_ms`. Each failure
 *   is counted, appended (the built-in alert fires on it), and the window it
 *   covers ([logged − lookback, logged)) is read again at once, so what the
 *   hook lost arrives in seconds rather than after the delay. That re-read
 *   keeps no position: if the process dies during it, the windows loop still
 *   reads the same events later.
 *
 * "Missing" = not in `arrivals` for the org (by any path), and not appended
 * by this reconciler recently (the sink may not have stored it yet). An event
 * appended twice anyway (a race with a late hook delivery) folds into one row
 * by (org, uuid) like any duplicate.
 */
import { HooklogError, isRetriable } from '../../platform/errors.js';
import { backoffDelay, retry, sleep } from '../../platform/retry.js';
import { Header, deadLetter, type Topics } from '../../platform/stream/headers.js';
import type { ConsumedRecord, Stream, StreamRecord, TopicWrite } from '../../platform/stream/types.js';
import type { IdentityClient, Page } from '../../platform/identity/client.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { RateBudget } from '../../platform/identity/rate-limit.js';
import { isFollowable } from '../poller/cursor.js';
import type { PollerHealth } from '../poller/health.js';
import { describeIssues, logEventFields } from '../../schemas/logevent.js';
import { SYSTEM_LOG_PAGE_LIMIT, SYSTEM_LOG_PATH, systemLogFirstUrl } from '../system-log/first-request.js';
import type { PollerTelemetry } from '../telemetry.js';
import {
  LOST_DELIVERY_TYPE,
  lostDelivery,
  nextWindow,
  typeFilter,
  windowOf,
  windowUrl,
  type LostDelivery,
} from './windows.js';

/** The uuids among `uuids` already stored for the org (any path), published within [fromMs, toMs]. */
export type KnownLookup = (org: string, uuids: readonly string[], fromMs: number, toMs: number) => Promise<Set<string>>;

export interface ReconcileSettings {
  readonly eventTypes: readonly string[];
  readonly delayMs: number;
  readonly cadenceMs: number;
  readonly lostDeliveryIntervalMs: number;
  readonly lostDeliveryLookbackMs: number;
  /** Longest window when catching up. Default 1 day. */
  readonly maxWindowMs?: number;
}

export interface ReconcilePosition {
  readonly windowNext: string;
  readonly watchNext: string;
}

export interface ReconcilerOptions {
  readonly org: string;
  readonly baseUrl: string;
  readonly client: IdentityClient;
  readonly budget: RateBudget;
  /** The claimed owner of the cursors partition its position lands on (or the stream, alone). */
  readonly stream: Pick<Stream, 'appendAtomically'>;
  readonly topics: Pick<Topics, 'logs' | 'cursors' | 'deadletter'>;
  readonly known: KnownLookup;
  readonly settings: ReconcileSettings;
  /** The stored position, or null: start at `startMs`. */
  readonly position: ReconcilePosition | null;
  readonly startMs: number;
  readonly policies: IdpPolicies;
  readonly health: PollerHealth;
  readonly telemetry: PollerTelemetry;
  /** Called once per lost delivery seen (metrics). */
  readonly onLostDelivery?: (loss: LostDelivery) => void;
  readonly now?: () => number;
}

const RECENT_MAX = 200_000;

export class Reconciler {
  readonly #o: ReconcilerOptions;
  readonly #now: () => number;
  readonly #abort = new AbortController();
  readonly #filter: string;
  readonly #recent = new Set<string>();
  #windowNext: string;
  #watchNext: string;
  /** Appends that carry the cursor run one at a time, so each record holds both loops' stored positions. */
  #appendTail: Promise<unknown> = Promise.resolve();
  #done: Promise<unknown> | null = null;
  /** Requests made (tests and the coverage comparison). */
  requests = 0;

  constructor(opts: ReconcilerOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
    this.#filter = typeFilter(opts.settings.eventTypes);
    const now = this.#now();
    if (opts.position) {
      this.#windowNext = opts.position.windowNext;
      this.#watchNext = opts.position.watchNext;
    } else {
      const w = nextWindow(opts.startMs, now, this.#windowing());
      this.#windowNext = windowUrl(opts.baseUrl, w.sinceMs, w.untilMs, this.#filter);
      this.#watchNext = watchFirstUrl(opts.baseUrl, opts.startMs, now);
    }
  }

  get position(): ReconcilePosition {
    return { windowNext: this.#windowNext, watchNext: this.#watchNext };
  }

  start(): void {
    this.#o.telemetry.started(this.#o.position !== null, SYSTEM_LOG_PATH);
    this.#done ??= Promise.all([
      this.#loop('windows', () => this.#windowStep()),
      this.#loop('watch', () => this.#watchStep()),
    ]);
  }

  async stop(): Promise<void> {
    this.#abort.abort(new HooklogError('STREAM_CLOSED', 'reconciler stopping'));
    await this.#done;
    this.#o.telemetry.stopped();
  }

  #windowing() {
    const s = this.#o.settings;
    return { cadenceMs: s.cadenceMs, delayMs: s.delayMs, maxMs: s.maxWindowMs ?? 86_400_000 };
  }

  async #loop(_name: string, step: () => Promise<number>): Promise<void> {
    const signal = this.#abort.signal;
    let streak = 0;
    while (!signal.aborted) {
      try {
        const waitMs = await step();
        if (streak > 0) this.#o.telemetry.recovered(streak);
        streak = 0;
        if (waitMs > 0) await sleep(waitMs, signal);
      } catch (err) {
        if (signal.aborted) break;
        streak++;
        const delay = backoffDelay(this.#o.policies.blocked, streak);
        this.#o.telemetry.blocked(err, streak, delay);
        await sleep(delay, signal);
      }
    }
  }

  /** One page of the current window, if it is due; returns how long to wait before the next step. */
  async #windowStep(): Promise<number> {
    const url = this.#windowNext;
    const w = windowOf(url);
    if (!w)
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${this.#o.org}: reconcile position ${url} is not a bounded request`,
      );
    const due = w.untilMs + this.#o.settings.delayMs;
    const now = this.#now();
    if (now < due) return due - now;
    const page = await this.#get(url);
    let next: string;
    if (page.next !== null) {
      next = this.#checkNext(page.next);
    } else {
      const n = nextWindow(w.untilMs, this.#now(), this.#windowing());
      next = windowUrl(this.#o.baseUrl, n.sinceMs, n.untilMs, this.#filter);
    }
    await this.#appendMissing(page, w.sinceMs, w.untilMs, { windowNext: next });
    return 0;
  }

  /** One page of the lost-delivery watch; re-reads the windows of the losses it finds. */
  async #watchStep(): Promise<number> {
    const page = await this.#get(this.#watchNext);
    if (page.next === null) {
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${this.#o.org}: ${SYSTEM_LOG_PATH} answered without a next link; a polling request always has one. Not advancing.`,
      );
    }
    const next = this.#checkNext(page.next);
    const found = page.items.map((item, i) => ({ i, loss: lostDelivery(item) }));
    const losses = found.flatMap((f) => (f.loss ? [f.loss] : []));
    const times = losses.map((l) => l.atMs);
    // Only the failures are appended (successful deliveries are routine and many).
    const only = found.flatMap((f) => (f.loss ? [f.i] : []));
    await this.#appendMissing(
      page,
      times.length ? Math.min(...times) : 0,
      times.length ? Math.max(...times) : 0,
      { watchNext: next },
      only,
    );
    for (const loss of losses) this.#o.onLostDelivery?.(loss);
    for (const loss of losses) await this.#reread(loss);
    return page.items.length < SYSTEM_LOG_PAGE_LIMIT ? this.#o.settings.lostDeliveryIntervalMs : 0;
  }

  /** Reads [loss − lookback, loss] for the subscribed types and appends what is missing. No position kept. */
  async #reread(loss: LostDelivery): Promise<void> {
    const since = loss.atMs - this.#o.settings.lostDeliveryLookbackMs;
    const until = loss.atMs + 1;
    let url: string | null = windowUrl(this.#o.baseUrl, since, until, this.#filter);
    while (url !== null && !this.#abort.signal.aborted) {
      const page = await this.#get(url);
      await this.#appendMissing(page, since, until, null);
      url = page.next === null ? null : this.#checkNext(page.next);
    }
  }

  async #get(url: string): Promise<Page> {
    this.requests++;
    const page = await this.#o.client.getPage(url, { budget: this.#o.budget, signal: this.#abort.signal });
    this.#o.telemetry.reply(200);
    return page;
  }

  #checkNext(next: string): string {
    if (!isFollowable(next, this.#o.baseUrl, SYSTEM_LOG_PATH)) {
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${this.#o.org}: the next link leaves ${new URL(this.#o.baseUrl).origin}${SYSTEM_LOG_PATH}; not following it`,
      );
    }
    return next;
  }

  /**
   * Appends the page's events that are not stored yet (bytes as sent), its
   * invalid items as dead letters and, when `move` is given, the new position,
   * in one atomic append. `only` limits the candidates (the watch appends
   * nothing from a page without losses).
   */
  async #appendMissing(
    page: Page,
    fromMs: number,
    toMs: number,
    move: Partial<ReconcilePosition> | null,
    only?: readonly number[],
  ): Promise<void> {
    const { org, stream, topics, health, telemetry } = this.#o;
    const candidates: Array<{ uuid: string; raw: Buffer; publishedMs: number }> = [];
    const rejected: StreamRecord[] = [];
    const receivedAt = new Date(this.#now()).toISOString();
    const headers = { [Header.org]: org, [Header.source]: 'system-log', [Header.receivedAt]: receivedAt };
    page.items.forEach((item, i) => {
      if (only && !only.includes(i)) return;
      const r = logEventFields.safeParse(item);
      if (!r.success) {
        rejected.push(
          deadLetter(
            page.raw[i]!,
            `${SYSTEM_LOG_PATH} item ${i}: ${describeIssues(r.error)}`,
            'reconcile',
            headers,
            org,
          ),
        );
        return;
      }
      candidates.push({ uuid: r.data.uuid, raw: page.raw[i]!, publishedMs: Date.parse(r.data.published) });
    });
    // Decided inside the serialised section: two loops reading the same event at once append it once.
    const run = async () => {
      const fresh = candidates.filter((c) => !this.#recent.has(c.uuid));
      const lo = Math.min(fromMs, ...fresh.map((c) => c.publishedMs));
      const hi = Math.max(toMs, ...fresh.map((c) => c.publishedMs));
      const known = fresh.length
        ? await this.#o.known(
            org,
            fresh.map((c) => c.uuid),
            lo,
            hi,
          )
        : new Set<string>();
      const missing = fresh.filter((c) => !known.has(c.uuid));
      const events = missing.map((c) => ({ key: org, value: c.raw, headers }));
      const position = { ...this.position, ...(move ?? {}) };
      // Newest `published` the org has sent so far (read, not only appended), for the lag `status` shows.
      const newestMs = Math.max(health.newestPublishedMs ?? -Infinity, ...candidates.map((c) => c.publishedMs));
      const newestSeen = Number.isFinite(newestMs) ? new Date(newestMs).toISOString() : null;
      const writes: TopicWrite[] = [
        { topic: topics.logs, records: events },
        { topic: topics.deadletter, records: rejected },
        ...(move
          ? [{ topic: topics.cursors, records: [reconcileCursorRecord(org, position, receivedAt, newestSeen)] }]
          : []),
      ];
      if (writes.some((w) => w.records.length > 0)) {
        await retry(() => stream.appendAtomically(writes), {
          policy: this.#o.policies.append,
          retriable: isRetriable,
          signal: this.#abort.signal,
          onRetry: (err, attempt, delayMs) => telemetry.appendRetry(err, attempt, delayMs),
        });
      }
      if (move?.windowNext !== undefined) this.#windowNext = move.windowNext;
      if (move?.watchNext !== undefined) this.#watchNext = move.watchNext;
      for (const c of missing) this.#remember(c.uuid);
      return missing;
    };
    const done = this.#appendTail.then(run);
    this.#appendTail = done.catch(() => undefined);
    const missing = await done;
    // Health counts what the org sent (read), not what was missing: an org whose hooks deliver
    // everything is not silent, and its lag is that of the newest event seen.
    const newest = candidates.length ? Math.max(...candidates.map((c) => c.publishedMs)) : null;
    health.page(this.#now(), candidates.length, newest);
    telemetry.page(missing.length, rejected.length, page.items.length < SYSTEM_LOG_PAGE_LIMIT);
  }

  #remember(uuid: string): void {
    if (this.#recent.size >= RECENT_MAX) {
      const oldest = this.#recent.values().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
    this.#recent.add(uuid);
  }
}

/** The watch's first request: a polling request (no until) for lost deliveries only. */
export function watchFirstUrl(baseUrl: string, startMs: number, now: number): string {
  const u = new URL(systemLogFirstUrl(baseUrl, { startMs, now }));
  u.searchParams.set('filter', typeFilter([LOST_DELIVERY_TYPE]));
  return u.toString();
}

export function reconcileCursorKey(org: string): string {
  return `reconcile:${org}`;
}

/**
 * The position record. Every one is written right after a successful reply (a window page or a watch page), so
 * `checked_at` is that reply's time, as in the pollers' records: `hooklog status` reads both the same way.
 * `checked_at` and `newest_published` were added to version 1 (readers ignore fields they do not know).
 */
function reconcileCursorRecord(
  org: string,
  p: ReconcilePosition,
  savedAt: string,
  newestPublished: string | null,
): StreamRecord {
  const value = {
    v: 1,
    org,
    source: 'reconcile',
    window_next: p.windowNext,
    watch_next: p.watchNext,
    saved_at: savedAt,
    checked_at: savedAt,
    newest_published: newestPublished,
  };
  return {
    key: reconcileCursorKey(org),
    value: Buffer.from(JSON.stringify(value)),
    headers: { [Header.org]: org, [Header.source]: 'reconcile', [Header.receivedAt]: savedAt },
  };
}

/** The stored reconcile position of an org, or null when there is none, it is unreadable, or it points elsewhere. */
export function readReconcilePosition(
  latest: ReadonlyMap<string, ConsumedRecord>,
  org: string,
  baseUrl: string,
): ReconcilePosition | null {
  const rec = latest.get(reconcileCursorKey(org));
  if (!rec) return null;
  try {
    const v = JSON.parse(rec.value.toString('utf8')) as {
      v?: unknown;
      org?: unknown;
      window_next?: unknown;
      watch_next?: unknown;
    };
    if (v.v !== 1 || v.org !== org || typeof v.window_next !== 'string' || typeof v.watch_next !== 'string')
      return null;
    if (!isFollowable(v.window_next, baseUrl, SYSTEM_LOG_PATH) || !isFollowable(v.watch_next, baseUrl, SYSTEM_LOG_PATH))
      return null;
    return { windowNext: v.window_next, watchNext: v.watch_next };
  } catch {
    return null;
  }
}
