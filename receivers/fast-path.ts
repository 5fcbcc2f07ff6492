/**
 * Hook routes served straight on node:http, in front of Koa. The hooks are
 * called per sign-in (token) and per batch of events (event hooks), and for
 * them Koa's context, middleware chain, router and response handling cost
 * about as much as the work itself; so `createApp` puts these routes before
 * Koa, and they do for their own requests what the app's middleware does for
 * every other one: a request id echoed in `x-request-id`, a JSON 500 naming it
 * when the handler throws, and the debug request line. The same handler is
 * mounted as a Koa route too (`replyThroughKoa`), for the URLs these leave to
 * Koa (another method, an odd path), so each hook has one implementation.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { Logger } from '../platform/log.js';

/** What goes out: a status, extra headers as name, value pairs, and (except for a 204) a JSON text. */
export interface Reply {
  readonly status: number;
  readonly headers?: readonly string[];
  readonly body?: string;
}

/** What a hook's handler needs from the request, whether Koa or the fast path received it. */
export interface HookRequest {
  readonly req: IncomingMessage;
  /** The path's `:hookId`, decoded. */
  readonly hookId: string;
  readonly requestId: string;
  /** The client address, as Koa's `ctx.ip` gives it (for log lines only). */
  ip(): string;
}

export interface FastPathOptions {
  /** As Koa's `proxy` with `maxIpsCount: 1`: the client is the last X-Forwarded-For entry. */
  readonly trustProxy: boolean;
  /** The app's `component: http` logger. */
  readonly log: Logger;
}

/** Serves the request and returns true, or returns false, untouched, for Koa. */
export type FastRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The fast path for `<prefix>:hookId` and the given methods; anything else
 * (another method, a deeper path, a malformed escape) is left to Koa.
 */
export function fastRoute(
  prefix: string,
  methods: readonly string[],
  opts: FastPathOptions,
  answer: (r: HookRequest) => Promise<Reply>,
): FastRoute {
  const { log, trustProxy } = opts;
  return (req, res) => {
    if (req.url === undefined || !methods.includes(req.method!)) return false;
    const hookId = routeId(req.url, prefix);
    if (hookId === undefined) return false;
    const requestId = randomUUID();
    const started = performance.now();
    let answered: Promise<Reply>;
    try {
      answered = answer(new FastRequest(req, hookId, requestId, trustProxy));
    } catch (err) {
      answered = Promise.reject(err); // thrown before its first await: answered the same way
    }
    answered.then(
      (reply) => send(req, res, requestId, started, reply, log),
      (err: unknown) => {
        // As the Koa path logs it: pino's err serializer keeps the code, retriable flag and cause chain.
        log.error({ requestId, err }, 'request failed');
        if (res.headersSent) {
          res.destroy();
          return;
        }
        send(
          req,
          res,
          requestId,
          started,
          { status: 500, body: JSON.stringify({ error: 'internal error', requestId }) },
          log,
        );
      },
    );
    return true;
  };
}

/** A request as the fast path received it: an object rather than a closure for `ip`, one per request. */
class FastRequest implements HookRequest {
  readonly req: IncomingMessage;
  readonly hookId: string;
  readonly requestId: string;
  readonly #trustProxy: boolean;

  constructor(req: IncomingMessage, hookId: string, requestId: string, trustProxy: boolean) {
    this.req = req;
    this.hookId = hookId;
    this.requestId = requestId;
    this.#trustProxy = trustProxy;
  }

  ip(): string {
    return clientIp(this.req, this.#trustProxy);
  }
}

/** Writes `reply`, then the debug line the app's middleware writes for every other request. */
function send(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  started: number,
  reply: Reply,
  log: Logger,
): void {
  // Headers as a flat array: no object walk. (The one writev per answer that profiles show is node's: the
  // header block and a string body go out as one buffer, with an empty final chunk beside it.)
  const extra = reply.headers ?? NONE;
  if (reply.body === undefined) {
    res.writeHead(
      reply.status,
      extra.length === 0 ? ['x-request-id', requestId] : ['x-request-id', requestId, ...extra],
    );
    res.end();
  } else {
    res.writeHead(reply.status, [
      'x-request-id',
      requestId,
      ...extra,
      'content-type',
      JSON_TYPE,
      'content-length',
      String(Buffer.byteLength(reply.body)),
    ]);
    res.end(reply.body);
  }
  if (log.isLevelEnabled('debug')) {
    log.debug(
      {
        requestId,
        method: req.method,
        path: req.url!.split('?')[0],
        status: reply.status,
        ms: Math.round(performance.now() - started),
      },
      'request',
    );
  }
}
const NONE: readonly string[] = [];

/** Answers a Koa route with a handler's reply, as the fast path would have. */
export function replyThroughKoa(ctx: Context, reply: Reply): void {
  ctx.status = reply.status;
  const extra = reply.headers ?? NONE;
  for (let i = 0; i < extra.length; i += 2) ctx.set(extra[i]!, extra[i + 1]!);
  if (reply.body !== undefined) {
    ctx.type = 'application/json';
    ctx.body = reply.body;
  }
}

/** The `:hookId` of a `<prefix>:hookId` URL, or undefined when this path is not one (or not a plain one). */
function routeId(url: string, prefix: string): string | undefined {
  if (!url.startsWith(prefix)) return undefined;
  const q = url.indexOf('?', prefix.length);
  let id = url.slice(prefix.length, q === -1 ? url.length : q);
  if (id.endsWith('/')) id = id.slice(0, -1); // the router is not strict about a trailing slash
  if (id === '' || id.includes('/') || id.includes('#')) return undefined;
  if (!id.includes('%')) return id;
  try {
    return decodeURIComponent(id);
  } catch {
    return undefined; // Koa's router decides what a malformed escape gets
  }
}

function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const xff = req.headers['x-forwarded-for'];
    if (typeof xff === 'string' && xff !== '') {
      const last = xff.slice(xff.lastIndexOf(',') + 1).trim();
      if (last !== '') return last;
    }
  }
  return req.socket.remoteAddress ?? '';
}

/** A request header's value as Koa's `ctx.get` gives it: '' when absent. */
export function requestHeader(req: IncomingMessage, name: string): string {
  const field = name.toLowerCase();
  const headers = req.headers;
  const value = field === 'referer' || field === 'referrer' ? (headers.referrer ?? headers.referer) : headers[field];
  return value === undefined ? '' : Array.isArray(value) ? value.join(', ') : value;
}

/**
 * What `ctx.is('application/json')` answers: a request with a body (a length or
 * a transfer encoding) whose media type, parameters aside, is application/json.
 */
export function isJsonRequest(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] === undefined && (length === undefined || Number.isNaN(Number(length))))
    return false;
  const type = req.headers['content-type'];
  if (type === undefined) return false;
  const semi = type.indexOf(';');
  return (semi === -1 ? type : type.slice(0, semi)).trim().toLowerCase() === 'application/json';
}
