/**
 * The token-hook route is served in front of Koa (routes.ts, tokenHookFastPath):
 * it must do what the app's middleware does for it — a request id echoed in
 * x-request-id, a JSON 500 naming the request id when something throws — and
 * leave every other request, odd URLs included, to Koa.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { tokenHookFastPath } from './routes.js';
import type { TokenHooks } from './service.js';
import { HOOK_SECRET, configWith, freshDir, hookEntry, startApp, type RunningApp } from './testing.js';

const log = silentLogger();
const dir = freshDir('token-fast-path');
let stream: EmbeddedStream;
let app: RunningApp;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

beforeAll(async () => {
  stream = await openEmbeddedStream({ dataDir: dir, logger: log });
  app = await startApp(
    configWith([hookEntry([{ name: 'r', actions: [{ add: { tokens: 'id', claim: 'x', value: 1 } }] }])]),
    stream,
    log,
  );
});
afterAll(async () => {
  await app?.close();
  await stream?.close();
});

const post = (path: string, body = '{}', headers: Record<string, string> = { authorization: HOOK_SECRET }) =>
  fetch(`${app.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(3000),
  });

describe('token hook fast path', () => {
  it('answers with a request id and JSON, for the plain path, a trailing slash, a query and an escaped id', async () => {
    for (const path of ['/hooks/token/th', '/hooks/token/th/', '/hooks/token/th?x=1', '/hooks/token/%74h']) {
      const res = await post(path);
      expect(res.status, path).toBe(400); // reached the hook: `{}` is not a token request
      expect(res.headers.get('x-request-id'), path).toMatch(UUID);
      expect(res.headers.get('content-type'), path).toBe('application/json; charset=utf-8');
      expect(((await res.json()) as { error: string }).error, path).toMatch(/eventType/);
    }
  });

  it('refuses as the Koa route did: 401 for an unknown hook or a wrong secret, 415 for another type', async () => {
    const unknown = await post('/hooks/token/nope');
    expect([unknown.status, await unknown.json()]).toEqual([401, { error: 'unauthorized' }]);
    const wrong = await post('/hooks/token/th', '{}', { authorization: 'wrong' });
    expect([wrong.status, await wrong.json()]).toEqual([401, { error: 'unauthorized' }]);
    const text = await fetch(`${app.url}/hooks/token/th`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', authorization: HOOK_SECRET },
      body: '{}',
    });
    expect(text.status).toBe(415);
    expect(text.headers.get('x-request-id')).toMatch(UUID);
  });

  it('leaves other methods and paths to Koa', async () => {
    const get = await fetch(`${app.url}/hooks/token/th`);
    expect(get.status).toBe(405); // the router's allowedMethods
    expect(get.headers.get('x-request-id')).toMatch(UUID); // Koa's own request-id middleware
    const deeper = await post('/hooks/token/th/extra');
    expect(deeper.status).toBe(404);
  });

  it('answers 500 with the request id when the handler throws', async () => {
    const broken: TokenHooks = {
      get: () => {
        throw new Error('boom');
      },
      logger: log,
      stop: async () => undefined,
    };
    const fast = tokenHookFastPath(broken, { trustProxy: false, log });
    const server: Server = createServer((req, res) => {
      if (!fast(req, res)) res.writeHead(418).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await fetch(`${url}/hooks/token/th`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      const body = (await res.json()) as { error: string; requestId: string };
      expect(res.status).toBe(500);
      expect(body).toEqual({ error: 'internal error', requestId: res.headers.get('x-request-id') });
      expect((await fetch(`${url}/elsewhere`)).status).toBe(418);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
