/**
 * One org's poll loop over one API, shared by the System Log and the legacy
 * Events pollers (they differ only in their PollSource).
 *
 * The invariants, in order of importance:
 * - The position is the service's `next` URL, stored in the same atomic
 *   append as the events it covers (Kafka transaction / one embedded frame).
 *   A crash at any point either stored both or neither, so a restart
 *   resumes exactly where the last stored page ended: nothing skipped, and
 *   nothing stored twice by us.
 * - After the first request only `next` links are called, as given. An empty
 *   or short page means caught up: wait the interval, then call the (same)
 *   next link — no extra request after a short page, no `published` cursors.
 * - A page is never dropped: transient failures are retried by the client
 *   without limit; what retrying cannot fix (403, refused credentials, a
 *   rejected request, a page without a next link) is reported once and
 *   retried slowly on the same URL.
 * - The stored record also says when the poller last succeeded: with every
 *   page it stores, and while caught up (an empty page leaves the position
 *   where it is) by a confirmation of the same position at most every
 *   successRecordIntervalMs, so a reader of the cursors topic alone (status,
 *   the console, in any process) tells a quiet org from a stuck poller.
 * - An item is never dropped silently either, and one item never holds its org
 *   back: an invalid event, or one larger than a stream record may be
 *   (MAX_RECORD_BYTES), goes to the dead-letter topic in the page's append.
 */
import { isRetriable, HooklogError } from '../../platform/errors.js';
import { backoffDelay, retry, sleep } from '../../platform/retry.js';
import { Header, deadLetter, type Topics } from '../../platform/stream/headers.js';
import { MAX_RECORD_BYTES, recordBytes, storableLetter } from '../../platform/stream/record-size.js';
import type { Stream, StreamRecord, TopicWrite } from '../../platform/stream/types.js';
import type { IdentityClient, Page } from '../../platform/identity/client.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { RateBudget } from '../../platform/identity/rate-limit.js';
import type { PollerTelemetry } from '../telemetry.js';
import { cursorRecord, isFollowable, type Cursor, type PollSourceName } from './cursor.js';
import type { PollerHealth } from './health.js';
import type { PageSlots, Release } from './page-slots.js';

/** What distinguishes one API's poller from another's. */
export interface PollSource {
  readonly name: PollSourceName;
  /** The API path every next link must stay on. */
  readonly path: string;
  /** Topic the events go to. */
  readonly topic: string;
  /** The page size requested; a shorter page means caught up. */
  readonly pageLimit: number;
  /** 403/404 mean "API not enabled" (legacy Events). */
  readonly feature: boolean;
  /** The first URL when nothing is stored. */
  firstUrl(now: number): string;
  /** An item's published time if it is a valid event, else why it is not. */
  check(item: unknown): { ok: true; publishedMs: number } | { ok: false; reason: string };
}

export interface PollerOptions {
  readonly org: string;
  readonly baseUrl: string;
  readonly source: PollSource;
  readonly client: IdentityClient;
  readonly budget: RateBudget;
  /** Where pages and cursors are appended: the claim of the cursor partition this poller's key is on. */
  readonly stream: Pick<Stream, 'appendAtomically'>;
  readonly topics: Pick<Topics, 'cursors' | 'deadletter'>;
  /** The stored position, if any. */
  readonly cursor: Cursor | null;
  readonly pollIntervalMs: number;
  /** While caught up, how often the unmoved position is stored again to record the last success. */
  readonly successRecordIntervalMs: number;
  readonly policies: IdpPolicies;
  readonly health: PollerHealth;
  readonly telemetry: PollerTelemetry;
  /** The process's bound on pages held in memory (fetched and not yet stored), shared by all its pollers. */
  readonly slots: PageSlots;
  readonly now?: () => number;
  /** The append was fenced: another process owns this (org, API) now. The poller has stopped. */
  readonly onFenced?: () => void;
}

export class Poller {
  readonly #o: PollerOptions;
  readonly #now: () => number;
  readonly #abort = new AbortController();
  #done: Promise<void> | null = null;
  #url: string;
  /** A position has been stored (or was found at start): `#url` is the service's, not ours. */
  #positioned: boolean;
  /** The next page, requested while the one before it is being stored. */
  #prefetched: Prefetched | null = null;
  /** What the stored record says (null before one is stored): a confirmation repeats it with a new checkedAt. */
  #stored: { savedAt: string; newestPublished: string | null; checkedMs: number } | null;

  constructor(opts: PollerOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
    this.#url = opts.cursor?.next ?? opts.source.firstUrl(this.#now());
    this.#positioned = opts.cursor !== null;
    this.#stored = opts.cursor && {
      savedAt: opts.cursor.savedAt,
      newestPublished: opts.cursor.newestPublished,
      // A record from before checked_at existed is confirmed at the first caught-up poll.
      checkedMs: opts.cursor.checkedAt === null ? 0 : Date.parse(opts.cursor.checkedAt) || 0,
    };
  }

  get telemetry(): PollerTelemetry {
    return this.#o.telemetry;
  }

  /** The URL the next request goes to (tests). */
  get position(): string {
    return this.#url;
  }

  start(): void {
    this.#o.telemetry.started(this.#o.cursor !== null, new URL(this.#url).pathname);
    this.#done ??= this.#run();
  }

  /** Aborts waits and requests in flight; a page being stored finishes storing first. */
  async stop(): Promise<void> {
    this.#abort.abort(new HooklogError('STREAM_CLOSED', 'poller stopping'));
    await this.#done;
    this.#o.telemetry.stopped();
  }

  /**
   * One page at a time: fetch (or take the prefetched page), store, advance;
   * after a short page (caught up), wait the poll interval. Failures back off
   * and retry the same URL.
   */
  async #run(): Promise<void> {
    const { source, telemetry, policies } = this.#o;
    const signal = this.#abort.signal;
    let streak = 0;
    while (!signal.aborted) {
      try {
        // The page lives in #step's frame only: a poller waiting out its interval holds no page.
        const caughtUp = await this.#step();
        if (streak > 0) telemetry.recovered(streak);
        streak = 0;
        if (caughtUp) await sleep(this.#o.pollIntervalMs, signal);
      } catch (err) {
        this.#dropPrefetched();
        if (signal.aborted) break;
        if (err instanceof HooklogError && err.code === 'STREAM_FENCED') {
          // Not ours any more: nothing was stored, and retrying could only fail the same way.
          telemetry.blocked(err, 1, 0);
          this.#o.onFenced?.();
          break;
        }
        streak++;
        const delay = backoffDelay(policies.blocked, streak);
        telemetry.blocked(err, streak, delay);
        await sleep(delay, signal);
        // Nothing stored yet: the first request is rebuilt from the start, so an org blocked for months
        // does not come back with a since older than the service accepts.
        if (!this.#positioned) this.#url = source.firstUrl(this.#now());
      }
    }
    this.#dropPrefetched();
  }

  /**
   * Fetches and stores the page at the current URL, and advances to its next
   * link; says whether it was short (caught up). While a full page is being
   * stored, the next one is already being fetched (one request in flight, as
   * before: the fetch starts once the previous reply is complete), if a page
   * slot is free at once. The position still advances only by stored pages:
   * the prefetched page is stored after the one before it, or dropped. A page
   * holds its slot from before its request until it is stored or dropped.
   */
  async #step(): Promise<boolean> {
    const { source, telemetry, slots } = this.#o;
    let current: Promise<Page>;
    let release: Release;
    const ahead = this.#prefetched;
    this.#prefetched = null;
    if (ahead?.url === this.#url) {
      ({ page: current, release } = ahead);
    } else {
      dropPage(ahead);
      release = await slots.acquire(this.#abort.signal);
      current = this.#fetch(this.#url);
    }
    try {
      const page = await current;
      telemetry.reply(200);
      const next = this.#checkNext(page.next);
      const caughtUp = page.items.length < source.pageLimit;
      const slot = caughtUp ? undefined : slots.tryAcquire();
      if (slot) this.#prefetched = { url: next, page: this.#fetch(next), release: slot };
      await this.#store(page.items, page.raw, next);
      this.#url = next;
      this.#positioned ||= page.items.length > 0 || next !== page.url;
      return caughtUp;
    } finally {
      release();
    }
  }

  #dropPrefetched(): void {
    dropPage(this.#prefetched);
    this.#prefetched = null;
  }

  #fetch(url: string): Promise<Page> {
    const { client, budget, source } = this.#o;
    const page = client.getPage(url, { budget, signal: this.#abort.signal, feature: source.feature });
    // Awaited later (or dropped after a failure): never an unhandled rejection meanwhile.
    page.catch(() => undefined);
    return page;
  }

  #checkNext(next: string | null): string {
    const { source, baseUrl, org } = this.#o;
    if (next === null) {
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${org}: ${source.path} answered without a next link; a polling request always has one. Not advancing.`,
      );
    }
    if (!isFollowable(next, baseUrl, source.path)) {
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${org}: the next link leaves ${new URL(baseUrl).origin}${source.path}; not following it with this org's credentials`,
      );
    }
    return next;
  }

  /**
   * Stores a page's events (each as the bytes the service sent), dead letters
   * and the new position in one atomic append. An empty page that leaves the position where it is stores
   * nothing but, now and then, a confirmation (#confirm). The append is retried (the page is held, not
   * refetched) while the stream says it may succeed.
   */
  async #store(items: readonly unknown[], raw: readonly Buffer[], next: string): Promise<void> {
    const { org, source, topics, health, telemetry } = this.#o;
    const now = this.#now();
    if (items.length === 0 && next === this.#url) {
      health.page(now, 0, null);
      telemetry.page(0, 0, true);
      await this.#confirm(now);
      return;
    }
    const receivedAt = new Date(now).toISOString();
    const headers = { [Header.org]: org, [Header.source]: source.name, [Header.receivedAt]: receivedAt };
    const events: StreamRecord[] = [];
    const rejected: StreamRecord[] = [];
    let newest: number | null = null;
    // Every event has the same key and headers, so only its value's size varies (recordBytes adds it up).
    const beside = recordBytes({ key: org, value: Buffer.alloc(0), headers });
    items.forEach((item, i) => {
      const value = raw[i]!;
      const checked = source.check(item);
      const event: StreamRecord = { key: org, value, headers };
      // An event no stream batch can hold would fail the whole page on every retry: it is set aside instead.
      const fits = beside + value.length <= MAX_RECORD_BYTES;
      if (checked.ok && fits) {
        events.push(event);
        if (newest === null || checked.publishedMs > newest) newest = checked.publishedMs;
      } else {
        const why = checked.ok
          ? `an event of ${value.length} bytes, over the largest stream record (${MAX_RECORD_BYTES} bytes)`
          : checked.reason;
        // Cut short when the raw bytes are too large even for the dead-letter topic (the size is kept in a header).
        rejected.push(
          storableLetter(deadLetter(value, `${source.path} item ${i}: ${why}`, `${source.name}-poller`, headers, org)),
        );
      }
    });
    const newestAll = newest === null ? health.newestPublishedMs : Math.max(newest, health.newestPublishedMs ?? newest);
    const cursor: Cursor = {
      next,
      savedAt: receivedAt,
      newestPublished: newestAll === null ? null : new Date(newestAll).toISOString(),
      checkedAt: receivedAt,
    };
    await this.#append([
      { topic: source.topic, records: events },
      { topic: topics.deadletter, records: rejected },
      { topic: topics.cursors, records: [cursorRecord(source.name, org, cursor)] },
    ]);
    this.#stored = { savedAt: cursor.savedAt, newestPublished: cursor.newestPublished, checkedMs: now };
    health.page(this.#now(), events.length, newest);
    telemetry.page(events.length, rejected.length, items.length < source.pageLimit);
  }

  /**
   * Caught up on a stored position: stores the same position again, with the time it moved kept and
   * checkedAt now, once the last record says more than successRecordIntervalMs ago. Without it the
   * cursors topic says only when the position last moved, and a quiet org looked like a stuck poller.
   * Nothing before the first stored position (the first request is rebuilt from `start` until then).
   */
  async #confirm(now: number): Promise<void> {
    const { org, source, topics } = this.#o;
    const stored = this.#stored;
    if (!stored || now - stored.checkedMs < this.#o.successRecordIntervalMs) return;
    const cursor: Cursor = {
      next: this.#url,
      savedAt: stored.savedAt,
      newestPublished: stored.newestPublished,
      checkedAt: new Date(now).toISOString(),
    };
    await this.#append([{ topic: topics.cursors, records: [cursorRecord(source.name, org, cursor)] }]);
    this.#stored = { ...stored, checkedMs: now };
  }

  // stop() lets an append in flight finish but starts no retry: an unstored page is simply fetched again next time.
  async #append(writes: TopicWrite[]): Promise<void> {
    const { stream, telemetry } = this.#o;
    await retry(() => stream.appendAtomically(writes), {
      policy: this.#o.policies.append,
      retriable: isRetriable,
      signal: this.#abort.signal,
      onRetry: (err, attempt, delayMs) => telemetry.appendRetry(err, attempt, delayMs),
    });
  }
}

interface Prefetched {
  readonly url: string;
  readonly page: Promise<Page>;
  readonly release: Release;
}

/** A prefetched page that will not be stored gives its slot back once its request has settled. */
function dropPage(p: Prefetched | null): void {
  if (p) void p.page.then(p.release, p.release);
}
