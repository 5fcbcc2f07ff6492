/**
 * The pollers' internal events: one function each, logging through a child
 * logger bound to `component: poller`, org and source, and counting in the
 * process's one Prometheus registry. Labels are configured org ids and our
 * own closed lists (status class, error code), never payload fields. Health
 * gauges (lag, cursor age, silence, last success) are computed at scrape time
 * from each live poller's PollerHealth.
 */
import { HooklogError } from '../platform/errors.js';
import type { Logger } from '../platform/log.js';
import { counter, gauge } from '../platform/metrics.js';
import type { PollerHealth } from './poller/health.js';
import type { PageSlots } from './poller/page-slots.js';

type Labels = { org: string; source: string };

const live = new Map<
  string,
  { labels: Labels; health: PollerHealth; remaining: () => number | null; budgetUsed: () => number | null }
>();

function eachLive(
  set: (labels: Labels, value: number) => void,
  value: (h: PollerHealth, now: number, remaining: number | null, budgetUsed: number | null) => number | null,
): void {
  const now = Date.now();
  for (const { labels, health, remaining, budgetUsed } of live.values()) {
    const v = value(health, now, remaining(), budgetUsed());
    if (v !== null) set(labels, v);
  }
}

/** The page slots of each running ingest (one per process outside tests). */
const slotSets = new Set<PageSlots>();
const slotSum = (of: (s: PageSlots) => number) => [...slotSets].reduce((n, s) => n + of(s), 0);

const m = {
  pagesHeld: gauge({
    name: 'hooklog_poller_pages_held',
    help: 'Pages the pollers hold in memory now (being fetched, or fetched and not yet stored), against hooklog_poller_page_slots.',
    collect() {
      this.set(slotSum((s) => s.held));
    },
  }),
  pageSlots: gauge({
    name: 'hooklog_poller_page_slots',
    help: 'The most pages the pollers may hold in memory at once.',
    collect() {
      this.set(slotSum((s) => s.size));
    },
  }),
  pagesWaiting: gauge({
    name: 'hooklog_poller_pages_waiting',
    help: 'Pollers waiting for a page slot before their request: pages arrive faster than they are stored.',
    collect() {
      this.set(slotSum((s) => s.waiting));
    },
  }),
  requests: counter({
    name: 'hooklog_poller_requests_total',
    help: 'Replies from the identity service, by status class.',
    labelNames: ['org', 'source', 'status'],
  }),
  events: counter({
    name: 'hooklog_poller_events_total',
    help: 'Events stored from polled pages.',
    labelNames: ['org', 'source'],
  }),
  deadLetters: counter({
    name: 'hooklog_poller_dead_letters_total',
    help: 'Polled items that are not valid events, sent to the deadletter topic.',
    labelNames: ['org', 'source'],
  }),
  lostDeliveries: counter({
    name: 'hooklog_hook_deliveries_lost_total',
    help: "Hook deliveries the identity service gave up on (event_hook.delivery failures in the System Log), by org and the service's hook id.",
    labelNames: ['org', 'hook'],
  }),
  rateLimited: counter({
    name: 'hooklog_poller_rate_limited_total',
    help: '429 replies.',
    labelNames: ['org', 'source'],
  }),
  retries: counter({
    name: 'hooklog_poller_retries_total',
    help: 'Transient failures retried with backoff, by error code.',
    labelNames: ['org', 'source', 'code'],
  }),
  blocked: counter({
    name: 'hooklog_poller_blocked_total',
    help: 'Failures retrying cannot fix (auth, API not enabled, rejected request), by code; retried slowly.',
    labelNames: ['org', 'source', 'code'],
  }),
  lastSuccess: gauge({
    name: 'hooklog_poller_last_success_timestamp_seconds',
    help: 'When the identity service last answered a page.',
    labelNames: ['org', 'source'],
    collect() {
      eachLive(
        (l, v) => this.set(l, v),
        (h, now) => {
          const t = h.snapshot(now).lastSuccessMs;
          return t === null ? null : t / 1000;
        },
      );
    },
  }),
  lag: gauge({
    name: 'hooklog_poller_lag_seconds',
    help: 'now − the newest published time seen.',
    labelNames: ['org', 'source'],
    collect() {
      eachLive(
        (l, v) => this.set(l, v),
        (h, now) => {
          const t = h.snapshot(now).lagMs;
          return t === null ? null : t / 1000;
        },
      );
    },
  }),
  cursorAge: gauge({
    name: 'hooklog_poller_cursor_age_seconds',
    help: 'Time since the stored position was advanced or confirmed current.',
    labelNames: ['org', 'source'],
    collect() {
      eachLive(
        (l, v) => this.set(l, v),
        (h, now) => h.snapshot(now).cursorAgeMs / 1000,
      );
    },
  }),
  silent: gauge({
    name: 'hooklog_poller_silent',
    help: '1 when the org returned no new events for longer than silent_after_ms.',
    labelNames: ['org', 'source'],
    collect() {
      eachLive(
        (l, v) => this.set(l, v),
        (h, now) => (h.snapshot(now).silent ? 1 : 0),
      );
    },
  }),
  remaining: gauge({
    name: 'hooklog_poller_rate_limit_remaining',
    help: 'X-Rate-Limit-Remaining last seen for this API.',
    labelNames: ['org', 'source'],
    collect() {
      eachLive(
        (l, v) => this.set(l, v),
        (_h, _now, r) => r,
      );
    },
  }),
  budgetUsed: gauge({
    name: 'hooklog_poller_rate_limit_budget_used_ratio',
    help: 'Requests made in the current rate-limit window / the requests rate_limit_share allows in it.',
    labelNames: ['org', 'source'],
    collect() {
      eachLive(
        (l, v) => this.set(l, v),
        (_h, _now, _r, used) => used,
      );
    },
  }),
};

function statusClass(status: number): string {
  return status === 429 ? '429' : `${Math.floor(status / 100)}xx`;
}

export type PollerTelemetry = ReturnType<typeof createPollerTelemetry>;

/** Shows a running ingest's page slots in /metrics until the returned function is called. */
export function watchPageSlots(slots: PageSlots): () => void {
  slotSets.add(slots);
  return () => void slotSets.delete(slots);
}

export function createPollerTelemetry(
  logger: Logger,
  labels: Labels,
  health: PollerHealth,
  remaining: () => number | null,
  budgetUsed: () => number | null = () => null,
) {
  const log = logger.child({ component: 'poller', ...labels });
  const key = `${labels.source}:${labels.org}`;
  return {
    started(resumed: boolean, path: string): void {
      live.set(key, { labels, health, remaining, budgetUsed });
      log.info(
        { resumed, path },
        resumed ? 'poller_resumed_from_stored_position' : 'poller_started_from_configured_start',
      );
    },
    cursorUnreadable(): void {
      log.warn('poller_stored_position_unreadable_starting_afresh');
    },
    cursorElsewhere(origin: string): void {
      log.warn({ stored_origin: origin }, 'poller_stored_position_is_for_another_base_url_starting_afresh');
    },
    reply(status: number): void {
      m.requests.inc({ ...labels, status: statusClass(status) });
    },
    page(events: number, deadLetters: number, caughtUp: boolean): void {
      if (events > 0) m.events.inc(labels, events);
      if (deadLetters > 0) {
        m.deadLetters.inc(labels, deadLetters);
        log.warn({ dead_letters: deadLetters }, 'poller_items_dead_lettered');
      }
      log.debug({ events, caught_up: caughtUp }, 'poller_page_stored');
    },
    retry(err: HooklogError, attempt: number, delayMs: number): void {
      m.retries.inc({ ...labels, code: err.code });
      // The first retries of a streak are routine on the internet; a long streak is not.
      log[attempt >= 5 ? 'warn' : 'info']({ attempt, delay_ms: delayMs, code: err.code, err }, 'poller_request_retry');
    },
    rateLimited(delayMs: number, resetKnown: boolean): void {
      m.rateLimited.inc(labels);
      log.warn({ delay_ms: delayMs, reset_known: resetKnown }, 'poller_rate_limited');
    },
    /** A lost hook delivery seen in the System Log (reconcile mode). */
    lostDelivery(hook: string): void {
      m.lostDeliveries.inc({ org: labels.org, hook });
      log.warn({ hook }, 'hook_delivery_lost');
    },
    budgetWait(ms: number, why: string): void {
      log.debug({ wait_ms: ms, why }, 'poller_budget_wait');
    },
    appendRetry(err: unknown, attempt: number, delayMs: number): void {
      log.warn({ attempt, delay_ms: delayMs, err }, 'poller_append_retry');
    },
    /** One clear error per streak; later attempts of the same streak log quietly. */
    blocked(err: unknown, streak: number, delayMs: number): void {
      const code = err instanceof HooklogError ? err.code : 'INTERNAL';
      m.blocked.inc({ ...labels, code });
      health.blocked();
      const fields = { code, retry_in_ms: delayMs, streak, err };
      if (streak === 1) log.error(fields, 'poller_blocked');
      else log.debug(fields, 'poller_still_blocked');
    },
    recovered(streak: number): void {
      log.info({ after_failures: streak }, 'poller_recovered');
    },
    stopped(): void {
      live.delete(key);
      for (const g of [m.lastSuccess, m.lag, m.cursorAge, m.silent, m.remaining, m.budgetUsed]) g.remove(labels);
      log.info(health.snapshot(Date.now()), 'poller_stopped');
    },
  };
}
