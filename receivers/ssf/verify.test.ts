/**
 * verifySet, pure: SETs signed with jose against a local key set, each refusal
 * with its RFC 8935 err, from a receiver config parsed as `hooklog start`
 * parses it. Key fetching and rotation over HTTP are in receiver.test files.
 */
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../cli/config/load.js';
import { KeysUnavailable } from './keys.js';
import { CAEP_SESSION_REVOKED } from './receiver-config.js';
import { verifySet, type SetVerdict } from './verify.js';

const ISS = 'https://acme.example.com';
const AUD = 'https://hooklog.example.com/hooks/ssf/acme';
const cfg = parseConfig({
  ssf_receivers: [
    { id: 'acme', org: 'acme', issuer: ISS, jwks_uri: `${ISS}/keys`, audience: AUD, clock_tolerance_s: 30 },
  ],
}).ssf_receivers[0]!;

let rsa: CryptoKey;
let other: CryptoKey;
let getKey: ReturnType<typeof createLocalJWKSet>;
const now = () => Math.floor(Date.now() / 1000);
const event = { [CAEP_SESSION_REVOKED]: { event_timestamp: 1_700_000_000, initiating_entity: 'admin' } };

beforeAll(async () => {
  const a = await generateKeyPair('RS256');
  const b = await generateKeyPair('ES256');
  const c = await generateKeyPair('RS256');
  rsa = a.privateKey;
  other = c.privateKey;
  const keys: JWK[] = [
    { ...(await exportJWK(a.publicKey)), kid: 'rsa-1', alg: 'RS256', use: 'sig' },
    { ...(await exportJWK(b.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' },
  ];
  getKey = createLocalJWKSet({ keys });
});

interface Forge {
  header?: Record<string, unknown>;
  claims?: Record<string, unknown>;
  key?: CryptoKey;
}
function sign(f: Forge = {}): Promise<string> {
  return new SignJWT({ iss: ISS, aud: AUD, iat: now(), jti: 'jti-1', events: event, ...f.claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1', typ: 'secevent+jwt', ...f.header } as { alg: string })
    .sign(f.key ?? rsa);
}
const unsecured = (header: object, claims: object) =>
  `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;

function expectRefused(v: SetVerdict, err: string): void {
  expect(v.ok).toBe(false);
  if (v.ok === false) expect(v.err).toBe(err);
}

describe('verifySet', () => {
  it('accepts a SET signed by a published key, with its claims', async () => {
    const v = await verifySet(await sign(), cfg, getKey);
    expect(v.ok).toBe(true);
    if (v.ok === true) {
      expect(v.claims.jti).toBe('jti-1');
      expect(v.claims.events).toEqual(event);
      expect([v.alg, v.kid]).toEqual(['RS256', 'rsa-1']);
    }
    // typ as a full media type is the same type.
    expect((await verifySet(await sign({ header: { typ: 'application/secevent+jwt' } }), cfg, getKey)).ok).toBe(true);
  });

  it('refuses a wrong signature: authentication_failed', async () => {
    const a = await sign();
    const b = await sign({ claims: { jti: 'jti-2' } });
    const spliced = `${a.split('.').slice(0, 2).join('.')}.${b.split('.')[2]}`;
    expectRefused(await verifySet(spliced, cfg, getKey), 'authentication_failed');
    expectRefused(await verifySet(await sign({ key: other }), cfg, getKey), 'authentication_failed');
  });

  it('refuses an unknown kid and an ambiguous kid-less SET: invalid_key', async () => {
    expectRefused(await verifySet(await sign({ header: { kid: 'nope' } }), cfg, getKey), 'invalid_key');
  });

  it('refuses alg none, HMAC and algorithms outside the allow-list before any key lookup: invalid_key', async () => {
    let lookups = 0;
    const counting: typeof getKey = Object.assign(
      (h: Parameters<typeof getKey>[0], t: Parameters<typeof getKey>[1]) => {
        lookups++;
        return getKey(h, t);
      },
      getKey,
    );
    const claims = { iss: ISS, aud: AUD, iat: now(), jti: 'n', events: event };
    expectRefused(
      await verifySet(unsecured({ alg: 'none', typ: 'secevent+jwt' }, claims), cfg, counting),
      'invalid_key',
    );
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'secevent+jwt' })
      .sign(new TextEncoder().encode('a-shared-secret-of-32-bytes-long!'));
    expectRefused(await verifySet(hs, cfg, counting), 'invalid_key');
    const ps = parseConfig({
      ssf_receivers: [{ ...cfg, algorithms: ['ES256'] }],
    }).ssf_receivers[0]!;
    expectRefused(await verifySet(await sign(), ps, counting), 'invalid_key');
    expect(lookups).toBe(0);
  });

  it('refuses a wrong iss (invalid_issuer) and a wrong or missing aud (invalid_audience)', async () => {
    expectRefused(
      await verifySet(await sign({ claims: { iss: 'https://evil.example.com' } }), cfg, getKey),
      'invalid_issuer',
    );
    expectRefused(
      await verifySet(await sign({ claims: { aud: 'https://elsewhere' } }), cfg, getKey),
      'invalid_audience',
    );
    expectRefused(await verifySet(await sign({ claims: { aud: undefined } }), cfg, getKey), 'invalid_audience');
  });

  it('refuses what is not a SET: invalid_request', async () => {
    expectRefused(await verifySet(await sign({ header: { typ: 'JWT' } }), cfg, getKey), 'invalid_request');
    expectRefused(await verifySet(await sign({ header: { typ: undefined } }), cfg, getKey), 'invalid_request');
    expectRefused(await verifySet('not a token', cfg, getKey), 'invalid_request');
    expectRefused(await verifySet('a.b.c.d.e', cfg, getKey), 'invalid_request');
    expectRefused(await verifySet('e30.e30.', cfg, getKey), 'invalid_request');
    expectRefused(await verifySet(await sign({ claims: { events: undefined } }), cfg, getKey), 'invalid_request');
    expectRefused(await verifySet(await sign({ claims: { events: {} } }), cfg, getKey), 'invalid_request');
    expectRefused(
      await verifySet(await sign({ claims: { events: { [CAEP_SESSION_REVOKED]: 7 } } }), cfg, getKey),
      'invalid_request',
    );
    expectRefused(await verifySet(await sign({ claims: { jti: undefined } }), cfg, getKey), 'invalid_request');
    expectRefused(await verifySet(await sign({ claims: { jti: 'x'.repeat(257) } }), cfg, getKey), 'invalid_request');
  });

  it('checks iat and exp with the stated clock tolerance: invalid_request outside it', async () => {
    expectRefused(await verifySet(await sign({ claims: { iat: undefined } }), cfg, getKey), 'invalid_request');
    expect((await verifySet(await sign({ claims: { iat: now() + 20 } }), cfg, getKey)).ok).toBe(true);
    expectRefused(await verifySet(await sign({ claims: { iat: now() + 90 } }), cfg, getKey), 'invalid_request');
    expect((await verifySet(await sign({ claims: { exp: now() - 20 } }), cfg, getKey)).ok).toBe(true);
    expectRefused(await verifySet(await sign({ claims: { exp: now() - 90 } }), cfg, getKey), 'invalid_request');
    const old = now() - cfg.max_age_s - 60;
    expectRefused(await verifySet(await sign({ claims: { iat: old } }), cfg, getKey), 'invalid_request');
  });

  it('refuses an event type the receiver does not accept: access_denied', async () => {
    const risc = { 'https://schemas.openid.net/secevent/risc/event-type/account-disabled': {} };
    expectRefused(await verifySet(await sign({ claims: { events: risc } }), cfg, getKey), 'access_denied');
  });

  it('calls unavailable keys an outage, not a refusal', async () => {
    const down = () => Promise.reject(new KeysUnavailable('key endpoint answered 503'));
    const v = await verifySet(await sign(), cfg, down);
    expect(v).toEqual({ ok: 'unavailable', why: 'key endpoint answered 503' });
  });
});
