/**
 * `IdentityClient.send`, the management API's calls: JSON both ways, the
 * service's error body kept whole, and retries only where repeating a call
 * cannot do it twice. Over real HTTP.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SswsAuthenticator } from './auth.js';
import { IdentityClient } from './client.js';
import { IdpReplyError } from './errors.js';
import { withPolicies } from './policies.js';
import { RateBudget } from './rate-limit.js';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

let server: Server | null = null;
afterEach(async () => {
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = null;
});

/** Serves `replies` in turn (the last one repeated) and records every request. */
async function serve(replies: Array<{ status: number; body?: string; headers?: Record<string, string> }>) {
  const seen: Seen[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const r = replies[Math.min(seen.length - 1, replies.length - 1)]!;
      res.writeHead(r.status, { 'content-type': 'application/json', ...r.headers });
      res.end(r.body ?? '');
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const fast = { initialMs: 1, multiplier: 1, maxMs: 1, retries: 3, jitter: 0 };
const client = (baseUrl: string) =>
  new IdentityClient({
    org: 'acme',
    baseUrl: `${baseUrl}/`,
    auth: new SswsAuthenticator('secret-token'),
    requestTimeoutMs: 5_000,
    policies: withPolicies({ management: fast, rateLimitedFallback: fast }),
  });
const budget = () => new RateBudget({ share: 1 });

describe('IdentityClient.send', () => {
  it('sends JSON with the credentials and gives the JSON reply back', async () => {
    const { url, seen } = await serve([{ status: 200, body: '{"id":"who1","status":"ACTIVE"}' }]);
    const reply = await client(url).send<{ id: string }>({
      method: 'POST',
      path: '/api/v1/eventHooks',
      body: { name: 'hooklog-main' },
      budget: budget(),
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ id: 'who1', status: 'ACTIVE' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe('POST');
    expect(seen[0]!.url).toBe('/api/v1/eventHooks');
    expect(seen[0]!.headers.authorization).toBe('SSWS secret-token');
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual({ name: 'hooklog-main' });
  });

  it("throws the service's error body whole: errorCode, summary and causes", async () => {
    const body = JSON.stringify({
      errorCode: 'E0000001',
      errorSummary: 'Api validation failed: channel.config.uri',
      errorCauses: [{ errorSummary: 'channel.config.uri: The URI must use HTTPS.' }],
    });
    const { url, seen } = await serve([{ status: 400, body }]);
    const err = await client(url)
      .send({ method: 'PUT', path: '/api/v1/eventHooks/who1', body: {}, budget: budget() })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdpReplyError);
    const e = err as IdpReplyError;
    expect(e.code).toBe('IDP_REQUEST_REJECTED');
    expect(e.status).toBe(400);
    expect(e.errorCode).toBe('E0000001');
    expect(e.serviceSays).toBe(
      'E0000001: Api validation failed: channel.config.uri (channel.config.uri: The URI must use HTTPS.)',
    );
    expect(seen).toHaveLength(1);
  });

  it('names what a 403 lacks', async () => {
    const { url } = await serve([{ status: 403, body: '{"errorCode":"E0000006","errorSummary":"no permission"}' }]);
    const err = (await client(url)
      .send({
        method: 'GET',
        path: '/api/v1/inlineHooks',
        budget: budget(),
        needs: 'the okta.inlineHooks.manage scope',
      })
      .catch((e: unknown) => e)) as IdpReplyError;
    expect(err.code).toBe('IDP_AUTH_FAILED');
    expect(err.message).toContain('needs the okta.inlineHooks.manage scope');
  });

  it('retries a 5xx of an idempotent call, but never repeats a POST unless told it is safe', async () => {
    const flaky = [{ status: 503, body: '{"errorCode":"E0000009"}' }, { status: 204 }];
    const put = await serve(flaky);
    const reply = await client(put.url).send({ method: 'DELETE', path: '/api/v1/users/u1/sessions', budget: budget() });
    expect(reply.status).toBe(204);
    expect(reply.body).toBeNull();
    expect(put.seen).toHaveLength(2);
    await new Promise((r) => server!.close(r));

    const post = await serve(flaky);
    const err = await client(post.url)
      .send({ method: 'POST', path: '/api/v1/users/u1/lifecycle/suspend', budget: budget() })
      .catch((e: unknown) => e);
    expect((err as IdpReplyError).code).toBe('IDP_UNAVAILABLE');
    expect(post.seen).toHaveLength(1);
    await new Promise((r) => server!.close(r));

    const safe = await serve(flaky);
    const ok = await client(safe.url).send({
      method: 'POST',
      path: '/security/api/v1/security-events',
      body: 'a.b.c',
      contentType: 'application/secevent+jwt',
      anonymous: true,
      retryUnsafe: true,
      budget: budget(),
    });
    expect(ok.status).toBe(204);
    expect(safe.seen).toHaveLength(2);
    expect(safe.seen[1]!.headers.authorization).toBeUndefined();
    expect(safe.seen[1]!.headers['content-type']).toBe('application/secevent+jwt');
    expect(safe.seen[1]!.body).toBe('a.b.c');
  });

  it('gives up on a transient failure after the policy’s retries', async () => {
    const { url, seen } = await serve([{ status: 500, body: '{}' }]);
    const err = await client(url)
      .send({ method: 'GET', path: '/api/v1/eventHooks', budget: budget() })
      .catch((e: unknown) => e);
    expect((err as IdpReplyError).code).toBe('IDP_UNAVAILABLE');
    expect(seen).toHaveLength(1 + fast.retries);
  });

  it('waits out a 429 (the call was not processed) and then succeeds, POST included', async () => {
    const reset = String(Math.floor(Date.now() / 1000));
    const { url, seen } = await serve([
      {
        status: 429,
        body: '{"errorCode":"E0000047"}',
        headers: { 'x-rate-limit-limit': '10', 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': reset },
      },
      { status: 200, body: '{"ok":true}' },
    ]);
    const reply = await client(url).send({ method: 'POST', path: '/api/v1/groups/g1/users', budget: budget() });
    expect(reply.body).toEqual({ ok: true });
    expect(seen).toHaveLength(2);
  });

  it('tells the caller of every request a call makes: retried, waited out, answered, or not answered at all', async () => {
    const reset = String(Math.floor(Date.now() / 1000));
    const { url, seen } = await serve([
      { status: 503, body: '{"errorCode":"E0000009"}' },
      { status: 429, body: '{"errorCode":"E0000047"}', headers: { 'x-rate-limit-reset': reset } },
      { status: 204 },
    ]);
    const heard: Array<number | string> = [];
    await client(url).send({
      method: 'DELETE',
      path: '/api/v1/users/u1/sessions',
      budget: budget(),
      onAttempt: (r) => heard.push(r),
    });
    expect(heard).toEqual([503, 429, 204]);
    expect(seen).toHaveLength(3);
    await new Promise((r) => server!.close(r));
    server = null;

    // Nobody listens there any more: each request fails without a reply, and the call gives up after the retries.
    const refused: Array<number | string> = [];
    const err = await client(url)
      .send({ method: 'GET', path: '/api/v1/eventHooks', budget: budget(), onAttempt: (r) => refused.push(r) })
      .catch((e: unknown) => e);
    expect((err as IdpReplyError).code).toBe('IDP_UNAVAILABLE');
    expect(refused).toEqual(Array.from({ length: 1 + fast.retries }, () => 'network'));
  });
});
