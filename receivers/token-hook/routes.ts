/**
 * `POST /hooks/token/:hookId`. Authentication comes first (the body of an
 * unauthenticated request is never read), and every failure of it looks the
 * same — 401, generic body — whether the hook id, the secret or the token was
 * wrong. Whatever goes wrong, an answer goes out: the service gives us 3 s and
 * never retries, and any non-200 makes it issue the original token.
 *
 * The route is served twice over the same `answerTokenRequest`: as a Koa route
 * (for completeness: odd URLs the fast path leaves to Koa), and by
 * `tokenHookFastPath`, which `createApp` puts in front of Koa. The answer path
 * is a few tens of microseconds of work; Koa's context, middleware chain,
 * router and response handling cost more than that on every sign-in, so the
 * fast path does what they do for this one route — request id, the error
 * answer, the debug line — directly on node:http.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Router from '@koa/router';
import type { Logger } from '../../platform/log.js';
import { isTooLarge, readBody } from '../body.js';
import { decide, type TokenHooks } from './service.js';

/** What goes out: a status and, except for 204, a JSON text. */
export interface TokenReply {
  readonly status: number;
  readonly body?: string;
}

const UNAUTHORIZED: TokenReply = Object.freeze({ status: 401, body: '{"error":"unauthorized"}' });
const UNSUPPORTED_TYPE: TokenReply = Object.freeze({
  status: 415,
  body: '{"error":"content-type must be application/json"}',
});
const TOO_LARGE: TokenReply = Object.freeze({ status: 413, body: '{"error":"body too large"}' });
const UNREADABLE: TokenReply = Object.freeze({ status: 400, body: '{"error":"could not read body"}' });
const NO_CONTENT: TokenReply = Object.freeze({ status: 204 });

/** What the handler needs from the request, whoever parsed it. */
export interface TokenRequest {
  readonly req: IncomingMessage;
  readonly hookId: string;
  readonly requestId: string | undefined;
  /** The client address, for the log lines of refusals only. */
  ip(): string;
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

export async function answerTokenRequest(hooks: TokenHooks, r: TokenRequest): Promise<TokenReply> {
  const hook = hooks.get(r.hookId);
  if (!hook) {
    hooks.logger.warn(
      { hookId: r.hookId.slice(0, 128), requestId: r.requestId, ip: r.ip() },
      'token_hook_unknown_hook',
    );
    return UNAUTHORIZED;
  }
  const headers = r.req.headers;
  const auth = await hook.auth.check((name) => {
    const v = headers[name.toLowerCase()];
    return v === undefined ? '' : Array.isArray(v) ? v.join(', ') : v;
  });
  if (!auth.ok) {
    hook.telemetry.authFailed(auth.reason, r.requestId, r.ip());
    return UNAUTHORIZED;
  }
  if (!isJsonRequest(r.req)) {
    hook.telemetry.badRequest(415, 'content-type is not application/json', r.requestId);
    return UNSUPPORTED_TYPE;
  }
  let raw: Buffer;
  try {
    raw = await readBody(r.req, hook.config.max_request_bytes);
  } catch (err) {
    const tooLarge = isTooLarge(err);
    hook.telemetry.badRequest(tooLarge ? 413 : 400, tooLarge ? 'body too large' : 'could not read body', r.requestId);
    return tooLarge ? TOO_LARGE : UNREADABLE;
  }
  const answer = decide(hook, raw, r.requestId);
  if (answer.status === 400) return { status: 400, body: JSON.stringify({ error: answer.error }) };
  if (answer.status === 204) return NO_CONTENT;
  return answer;
}

export function mountTokenHooks(router: Router, hooks: TokenHooks): void {
  router.post('/hooks/token/:hookId', async (ctx) => {
    const reply = await answerTokenRequest(hooks, {
      req: ctx.req,
      hookId: String(ctx.params.hookId),
      requestId: ctx.state.requestId as string | undefined,
      ip: () => ctx.ip,
    });
    ctx.status = reply.status;
    if (reply.body !== undefined) {
      ctx.type = 'application/json';
      ctx.body = reply.body;
    }
  });
}

export interface FastPathOptions {
  /** As Koa's `proxy` with `maxIpsCount: 1`: the client is the last X-Forwarded-For entry. */
  readonly trustProxy: boolean;
  /** The app's `component: http` logger. */
  readonly log: Logger;
}

const PREFIX = '/hooks/token/';
const JSON_TYPE = 'application/json; charset=utf-8';

/** The hook id of a token-hook URL, or undefined when this path is not one (or not a plain one). */
function hookIdOf(url: string): string | undefined {
  if (!url.startsWith(PREFIX)) return undefined;
  const q = url.indexOf('?', PREFIX.length);
  let id = url.slice(PREFIX.length, q === -1 ? url.length : q);
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

/**
 * Serves POST /hooks/token/:hookId straight on node:http, doing for it what
 * the app's Koa middleware does (a request id echoed in `x-request-id`, 500
 * with the request id when something throws, the debug line). Returns false,
 * untouched, for any other request.
 */
export function tokenHookFastPath(
  hooks: TokenHooks,
  opts: FastPathOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { log, trustProxy } = opts;
  return (req, res) => {
    if (req.method !== 'POST' || req.url === undefined) return false;
    const hookId = hookIdOf(req.url);
    if (hookId === undefined) return false;
    const requestId = randomUUID();
    const started = performance.now();
    const send = (reply: TokenReply): void => {
      // Headers as a flat array: no object walk. (The one writev per answer that profiles show is node's: the
      // header block and a string body go out as one buffer, with an empty final chunk beside it.)
      if (reply.body === undefined) {
        res.writeHead(reply.status, ['x-request-id', requestId]);
        res.end();
      } else {
        res.writeHead(reply.status, [
          'x-request-id',
          requestId,
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
    };
    answerTokenRequest(hooks, { req, hookId, requestId, ip: () => clientIp(req, trustProxy) }).then(
      send,
      (err: unknown) => {
        // As the Koa path logs it: pino's err serializer keeps the code, retriable flag and cause chain.
        log.error({ requestId, err }, 'request failed');
        if (res.headersSent) {
          res.destroy();
          return;
        }
        send({ status: 500, body: JSON.stringify({ error: 'internal error', requestId }) });
      },
    );
    return true;
  };
}
