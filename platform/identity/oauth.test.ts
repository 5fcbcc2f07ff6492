/**
 * OAuth 2.0 private_key_jwt against the simulated org's authorization server:
 * a token is fetched, reused, renewed before it expires (and after a
 * revocation), DPoP proofs with nonces are accepted, and a key the org does
 * not know gives one clear error.
 */
import { generateKeyPairSync } from 'node:crypto';
import { exportJWK, type JWK } from 'jose';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  capturingLogger,
  Collector,
  duplicates,
  FAST_POLICIES,
  openTestStream,
  orgConfig,
  type TestStream,
} from '../../test/simulated-org/harness.js';
import { history, logEvent, SimulatedOrg } from '../../test/simulated-org/index.js';
import { waitFor } from '../../test/support/wait.js';
import { startIngest, type Ingest } from '../../ingest/index.js';
import { loadSigningKey } from './keys.js';
import { OAuthAuthenticator, renewMarginMs } from './oauth.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = (k: typeof rsa) => k.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
let jwks: JWK[];

beforeAll(async () => {
  jwks = [
    { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1' },
    { ...(await exportJWK(ec.publicKey)), kid: 'ec-1' },
  ];
});

describe('OAuth 2.0 client credentials with private_key_jwt', () => {
  let sim: SimulatedOrg | undefined;
  let ts: TestStream | undefined;
  let ingest: Ingest | undefined;
  let collector: Collector | undefined;
  afterEach(async () => {
    await ingest?.stop();
    ingest = undefined;
    await collector?.stop();
    await sim?.stop();
    await ts?.close();
  });

  async function run(
    client: { dpop?: boolean; requireNonce?: boolean },
    auth: Record<string, unknown>,
    tokenLifetimeS = 3600,
  ) {
    sim = await SimulatedOrg.start({
      rateLimit: { logs: false },
      auth: { clients: [{ clientId: 'app', jwks, scopes: ['okta.logs.read'], ...client }], tokenLifetimeS },
    });
    ts = await openTestStream();
    collector = await Collector.start(ts.stream, ts.topics.logs);
    const { logger, lines } = capturingLogger();
    const org = orgConfig(sim, {
      auth: { oauth: { client_id: 'app', ...auth } },
      system_log: { start: '3d', poll_interval_ms: 100 },
    });
    ingest = await startIngest({ orgs: [org], stream: ts.stream, topics: ts.topics, logger, policies: FAST_POLICIES });
    return { lines, handle: ingest.pollers[0]! };
  }

  it('fetches one token, reuses it for every request, and renews it shortly before it expires', async () => {
    const { lines } = await run({}, { private_key: pem(rsa), key_id: 'rsa-1' }, 2);
    sim!.addLogEvents(history({ count: 3_000, days: 2, now: Date.now(), kind: 'log' }));
    await waitFor(() => collector!.records.length, { until: (n) => n >= 3_000, what: 'events' });
    expect(sim!.auth.stats.tokensIssued).toBe(1);
    const [uses] = [...sim!.auth.stats.usesByToken.values()];
    expect(uses).toBeGreaterThanOrEqual(4);
    // Lifetime 2 s (renew margin 200 ms): polling every 100 ms keeps going on a renewed token, never an expired one.
    await waitFor(() => sim!.auth.stats.tokensIssued, { until: (n) => n >= 3, what: 'two renewals', timeoutMs: 8_000 });
    sim!.addLogEvents([{ event: logEvent(0), published: Date.now() }]);
    await waitFor(() => collector!.records.length, {
      until: (n) => n === 3_001,
      what: 'an event on the renewed token',
    });
    expect(sim!.violations).toEqual([]);
    expect(
      lines()
        .filter((l) => l.msg === 'oauth_token_obtained')
        .map((l) => l.renewal),
    ).toEqual(expect.arrayContaining([false, true]));
    expect(renewMarginMs(3_600_000)).toBe(60_000);
  });

  it('renews once when the service revokes the token (401), and carries on', async () => {
    await run({}, { private_key: pem(rsa), key_id: 'rsa-1' });
    sim!.addLogEvents([{ event: logEvent(0), published: Date.now() }]);
    await waitFor(() => collector!.records.length, { until: (n) => n === 1, what: 'first event' });
    sim!.auth.revokeAll();
    sim!.addLogEvents([{ event: logEvent(1), published: Date.now() }]);
    await waitFor(() => collector!.records.length, { until: (n) => n === 2, what: 'event after revocation' });
    expect(sim!.auth.stats.tokensIssued).toBe(2);
    expect(sim!.violations.filter((v) => !v.includes('revoked'))).toEqual([]);
    expect(sim!.violations).toHaveLength(1); // the one request made with the revoked token
  });

  it('binds tokens with DPoP (EC key from a JWK), answering the nonce demands of both servers', async () => {
    const jwk = JSON.stringify({ ...ec.privateKey.export({ format: 'jwk' }), kid: 'ec-1' });
    await run({ dpop: true, requireNonce: true }, { private_key: jwk, dpop: true });
    sim!.addLogEvents(history({ count: 2_500, days: 2, now: Date.now(), kind: 'log' }));
    await waitFor(() => collector!.records.length, { until: (n) => n >= 2_500, what: 'events over DPoP' });
    expect(duplicates(collector!.ids('uuid'))).toEqual([]);
    expect(sim!.auth.stats.tokensIssued).toBe(1);
    expect(sim!.auth.stats.nonceChallenges).toBeGreaterThanOrEqual(2); // token endpoint and resource server
    sim!.auth.rotateNonce();
    sim!.addLogEvents([{ event: logEvent(0), published: Date.now() }]);
    await waitFor(() => collector!.records.length, {
      until: (n) => n >= 2_501,
      what: 'an event after the nonce rotated',
    });
    expect(sim!.violations).toEqual([]);
  });

  it('a key the org does not know: one clear error naming client and kid, then slow retries', async () => {
    const { lines, handle } = await run({}, { private_key: pem(stranger), key_id: 'rsa-1' });
    await waitFor(() => handle.health().blocked, {
      until: (n) => n >= 2,
      what: 'two blocked attempts',
      timeoutMs: 5_000,
    });
    const errors = lines().filter((l) => l.msg === 'poller_blocked');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'IDP_AUTH_FAILED' });
    expect((errors[0]!.err as { message: string }).message).toMatch(
      /refused the client assertion \(401 invalid_client.*client_id "app".*kid "rsa-1".*RS256/,
    );
    // Slow retries (400 ms, then 800 ms in tests), not a hot loop on the token endpoint.
    expect(sim!.auth.stats.tokenRequests).toBeLessThanOrEqual(4);
    expect(sim!.requests.filter((r) => r.path === '/api/v1/logs')).toHaveLength(0);
  });

  it('the authenticator alone: wrong kid refused, a signing key that cannot sign refused at load', async () => {
    sim = await SimulatedOrg.start({ auth: { clients: [{ clientId: 'app', jwks, scopes: ['okta.logs.read'] }] } });
    const auth = (kid: string, scopes = ['okta.logs.read']) =>
      new OAuthAuthenticator({
        org: 'acme',
        tokenUrl: sim!.tokenUrl,
        clientId: 'app',
        key: loadSigningKey(pem(rsa), { kid }, 'k'),
        scopes,
        dpop: null,
        timeoutMs: 5_000,
      });
    await expect(auth('nope').token()).rejects.toThrow(/refused the client assertion/);
    await expect(auth('rsa-1', ['okta.users.read']).token()).rejects.toThrow(
      /grant the service app the scopes okta\.users\.read/,
    );
    const ok = auth('rsa-1');
    const t = await ok.token();
    expect(await ok.token()).toBe(t);
    expect(ok.fetches).toBe(1);
    expect(() =>
      loadSigningKey(
        '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----',
        { kid: 'x' },
        'orgs[acme].auth.oauth.private_key',
      ),
    ).toThrow(/orgs\[acme\]\.auth\.oauth\.private_key: not a usable private key/);
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(() => loadSigningKey(ed, { kid: 'x' }, 'k')).toThrow(/ed25519 keys are not accepted/);
  });
});
