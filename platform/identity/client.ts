/**
 * The identity-service HTTP client: one GET of a page, with auth, the org's
 * rate-limit budget, and every retry decision. Waits (budget, backoff, 429)
 * happen outside `schedule`, so an org that is waiting never holds one of the
 * process's request slots and cannot stall the other orgs.
 */
import { HooklogError } from '../errors.js';
import { backoffDelay, sleep, type RetryPolicy } from '../retry.js';
import type { Authenticator } from './auth.js';
import { classifyIdpReply, classifyNetworkError } from './errors.js';
import { splitJsonArray } from './json-array.js';
import { findLink } from './link.js';
import { IdpRetryPolicies, type IdpPolicies } from './policies.js';
import {
  rateLimitedDelay,
  readRateLimit,
  type BudgetWait,
  type RateBudget,
  type RateLimitState,
} from './rate-limit.js';

export interface Page {
  /** The URL that was fetched. */
  readonly url: string;
  /** The reply's JSON array, parsed. */
  readonly items: unknown[];
  /** Each item's bytes exactly as the service sent them (what goes onto the stream): views of the reply's body. */
  readonly raw: Buffer[];
  /** The `rel="next"` link exactly as given (resolved only if relative), or null. */
  readonly next: string | null;
  readonly rateLimit: RateLimitState | null;
}

/** What the client tells its owner, for logs and metrics (see ingest/telemetry.ts). */
export interface ClientEvents {
  reply?(status: number, ms: number): void;
  retry?(err: HooklogError, attempt: number, delayMs: number): void;
  /** A 429: how long every request of its bucket now waits, whether the reply named a usable Reset, and until when. */
  rateLimited?(delayMs: number, resetKnown: boolean, wait?: { readonly what: string; readonly untilMs: number }): void;
  budgetWait?(ms: number, why: string): void;
}

export interface IdentityClientOptions {
  readonly org: string;
  /** The org's origin (`https://acme.okta.com`), where `send` resolves management paths. Pages come as full URLs. */
  readonly baseUrl?: string;
  readonly auth: Authenticator;
  /** A reply must be complete (headers and body) within this. */
  readonly requestTimeoutMs: number;
  /**
   * Runs one attempt; the ingest supervisor passes a p-queue's `add` to cap
   * requests in flight. It must reject when `signal` aborts before the attempt
   * started (a dropped queue entry would otherwise never settle).
   */
  readonly schedule?: <T>(fn: () => Promise<T>, signal?: AbortSignal) => Promise<T>;
  readonly policies?: IdpPolicies;
  readonly events?: ClientEvents;
  readonly now?: () => number;
}

export interface GetOptions {
  readonly budget: RateBudget;
  readonly signal?: AbortSignal;
  /** The legacy Events API: 403/404 mean "not enabled for this org". */
  readonly feature?: boolean;
  /** What a 403 means this request lacks (a scope, an admin role), named in the error. */
  readonly needs?: string;
}

/** One call of the management API (`IdentityClient.send`). */
export interface SendRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path and query on the org's origin, e.g. `/api/v1/eventHooks/who123/lifecycle/verify`. */
  readonly path: string;
  /** Sent as JSON; a string is sent as it is (with `contentType`). */
  readonly body?: unknown;
  /** Content type of a body. Default `application/json`. */
  readonly contentType?: string;
  /** The bucket this endpoint's calls spend (the service limits each endpoint family on its own). */
  readonly budget: RateBudget;
  readonly signal?: AbortSignal;
  /** Retry transient failures of a POST too: the caller made repeating it harmless. */
  readonly retryUnsafe?: boolean;
  /** Override of the transient retry policy (default `IdpPolicies.management`). */
  readonly transient?: RetryPolicy;
  /** What a 403 means this request lacks (a scope, an admin role), named in the error. */
  readonly needs?: string;
  /** Send no credentials: the body authenticates itself (a signed SET). */
  readonly anonymous?: boolean;
  /**
   * No rate-limit wait (the budget's share, a 429's Reset) may end after this epoch time: the call fails with
   * IDP_RATE_LIMITED at once instead, naming when the wait would have ended (`IdpPolicies.commandWait`).
   */
  readonly waitUntilMs?: number;
  /**
   * Told of every HTTP request this call makes, once it is answered (its status: 2xx, a 429 or 5xx retried, a
   * 401 renewed) or failed (`network`: refused, reset, timed out), so a caller can record how many requests a
   * call took, retries within it included.
   */
  readonly onAttempt?: (reply: AttemptReply) => void;
}

/** What one HTTP request of a call came to: the reply's status, or `network` when no reply came. */
export type AttemptReply = number | 'network';

export interface SendReply<T> {
  readonly status: number;
  readonly headers: Headers;
  /** The JSON body, or null when empty or not JSON (`text` has it as sent). */
  readonly body: T | null;
  readonly text: string;
}

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  /** The body as received; decoded to text only where text is needed. */
  readonly body: Buffer;
}

export class IdentityClient {
  readonly #o: IdentityClientOptions;
  readonly #p: IdpPolicies;
  readonly #now: () => number;

  constructor(opts: IdentityClientOptions) {
    this.#o = opts;
    this.#p = opts.policies ?? IdpRetryPolicies;
    this.#now = opts.now ?? Date.now;
  }

  get org(): string {
    return this.#o.org;
  }

  /**
   * GETs `url` until the service answers 2xx with a JSON array, retrying what
   * is transient (5xx, E0000009, network, time-outs: exponential backoff; 429:
   * until Reset plus jitter) without limit. Throws a non-retriable HooklogError
   * for what waiting cannot fix, or the abort reason when `signal` aborts.
   */
  async getPage(url: string, opts: GetOptions): Promise<Page> {
    const what = `org ${this.#o.org}: GET ${new URL(url).pathname}`;
    return this.#exchange(what, () => this.#attempt('GET', url, what, opts.signal), {
      ...opts,
      transient: this.#p.transient,
      retryTransient: true,
      accept: (reply) => {
        const parsed = parseArray(reply.body);
        if (parsed === null) return undefined;
        return {
          url,
          ...parsed,
          next: resolveNext(findLink(reply.headers.get('link'), 'next'), url),
          rateLimit: reply.rateLimit,
        };
      },
    });
  }

  /**
   * One call of the management API (`path` on the org's origin, JSON in and
   * out), within `budget`, with the same auth, 401 renewal and 429 handling as
   * a page. Transient failures (5xx, network, time-outs) are retried with
   * `opts.transient` (default: the client's bounded `management` policy) only
   * when repeating the call cannot do it twice: GET, PUT and DELETE, or any
   * method with `retryUnsafe` (the caller made it idempotent, e.g. by a stable
   * id the service dedupes on). Non-2xx answers throw an `IdpReplyError`
   * carrying the service's errorCode, errorSummary and errorCauses.
   */
  async send<T = unknown>(req: SendRequest): Promise<SendReply<T>> {
    const url = `${this.#origin()}${req.path}`;
    const what = `org ${this.#o.org}: ${req.method} ${new URL(url).pathname}`;
    const idempotent = req.method === 'GET' || req.method === 'PUT' || req.method === 'DELETE';
    const body =
      req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...(body !== undefined ? { 'content-type': req.contentType ?? 'application/json' } : {}),
    };
    return this.#exchange(
      what,
      () =>
        this.#attempt(req.method, url, what, req.signal, {
          headers,
          body,
          anonymous: req.anonymous === true,
          ...(req.onAttempt ? { onAttempt: req.onAttempt } : {}),
        }),
      {
        budget: req.budget,
        ...(req.signal ? { signal: req.signal } : {}),
        ...(req.needs ? { needs: req.needs } : {}),
        ...(req.waitUntilMs !== undefined ? { waitUntilMs: req.waitUntilMs } : {}),
        transient: req.transient ?? this.#p.management,
        retryTransient: idempotent || req.retryUnsafe === true,
        accept: (reply) => {
          const text = bodyText(reply.body);
          let parsed: T | null = null;
          if (text.trim() !== '') {
            try {
              parsed = JSON.parse(text) as T;
            } catch {
              parsed = null;
            }
          }
          return { status: reply.status, headers: reply.headers, body: parsed, text };
        },
      },
    );
  }

  /** The org's origin: where management paths are resolved (from `baseUrl`). */
  #origin(): string {
    const base = this.#o.baseUrl;
    if (!base) throw new HooklogError('INTERNAL', `org ${this.#o.org}: the client has no baseUrl for management calls`);
    return base.replace(/\/+$/, '');
  }

  /**
   * The loop every call shares: budget, one attempt through `schedule`, the
   * reply's rate-limit headers into the budget, 401 → one credential renewal,
   * 429 → every request of the bucket waits until Reset plus jitter, a
   * transient failure → backoff (when `retryTransient`, up to the policy's
   * retries), anything else thrown classified. `accept` turns a 2xx into the
   * result, or `undefined` for a 2xx that is not what was asked (retried as
   * transient: the service answered, but not in full).
   */
  async #exchange<T>(
    what: string,
    attempt: () => Promise<Reply>,
    opts: GetOptions & {
      readonly transient: RetryPolicy;
      readonly retryTransient: boolean;
      readonly needs?: string;
      readonly waitUntilMs?: number;
      readonly accept: (reply: Reply & { readonly rateLimit: RateLimitState | null }) => T | undefined;
    },
  ): Promise<T> {
    const { budget, signal } = opts;
    let transient = 0;
    let limited = 0;
    const backoff = async (err: HooklogError) => {
      if (!opts.retryTransient || transient >= opts.transient.retries) throw err;
      await this.#backoff(err, ++transient, opts.transient, signal);
    };
    for (;;) {
      const claim = await budget.acquire(signal, this.#o.events?.budgetWait, opts.waitUntilMs);
      if (claim === null) throw abortReason(signal);
      if (typeof claim !== 'string') throw waitTooLong(what, claim, opts.waitUntilMs!);
      let reply: Reply;
      const started = this.#now();
      try {
        reply = await (this.#o.schedule ?? run)(attempt, signal);
      } catch (err) {
        // No longer in flight; if it reached the service, the next reply's Remaining counts it.
        budget.settle(claim, null);
        if (signal?.aborted) throw abortReason(signal);
        const e = classifyNetworkError(err, what, this.#o.requestTimeoutMs);
        if (!e.retriable) throw e;
        await backoff(e);
        continue;
      }
      this.#o.events?.reply?.(reply.status, this.#now() - started);
      const rateLimit = readRateLimit(reply.headers);
      budget.settle(claim, rateLimit, started, reply.status !== 429);
      const ok = reply.status >= 200 && reply.status < 300;
      this.#o.auth.observe(reply.headers, ok);
      if (ok) {
        const result = opts.accept({ ...reply, rateLimit });
        if (result !== undefined) return result;
        await backoff(
          new HooklogError('IDP_UNAVAILABLE', `${what}: ${reply.status} reply is not a JSON array`, {
            retriable: true,
          }),
        );
        continue;
      }
      const text = bodyText(reply.body);
      if (reply.status === 401 && this.#o.auth.unauthorized(reply.headers, text)) continue;
      const err = classifyIdpReply(reply.status, text, what, { feature: opts.feature, needs: opts.needs });
      if (reply.status === 429) {
        const fallback = backoffDelay(this.#p.rateLimitedFallback, ++limited);
        const delay = rateLimitedDelay(rateLimit, this.#now(), fallback, this.#p.resetJitter);
        const untilMs = this.#now() + delay;
        // The budget holds every request of this bucket back until then, not only this one, in the 429's window.
        budget.blockUntil(untilMs, rateLimit);
        if (opts.waitUntilMs !== undefined && untilMs > opts.waitUntilMs)
          throw waitTooLong(
            what,
            { untilMs, why: `the service answered 429 (${err.serviceSays})` },
            opts.waitUntilMs,
            err,
          );
        this.#o.events?.rateLimited?.(delay, rateLimit !== null && rateLimit.resetAtMs > this.#now(), {
          what,
          untilMs,
        });
        continue;
      }
      if (!err.retriable) throw err;
      await backoff(err);
    }
  }

  async #attempt(
    method: string,
    url: string,
    what: string,
    signal?: AbortSignal,
    extra: {
      headers?: Record<string, string>;
      body?: string;
      anonymous?: boolean;
      onAttempt?: (reply: AttemptReply) => void;
    } = {},
  ): Promise<Reply> {
    const auth = extra.anonymous ? {} : await this.#o.auth.headers(method, url, signal);
    const timeout = AbortSignal.timeout(this.#o.requestTimeoutMs);
    // From here a request is made (credentials failing above made none): it counts, answered or not.
    let res: Response;
    let body: Buffer;
    try {
      res = await fetch(url, {
        method,
        headers: { accept: 'application/json', ...extra.headers, ...auth },
        ...(extra.body !== undefined ? { body: extra.body } : {}),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        // Credentials go to the org only: a redirect is a reply to inspect, never to follow.
        redirect: 'manual',
      });
      body = await readBody(res);
    } catch (err) {
      extra.onAttempt?.('network');
      throw err;
    }
    extra.onAttempt?.(res.status);
    if (res.status >= 300 && res.status < 400) {
      throw new HooklogError('IDP_REQUEST_REJECTED', `${what}: unexpected redirect (${res.status}); check base_url`);
    }
    return { status: res.status, headers: res.headers, body };
  }

  async #backoff(err: HooklogError, attempt: number, policy: RetryPolicy, signal?: AbortSignal): Promise<void> {
    const delay = backoffDelay(policy, attempt);
    this.#o.events?.retry?.(err, attempt, delay);
    await sleep(delay, signal);
    if (signal?.aborted) throw abortReason(signal);
  }
}

/**
 * The reply's body as one Buffer. Not `arrayBuffer()`: it joins the chunks and
 * then copies the result once more into a fresh ArrayBuffer, and touching a
 * fresh page-sized buffer (page faults) cost ~0.9 ms of main-thread CPU per
 * 1.5 MB page. Chunks are joined once, as `text()` does before decoding.
 */
async function readBody(res: Response): Promise<Buffer> {
  if (res.body === null) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of res.body) {
    chunks.push(chunk);
    bytes += chunk.length;
  }
  return Buffer.concat(chunks, bytes);
}

const WHY_WAIT: Record<string, string> = {
  share: "the org's share of this endpoint family's rate limit (management.rate_limit_share) is spent",
  reserve: "the endpoint family's rate-limit bucket is nearly empty (the org's other clients use it)",
  blocked: 'an earlier 429 of this endpoint family (another request of this host) holds it back',
};

/** A rate-limit wait past the caller's bound: IDP_RATE_LIMITED, naming why and when it would have ended. */
function waitTooLong(what: string, wait: BudgetWait, deadlineMs: number, cause?: unknown): HooklogError {
  return new HooklogError(
    'IDP_RATE_LIMITED',
    `${what}: rate limited: ${WHY_WAIT[wait.why] ?? wait.why}; waiting would end at ${new Date(wait.untilMs).toISOString()}, ` +
      `after this command's limit on waiting (${new Date(deadlineMs).toISOString()})`,
    { retriable: true, ...(cause !== undefined ? { cause } : {}) },
  );
}

function run<T>(fn: () => Promise<T>): Promise<T> {
  return fn();
}

function abortReason(signal?: AbortSignal): Error {
  return signal?.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** Where the JSON text starts: after a UTF-8 byte-order mark, which RFC 8259 allows a reader to ignore. */
function textStart(body: Buffer): number {
  return body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
}

/** An error reply's text, for classification (as `res.text()` would give it). */
function bodyText(body: Buffer): string {
  return body.toString('utf8', textStart(body));
}

/**
 * The array's items, parsed and as sent; null unless the whole body is one
 * valid JSON array. One scan for the elements' byte ranges (views, no copies),
 * then one JSON.parse of each element's bytes. The scan checks the array's own
 * brackets and commas and each element is parsed whole, so this takes exactly
 * the bodies one JSON.parse of the whole body would. It is also cheaper than
 * that parse: one character above U+00FF makes V8 decode the whole body as a
 * two-byte string, while per element only the events holding one are. On a
 * bench page (1.5 MB, 432 of 1000 events with such a character) decode +
 * parse took ~6.3 ms per element against ~8.3 ms whole; on pure ASCII the two
 * are equal. Bytes that are not UTF-8 are parsed as U+FFFD but kept as sent in
 * `raw` (element bounds are ASCII bytes, so each element decodes as it would
 * within the body); the sink refuses such a value to the dead letters.
 */
function parseArray(body: Buffer): { items: unknown[]; raw: Buffer[] } | null {
  const raw = splitJsonArray(body, textStart(body));
  if (raw === null) return null;
  const items = new Array<unknown>(raw.length);
  try {
    for (let i = 0; i < raw.length; i++) items[i] = JSON.parse(raw[i]!.toString('utf8'));
  } catch {
    return null;
  }
  return { items, raw };
}

/** Absolute links are kept byte for byte; a relative one is resolved against the page's URL. */
export function resolveNext(link: string | null, base: string): string | null {
  if (link === null) return null;
  return /^https?:\/\//i.test(link) ? link : new URL(link, base).toString();
}
