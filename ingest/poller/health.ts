/**
 * One poller's health, as plain numbers read at scrape time: when the
 * service last answered, how far behind the newest event seen is, how long
 * since the stored position was last confirmed, and whether the org has gone
 * silent. Pure: the clock is passed in.
 */

export interface HealthSnapshot {
  /** Epoch ms of the last 2xx page, or null before the first. */
  readonly lastSuccessMs: number | null;
  /** now − newest `published` seen (ms), or null before any event. */
  readonly lagMs: number | null;
  /** now − when the stored position was last advanced or confirmed current by a reply (ms). */
  readonly cursorAgeMs: number;
  /** No new events for longer than the configured silence. */
  readonly silent: boolean;
  readonly pages: number;
  readonly events: number;
  /** Consecutive failures that retrying cannot fix (0 when healthy). */
  readonly blocked: number;
}

export class PollerHealth {
  readonly #silentAfterMs: number;
  #lastSuccessMs: number | null = null;
  #newestPublishedMs: number | null;
  #cursorConfirmedMs: number;
  #lastEventsMs: number;
  #pages = 0;
  #events = 0;
  #blocked = 0;

  constructor(opts: {
    startedMs: number;
    silentAfterMs: number;
    cursorSavedMs?: number | null;
    newestPublishedMs?: number | null;
  }) {
    this.#silentAfterMs = opts.silentAfterMs;
    this.#cursorConfirmedMs = opts.cursorSavedMs ?? opts.startedMs;
    this.#newestPublishedMs = opts.newestPublishedMs ?? null;
    // Silence is measured from start: a freshly started poller has not yet been silent for long.
    this.#lastEventsMs = opts.startedMs;
  }

  /** A page was answered and (if it moved the position) stored. */
  page(now: number, events: number, newestPublishedMs: number | null): void {
    this.#lastSuccessMs = now;
    this.#cursorConfirmedMs = now;
    this.#pages++;
    this.#blocked = 0;
    if (events > 0) {
      this.#events += events;
      this.#lastEventsMs = now;
    }
    if (
      newestPublishedMs !== null &&
      (this.#newestPublishedMs === null || newestPublishedMs > this.#newestPublishedMs)
    ) {
      this.#newestPublishedMs = newestPublishedMs;
    }
  }

  blocked(): void {
    this.#blocked++;
  }

  get newestPublishedMs(): number | null {
    return this.#newestPublishedMs;
  }

  snapshot(now: number): HealthSnapshot {
    return {
      lastSuccessMs: this.#lastSuccessMs,
      lagMs: this.#newestPublishedMs === null ? null : Math.max(0, now - this.#newestPublishedMs),
      cursorAgeMs: Math.max(0, now - this.#cursorConfirmedMs),
      silent: now - this.#lastEventsMs > this.#silentAfterMs,
      pages: this.#pages,
      events: this.#events,
      blocked: this.#blocked,
    };
  }
}
