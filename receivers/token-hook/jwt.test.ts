/**
 * OAuth 2.0 bearer JWT authentication over real HTTP: the hooklog app on
 * 127.0.0.1, keys generated with jose and published by a local JWKS server
 * that the tests rotate, slow down and take down. Every refusal is a 401 with
 * the same body; the reason counted proves which check refused it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SignJWT,
  base64url,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose';
import { silentLogger } from '../../platform/log.js';
import { openEmbeddedStream, type EmbeddedStream } from '../../platform/stream/embedded/index.js';
import { waitFor } from '../../test/support/wait.js';
import { configWith, freshDir, hookEntry, postToken, sampleRequest, startApp, type RunningApp } from './testing.js';

const log = silentLogger();
const AUDIENCE = 'api://hooklog';
const SCOPE = 'hooklog.tokenhook';

/** A key endpoint on 127.0.0.1 whose key set, speed and availability the test controls. */
class JwksServer {
  keys: JWK[] = [];
  hits = 0;
  hang = false;
  readonly #server: Server;

  constructor() {
    this.#server = createServer((req, res) => {
      this.hits++;
      if (this.hang) return; // never answers: the client's time-out must end the wait
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: this.keys }));
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/oauth2/default`;
  }

  down(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

interface Key {
  readonly kid: string;
  readonly alg: 'RS256' | 'ES256';
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

async function makeKey(kid: string, alg: 'RS256' | 'ES256'): Promise<Key & { publicKey: CryptoKey }> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

const dir = freshDir('token-jwt');
let stream: EmbeddedStream;
let jwks: JwksServer;
let issuer: string;
let app: RunningApp;
let keyA: Key & { publicKey: CryptoKey };
let keyEc: Key;
let keyB: Key;

function sign(
  key: Pick<Key, 'kid' | 'alg' | 'privateKey'>,
  over: JWTPayload = {},
  opts: { exp?: number | null; iss?: string; aud?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ scp: [SCOPE, 'other'], cid: 'okta-hook-client', ...over })
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .setIssuer(opts.iss ?? issuer)
    .setAudience(opts.aud ?? AUDIENCE)
    .setIssuedAt(now);
  if (opts.exp !== null) jwt.setExpirationTime(opts.exp ?? now + 300);
  return jwt.sign(key.privateKey);
}

async function post(token: string | undefined, hookId = 'th') {
  return postToken(app.url, sampleRequest(), token === undefined ? {} : { authorization: `Bearer ${token}` }, hookId);
}

const counters = (hookId = 'th') => app.hooks.get(hookId)!.telemetry.counters;

async function expectRefused(token: string | undefined, reason: string, hookId = 'th') {
  const before = counters(hookId).authFailures[reason as 'expired'] ?? 0;
  const res = await post(token, hookId);
  expect(res).toEqual({ status: 401, json: { error: 'unauthorized' } });
  expect(counters(hookId).authFailures[reason as 'expired']).toBe(before + 1);
}

beforeAll(async () => {
  stream = await openEmbeddedStream({ dataDir: dir, logger: log });
  jwks = new JwksServer();
  issuer = await jwks.listen();
  [keyA, keyEc, keyB] = await Promise.all([
    makeKey('key-a', 'RS256'),
    makeKey('key-ec', 'ES256'),
    makeKey('key-b', 'RS256'),
  ]);
  jwks.keys = [keyA.jwk, keyEc.jwk];
  const oauth = (over: Record<string, unknown> = {}) => ({
    type: 'oauth',
    issuer,
    audience: AUDIENCE,
    scope: SCOPE,
    algorithms: ['RS256', 'ES256'],
    clock_tolerance_s: 5,
    jwks_min_refresh_interval_ms: 400,
    jwks_timeout_ms: 300,
    ...over,
  });
  const rules = [{ name: 'tag', actions: [{ add: { tokens: 'id', claim: 'verified', value: true } }] }];
  app = await startApp(
    configWith([
      hookEntry(rules, { auth: oauth() }),
      hookEntry(rules, { id: 'slow-keys', auth: oauth({ jwks_min_refresh_interval_ms: 3_600_000 }) }),
    ]),
    stream,
    log,
  );
});

afterAll(async () => {
  await app?.close();
  await jwks?.down().catch(() => undefined);
  await stream?.close();
});

describe('bearer JWT verification', () => {
  it('accepts a valid RS256 token and a valid ES256 token, answering the rules', async () => {
    for (const key of [keyA, keyEc]) {
      const res = await post(await sign(key));
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        commands: [{ type: 'com.okta.identity.patch', value: [{ op: 'add', path: '/claims/verified', value: true }] }],
      });
    }
    // scp as a space-separated string, and an exp just past but within the clock tolerance.
    expect((await post(await sign(keyA, { scp: `openid ${SCOPE}` }))).status).toBe(200);
    expect((await post(await sign(keyA, {}, { exp: Math.floor(Date.now() / 1000) - 2 }))).status).toBe(200);
  });

  it('refuses expired, not yet valid and exp-less tokens', async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused(await sign(keyA, {}, { exp: now - 60 }), 'expired');
    await expectRefused(await sign(keyA, { nbf: now + 60 }), 'not_yet_valid');
    await expectRefused(await sign(keyA, {}, { exp: null }), 'claims');
  });

  it('refuses a wrong issuer, a wrong audience and a missing scope', async () => {
    await expectRefused(await sign(keyA, {}, { iss: 'https://evil.example.com/oauth2/default' }), 'issuer');
    await expectRefused(await sign(keyA, {}, { aud: 'api://someone-else' }), 'audience');
    await expectRefused(await sign(keyA, { scp: ['openid', 'profile'] }), 'scope');
    await expectRefused(await sign(keyA, { scp: undefined }), 'scope');
  });

  it('refuses alg none, and an HS256 token "signed" with the RSA public key as the secret', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: issuer, aud: AUDIENCE, scp: [SCOPE], iat: now, exp: now + 300 };
    const unsecured = `${base64url.encode(JSON.stringify({ alg: 'none', kid: 'key-a' }))}.${base64url.encode(JSON.stringify(claims))}.`;
    await expectRefused(unsecured, 'algorithm');
    const pem = await exportSPKI(keyA.publicKey);
    const confused = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid: 'key-a' })
      .sign(new TextEncoder().encode(pem));
    await expectRefused(confused, 'algorithm');
    const hitsBefore = jwks.hits;
    await expectRefused(confused, 'algorithm');
    expect(jwks.hits).toBe(hitsBefore); // refused before any key lookup
  });

  it('refuses a token whose signature does not match the key its kid names, and malformed headers', async () => {
    const forged = await sign({ kid: 'key-a', alg: 'RS256', privateKey: keyB.privateKey });
    await expectRefused(forged, 'signature');
    await expectRefused(undefined, 'missing');
    const res = await postToken(app.url, sampleRequest(), { authorization: 'Basic dXNlcjpwYXNz' });
    expect(res.status).toBe(401);
    await expectRefused('not.a.jwt', 'malformed');
  });

  it('an unknown kid refetches the keys (rate-limited: a flood costs one fetch); after a rotation the new key verifies', async () => {
    const tokenB = await sign(keyB);
    const floodTokens = await Promise.all(Array.from({ length: 40 }, (_, i) => sign({ ...keyB, kid: `made-up-${i}` })));
    const before = jwks.hits;
    const started = performance.now();
    const flood = await Promise.all(floodTokens.map((t) => post(t)));
    const windows = Math.floor((performance.now() - started) / 400) + 1; // at most one fetch per 400 ms window
    expect(flood.every((r) => r.status === 401)).toBe(true);
    expect(jwks.hits - before).toBeLessThanOrEqual(windows);
    expect(windows).toBeLessThan(40);

    jwks.keys = [keyA.jwk, keyEc.jwk, keyB.jwk]; // the issuer rotates in key B
    await waitFor(async () => (await post(tokenB)).status, {
      until: (n) => n === 200,
      what: 'key B accepted after the rotation',
      timeoutMs: 5000,
      intervalMs: 100,
    });
    expect(jwks.hits - before).toBeLessThanOrEqual(20);
    // Key B now sits in the cache: no fetch per request.
    const settled = jwks.hits;
    for (let i = 0; i < 5; i++) expect((await post(tokenB)).status).toBe(200);
    expect(jwks.hits).toBe(settled);

    // A hook whose minimum refresh interval has not passed keeps refusing the new kid without fetching.
    const slowHits = jwks.hits;
    const throttled = counters('slow-keys').jwksThrottled;
    await expectRefused(tokenB, 'unknown_key', 'slow-keys');
    expect(jwks.hits).toBe(slowHits);
    expect(counters('slow-keys').jwksThrottled).toBe(throttled + 1);
  });

  it('a key endpoint that hangs or is down costs a bounded wait; keys already cached keep verifying', async () => {
    const unknown = await sign({ ...keyB, kid: 'brand-new' });
    jwks.hang = true;
    const failures = counters().errors.jwks_fetch;
    await waitFor(
      async () => {
        const started = performance.now();
        await expectRefused(unknown, 'unknown_key');
        expect(performance.now() - started).toBeLessThan(1500); // 300 ms fetch time-out, well inside the service's 3 s
        return counters().errors.jwks_fetch > failures;
      },
      {
        what: 'a timed-out key fetch',
        seen: () => ({ 'failed key fetches': counters().errors.jwks_fetch, before: failures }),
        timeoutMs: 5000,
        intervalMs: 100,
      },
    );
    jwks.hang = false;

    await jwks.down();
    const downFailures = counters().errors.jwks_fetch;
    await waitFor(
      async () => {
        await expectRefused(unknown, 'unknown_key');
        return counters().errors.jwks_fetch > downFailures;
      },
      {
        what: 'a failed key fetch',
        seen: () => ({ 'failed key fetches': counters().errors.jwks_fetch, before: downFailures }),
        timeoutMs: 5000,
        intervalMs: 100,
      },
    );
    expect((await post(await sign(keyA))).status).toBe(200);
    expect((await post(await sign(keyB))).status).toBe(200);
  });
});
