/**
 * The event-hook routes are served in front of Koa (routes.ts, eventHookFastPath):
 * they must answer exactly as the Koa routes over the same handler do, do what
 * the app's middleware does for them (a request id in x-request-id, a JSON 500
 * naming it when something throws, the debug line), and leave every other
 * request, HEAD and odd URLs included, to Koa.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { delivery, validLogEvents } from '../../test/fixtures/index.js';
import { eventHookFastPath, type EventHooks } from './routes.js';
import { SECRET, readTopic, startHarness, type Harness } from './testing.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const events = validLogEvents();

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One request on its own connection, headers as sent back (fetch hides some, such as Connection). */
function send(url: string, method: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false, timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end(body);
  });
}

const auth = { 'x-hook-secret': SECRET };
const json = { ...auth, 'content-type': 'application/json' };
const body = (eventId: string, list: unknown[] = [events[0]]) => JSON.stringify(delivery('acme', 'h1', list, eventId));

describe('event hook fast path', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      server: { body_limit_bytes: 64 * 1024 },
      event_hook_receiver: { retry_after_seconds: 9 },
    });
  });
  afterAll(async () => h?.close());

  it('answers with a request id, for the plain path, a trailing slash, a query and an escaped id', async () => {
    for (const path of ['/hooks/events/h1', '/hooks/events/h1/', '/hooks/events/h1?x=1', '/hooks/events/%68%31']) {
      const verify = await send(`${h.url}${path}`, 'GET', { ...auth, 'x-okta-verification-challenge': 'c-1' });
      expect([verify.status, verify.body], path).toEqual([200, '{"verification":"c-1"}']);
      expect(verify.headers['content-type'], path).toBe('application/json; charset=utf-8');
      expect(verify.headers['x-request-id'], path).toMatch(UUID);
      const post = await send(`${h.url}${path}`, 'POST', json, body(`fast-${path}`));
      expect([post.status, post.body], path).toEqual([204, '']);
      expect(post.headers['x-request-id'], path).toMatch(UUID);
      // The debug request line, as the app's middleware writes it for Koa's requests.
      const line = h.logs().find((l) => l.msg === 'request' && l.requestId === post.headers['x-request-id']);
      expect(line, path).toMatchObject({ method: 'POST', path: path.split('?')[0], status: 204 });
    }
  });

  it('answers every case exactly as the Koa routes over the same handler do', async () => {
    const big = JSON.stringify(
      delivery(
        'acme',
        'h1',
        Array.from({ length: 60 }, () => events[1]),
        'big',
      ),
    );
    const cases: Array<[string, string, Record<string, string>, ((id: string) => string) | undefined]> = [
      ['verification', 'GET', { ...auth, 'x-okta-verification-challenge': 'abc' }, undefined],
      ['no challenge', 'GET', auth, undefined],
      ['wrong secret', 'POST', { ...json, 'x-hook-secret': 'wrong-but-long-enough-0123' }, body],
      ['no secret', 'GET', { 'x-okta-verification-challenge': 'abc' }, undefined],
      ['a delivery', 'POST', json, body],
      ['an invalid event', 'POST', json, (id) => body(id, [events[2], { uuid: 'x' }])],
      ['not JSON', 'POST', json, (id) => `{"eventId":"${id}",`],
      ['not a delivery', 'POST', json, (id) => JSON.stringify({ eventId: id, data: { events: [] } })],
      ['another content type', 'POST', { ...auth, 'content-type': 'text/plain' }, body],
      ['too large', 'POST', json, () => big],
    ];
    for (const [name, method, headers, make] of cases) {
      const [fast, koa] = await Promise.all(
        [h.url, h.koaUrl].map((base, i) => send(`${base}/hooks/events/h1`, method, headers, make?.(`${name}-${i}`))),
      );
      const view = (a: Answer) => ({
        status: a.status,
        body: a.body,
        type: a.headers['content-type'],
        retryAfter: a.headers['retry-after'],
        connection: a.headers.connection,
        requestId: UUID.test(String(a.headers['x-request-id'])),
      });
      expect(view(fast!), name).toEqual(view(koa!));
    }
    const unknown = await Promise.all(
      [h.url, h.koaUrl].map((base) => send(`${base}/hooks/events/nope`, 'POST', json, body('unknown'))),
    );
    expect(unknown.map((a) => [a.status, a.body])).toEqual([
      [401, '{"error":"unauthorized"}'],
      [401, '{"error":"unauthorized"}'],
    ]);
  });

  it('sends 413 with Connection: close, 503 with Retry-After, and keeps serving', async () => {
    const big = JSON.stringify(
      delivery(
        'acme',
        'h1',
        Array.from({ length: 60 }, () => events[1]),
        'too-big',
      ),
    );
    const tooLarge = await send(`${h.url}/hooks/events/h1`, 'POST', json, big);
    expect([tooLarge.status, tooLarge.headers.connection]).toEqual([413, 'close']);
    h.stream.failNext(1);
    const down = await send(`${h.url}/hooks/events/h1`, 'POST', json, body('stream-down'));
    expect([down.status, down.headers['retry-after'], down.body]).toEqual([
      503,
      '9',
      '{"error":"not durable in time, retry"}',
    ]);
    const ok = await send(`${h.url}/hooks/events/h1`, 'POST', json, body('after'));
    expect(ok.status).toBe(204);
    const stored = await readTopic(h.stream, h.topics.deadletter, 1);
    expect(stored.some((r) => r.headers['hooklog-request-id'] === tooLarge.headers['x-request-id'])).toBe(true);
  });

  it('leaves other methods and paths to Koa', async () => {
    const head = await send(`${h.url}/hooks/events/h1`, 'HEAD', { ...auth, 'x-okta-verification-challenge': 'c' });
    expect([head.status, head.body]).toEqual([200, '']); // Koa's GET route answers HEAD
    expect(head.headers['x-request-id']).toMatch(UUID); // from Koa's own request-id middleware
    const put = await send(`${h.url}/hooks/events/h1`, 'PUT', json, body('put'));
    expect(put.status).toBe(405); // the router's allowedMethods
    expect((await send(`${h.url}/hooks/events/h1/extra`, 'POST', json, body('deeper'))).status).toBe(404);
    // A malformed escape: the router decides (it keeps the text as the id, which names no hook).
    const odd = await send(`${h.url}/hooks/events/%E0%A4%A`, 'POST', json, body('odd'));
    expect([odd.status, odd.body]).toEqual([401, '{"error":"unauthorized"}']);
  });

  it('answers 500 with the request id when the handler throws or rejects', async () => {
    const log = silentLogger();
    const throwing: EventHooks = {
      answer: () => {
        throw new Error('boom');
      },
    };
    const rejecting: EventHooks = { answer: async () => Promise.reject(new Error('boom')) };
    for (const hooks of [throwing, rejecting]) {
      const fast = eventHookFastPath(hooks, { trustProxy: false, log });
      const server: Server = createServer((req, res) => {
        if (!fast(req, res)) res.writeHead(418).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const res = await send(`${url}/hooks/events/h1`, 'POST', json, '{}');
        expect(res.status).toBe(500);
        expect(JSON.parse(res.body)).toEqual({ error: 'internal error', requestId: res.headers['x-request-id'] });
        expect((await send(`${url}/elsewhere`, 'GET')).status).toBe(418);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });
});
