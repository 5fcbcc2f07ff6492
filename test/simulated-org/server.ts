/**
 * A simulated identity-service org over real HTTP: `/api/v1/logs`,
 * `/api/v1/events` and `/oauth2/v1/token` with the documented rules, rate
 * limits and injectable faults. Strict: what the real service would reject,
 * it rejects, and every rejection caused by the client breaking a rule is
 * recorded in `violations` (requests it accepts but hooklog's own polling
 * rules forbid go to `breaches`). Tests and `hooklog demo` drive it.
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isRawReply, type RawReply, type RequestRecord, type SimApi, type SimOrg, type SimRequest } from './api.js';
import { AuthServer, oktaError, type AuthOptions, type Reply } from './auth.js';
import { FaultPlan, rateLimitFaultHeaders, type Fault } from './faults.js';
import { eventsPage, logsPage, type PageResult, type PagingContext } from './pages.js';
import { Bucket, type BucketOptions } from './rate-limit.js';
import { checkEventsQuery, checkLogsQuery } from './rules.js';
import { EventLog, type NewEvent, type StoredEvent } from './store.js';

export interface SimulatedOrgOptions {
  /** Default: one SSWS token, `sim-token`. */
  readonly auth?: AuthOptions;
  /** Per API; `false` turns the limit off. Default 120 requests per minute each. */
  readonly rateLimit?: {
    readonly logs?: BucketOptions | false;
    readonly events?: BucketOptions | false;
    /** Each management endpoint family's own bucket (`admit(name)`). Default 100 requests per minute each. */
    readonly management?: BucketOptions | false;
  };
  /** `missing` leaves the X-Rate-Limit-* headers off every reply. Default honest. */
  readonly rateLimitHeaders?: 'honest' | 'missing';
  /** The legacy Events API answers 403 E0000015 when false. Default true. */
  readonly legacyEnabled?: boolean;
  readonly retentionDays?: number;
  readonly maxSinceDays?: number;
  readonly now?: () => number;
  readonly port?: number;
}

const DAY = 86_400_000;

export type { RequestRecord };

export class SimulatedOrg extends EventEmitter implements SimOrg {
  readonly logs = new EventLog('uuid');
  readonly legacy = new EventLog('eventId');
  readonly faults = new FaultPlan();
  readonly auth: AuthServer;
  readonly buckets: { readonly logs: Bucket | null; readonly events: Bucket | null };
  readonly requests: RequestRecord[] = [];
  /** Requests refused because the client broke a rule. Must stay empty for hooklog. */
  readonly violations: string[] = [];
  /** Accepted, but against hooklog's polling rules (limit ≠ 1000, until, …). Must stay empty too. */
  readonly breaches: string[] = [];
  legacyEnabled: boolean;
  readonly #o: SimulatedOrgOptions;
  readonly #now: () => number;
  readonly #issued = new Set<string>();
  readonly #apis: SimApi[] = [];
  readonly #familyBuckets = new Map<string, Bucket | null>();
  readonly #server: Server;
  #url = '';

  private constructor(opts: SimulatedOrgOptions) {
    super();
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
    this.auth = new AuthServer(opts.auth ?? { ssws: ['sim-token'] }, this.#now);
    const bucket = (b: BucketOptions | false | undefined) =>
      b === false ? null : new Bucket(b ?? { limit: 120, windowMs: 60_000 });
    this.buckets = { logs: bucket(opts.rateLimit?.logs), events: bucket(opts.rateLimit?.events) };
    this.legacyEnabled = opts.legacyEnabled ?? true;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err: Error) => {
        if (!res.headersSent)
          this.#send(
            res,
            { status: 500, body: { errorCode: 'E0000009', errorSummary: `simulator bug: ${err.message}` } },
            {},
          );
        else res.destroy();
      });
    });
  }

  static async start(opts: SimulatedOrgOptions = {}): Promise<SimulatedOrg> {
    const org = new SimulatedOrg(opts);
    await new Promise<void>((resolve, reject) => {
      org.#server.once('error', reject);
      org.#server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
    });
    org.#url = `http://127.0.0.1:${(org.#server.address() as AddressInfo).port}`;
    return org;
  }

  /** The org's base URL (`base_url` in hooklog's config). */
  get url(): string {
    return this.#url;
  }

  get tokenUrl(): string {
    return `${this.#url}/oauth2/v1/token`;
  }

  /** Adds an API module (see api.ts); modules are asked in the order they were added. */
  use(api: SimApi): this {
    this.#apis.push(api);
    return this;
  }

  /**
   * Authenticates a module's request as the log APIs do (SSWS, or an OAuth token holding `scope`, with
   * its DPoP proof): null when allowed, else the service's 401/403 reply.
   */
  authorize(req: SimRequest, scope: string): Promise<Reply | null> {
    return this.auth.authenticate(
      req.header('authorization'),
      req.header('dpop'),
      req.method,
      req.url.toString(),
      scope,
    );
  }

  /**
   * Spends one request of endpoint family `family`'s bucket (`rateLimit.management`): the headers to
   * send, and a 429 reply (recorded as a violation) when the bucket is empty.
   */
  admit(family: string, now: number = this.#now()): { headers: Record<string, string>; refused: Reply | null } {
    let bucket = this.#familyBuckets.get(family);
    if (bucket === undefined) {
      const o = this.#o.rateLimit?.management;
      bucket = o === false ? null : new Bucket(o ?? { limit: 100, windowMs: 60_000 });
      this.#familyBuckets.set(family, bucket);
    }
    if (!bucket) return { headers: {}, refused: null };
    const admission = bucket.admit(now);
    const headers = this.#o.rateLimitHeaders === 'missing' ? {} : admission.headers;
    if (admission.allowed) return { headers, refused: null };
    const refused = oktaError(429, 'E0000047', 'API call exceeded rate limit due to too many requests.', {
      headers,
      violation: `rate limit exceeded (${family})`,
    });
    return { headers, refused };
  }

  addLogEvents(items: readonly NewEvent[]): StoredEvent[] {
    return this.logs.add(items, this.#now());
  }

  addLegacyEvents(items: readonly NewEvent[]): StoredEvent[] {
    return this.legacy.add(items, this.#now());
  }

  /** Events a client can still get (published within retention) — what must reach ClickHouse. */
  retained(log: EventLog): StoredEvent[] {
    const cutoff = this.#now() - (this.#o.retentionDays ?? 90) * DAY;
    return log.all().filter((e) => e.published >= cutoff);
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const now = this.#now();
    const url = new URL(req.url ?? '/', this.#url);
    const client = req.headers.authorization;
    const rec: RequestRecord = {
      at: now,
      method: req.method ?? '',
      path: url.pathname,
      params: Object.fromEntries(url.searchParams),
      status: 0,
      ...(client ? { client } : {}),
    };
    this.requests.push(rec);
    res.once('close', () => (rec.doneAt = this.#now()));
    this.emit('request', rec);
    if (url.pathname === '/oauth2/v1/token' && req.method === 'POST') {
      const text = await readBody(req);
      const form = new URLSearchParams(text);
      // Grants other than the service apps' client credentials (a sign-in's code) belong to a module.
      if (form.get('grant_type') !== 'client_credentials') {
        const simReq: SimRequest = {
          method: rec.method,
          url,
          header: (n) => header(req, n),
          body: Buffer.from(text),
          rec,
          now,
        };
        for (const module of this.#apis) {
          const reply = await module.handle(simReq, this);
          if (reply) return this.#replyAny(res, rec, reply);
        }
      }
      return this.#reply(res, rec, await this.auth.token(form, header(req, 'dpop'), this.tokenUrl), {});
    }
    const api = url.pathname === '/api/v1/logs' ? 'logs' : url.pathname === '/api/v1/events' ? 'events' : null;
    if (!api && this.#apis.length > 0) {
      const body = await readBytes(req);
      const simReq: SimRequest = { method: rec.method, url, header: (n) => header(req, n), body, rec, now };
      for (const module of this.#apis) {
        const reply = await module.handle(simReq, this);
        if (reply) return this.#replyAny(res, rec, reply);
      }
    }
    if (!api || req.method !== 'GET')
      return this.#reply(
        res,
        rec,
        { ...oktaError(404, 'E0000007', `Not found: ${url.pathname}`), violation: 'unknown endpoint' },
        {},
      );

    const fault = this.faults.take();
    if (fault) rec.fault = fault.kind;
    if (fault?.kind === 'drop') {
      rec.status = -1;
      req.socket.destroy();
      return;
    }
    const bucket = this.buckets[api];
    if (fault?.kind === 'status') {
      const code = fault.errorCode ?? 'E0000009';
      return this.#reply(
        res,
        rec,
        oktaError(
          fault.status,
          code,
          code === 'E0000009' ? 'Internal Server Error: the query took too long' : 'Service unavailable',
        ),
        this.#rlHeaders(bucket, now),
      );
    }
    if (fault?.kind === '429') {
      const h = rateLimitFaultHeaders(fault, this.#rlHeaders(bucket, now), now);
      return this.#reply(
        res,
        rec,
        oktaError(429, 'E0000047', 'API call exceeded rate limit due to too many requests.'),
        h,
      );
    }
    let rl: Record<string, string> = {};
    if (bucket) {
      const admission = bucket.admit(now);
      rl = this.#o.rateLimitHeaders === 'missing' ? {} : admission.headers;
      if (!admission.allowed) {
        return this.#reply(
          res,
          rec,
          {
            ...oktaError(429, 'E0000047', 'API call exceeded rate limit due to too many requests.'),
            violation: 'rate limit exceeded',
          },
          rl,
        );
      }
    }
    const scope = api === 'logs' ? 'okta.logs.read' : 'okta.events.read';
    const denied = await this.auth.authenticate(
      header(req, 'authorization'),
      header(req, 'dpop'),
      'GET',
      url.toString(),
      scope,
    );
    if (denied) return this.#reply(res, rec, denied, rl);
    if (api === 'events' && !this.legacyEnabled) {
      return this.#reply(
        res,
        rec,
        oktaError(403, 'E0000015', 'You do not have permission to access the feature you are requesting'),
        rl,
      );
    }
    const page = this.#page(api, url, now);
    if (!('items' in page)) return this.#reply(res, rec, page, rl);
    const links = [`<${url.toString()}>; rel="self"`, ...(page.next ? [`<${page.next}>; rel="next"`] : [])];
    const body = `[${page.items.map((e) => e.json).join(',')}]`;
    rec.status = 200;
    await this.#writePage(res, body, { ...rl, link: links }, fault);
  }

  #page(api: 'logs' | 'events', url: URL, now: number): PageResult | Reply {
    const ctx: PagingContext = {
      origin: this.#url,
      now,
      retentionMs: (this.#o.retentionDays ?? 90) * DAY,
      issued: this.#issued,
    };
    if (api === 'logs') {
      const checked = checkLogsQuery(url.searchParams, now, (this.#o.maxSinceDays ?? 180) * DAY);
      if (!checked.ok)
        return { ...checked.rejection, body: errorBody(checked.rejection), violation: checked.rejection.summary };
      this.breaches.push(...checked.breaches);
      return logsPage(this.logs, checked.value, ctx);
    }
    const checked = checkEventsQuery(url.searchParams);
    if (!checked.ok)
      return { ...checked.rejection, body: errorBody(checked.rejection), violation: checked.rejection.summary };
    this.breaches.push(...checked.breaches);
    return eventsPage(this.legacy, checked.value, url.toString(), ctx);
  }

  #rlHeaders(bucket: Bucket | null, now: number): Record<string, string> {
    return bucket && this.#o.rateLimitHeaders !== 'missing' ? bucket.peek(now) : {};
  }

  #reply(res: ServerResponse, rec: RequestRecord, reply: Reply, headers: Record<string, string>): void {
    rec.status = reply.status;
    if (reply.violation)
      this.violations.push(
        `${reply.status} ${rec.method} ${rec.path} ${JSON.stringify(rec.params)}: ${reply.violation}`,
      );
    this.#send(res, reply, headers);
  }

  #replyAny(res: ServerResponse, rec: RequestRecord, reply: Reply | RawReply): void {
    if (!isRawReply(reply)) return this.#reply(res, rec, reply, {});
    rec.status = reply.status;
    if (reply.violation)
      this.violations.push(
        `${reply.status} ${rec.method} ${rec.path} ${JSON.stringify(rec.params)}: ${reply.violation}`,
      );
    res.writeHead(reply.status, { ...reply.headers });
    res.end(reply.raw);
  }

  #send(res: ServerResponse, reply: Reply, headers: Record<string, string>): void {
    // A 204 (or any reply without a body) is sent empty, as the service does.
    if (reply.body === undefined || reply.status === 204) {
      res.writeHead(reply.status, { ...headers, ...reply.headers });
      res.end();
      return;
    }
    res.writeHead(reply.status, { 'content-type': 'application/json', ...headers, ...reply.headers });
    res.end(JSON.stringify(reply.body));
  }

  async #writePage(
    res: ServerResponse,
    body: string,
    headers: Record<string, string | string[]>,
    fault: Fault | null,
  ): Promise<void> {
    const bytes = Buffer.from(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(bytes.length), ...headers });
    if (fault?.kind === 'truncate') {
      res.write(bytes.subarray(0, Math.floor(bytes.length / 2)));
      await new Promise((r) => setTimeout(r, 20));
      res.destroy();
      return;
    }
    if (fault?.kind === 'slow') {
      await new Promise((r) => setTimeout(r, fault.ms));
      const pieces = 4;
      const size = Math.ceil(bytes.length / pieces);
      for (let i = 0; i < pieces && !res.destroyed; i++) {
        res.write(bytes.subarray(i * size, (i + 1) * size));
        await new Promise((r) => setTimeout(r, fault.ms / pieces));
      }
      res.end();
      return;
    }
    res.end(bytes);
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function errorBody(r: { errorCode: string; summary: string }): unknown {
  return {
    errorCode: r.errorCode,
    errorSummary: r.summary,
    errorLink: r.errorCode,
    errorId: 'simrejected',
    errorCauses: [{ errorSummary: r.summary }],
  };
}

function readBytes(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (data += c));
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}
