/**
 * The simulated org's OIDC module keeps refresh tokens to the contract: one
 * only for `offline_access` and a client allowed the refresh_token grant;
 * rotation on every refresh with a grace period, reuse after it revoking the
 * family (and recorded as the client's violation); no scope beyond the
 * original; a removed user refused; the refreshed ID token carries the groups
 * as they are now and no nonce.
 */
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcSignIn, ROTATION_GRACE_MS } from './oidc.js';
import { SimulatedOrg } from './server.js';

const REDIRECT = 'http://127.0.0.1:1/cb';
let clock = Date.parse('2026-11-29T00:00:00Z');
let org: SimulatedOrg;
let oidc: OidcSignIn;

beforeAll(async () => {
  oidc = new OidcSignIn(
    [
      { clientId: 'web', redirectUris: [REDIRECT] },
      { clientId: 'no-refresh', redirectUris: [REDIRECT], grantTypes: ['authorization_code'] },
    ],
    [{ login: 'ann@x.example', password: 'pw', groups: ['g1'] }],
  );
  org = (await SimulatedOrg.start({ now: () => clock })).use(oidc);
});
afterAll(async () => {
  await org?.stop();
});

type Tokens = { id_token?: string; refresh_token?: string; error?: string };

/** The code flow by hand: authorize, the login form, the code for tokens. */
async function signIn(clientId: string, scope: string): Promise<Tokens> {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL('/oauth2/v1/authorize', org.url);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope,
    state: 's',
    nonce: 'n-1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  const txn = /name="txn" value="([^"]+)"/.exec(await (await fetch(authorize)).text())![1]!;
  const back = await fetch(new URL('/oauth2/v1/authorize/login', org.url), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ txn, username: 'ann@x.example', password: 'pw' }),
  });
  const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
  return token({
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    client_id: clientId,
    code_verifier: verifier,
  });
}

async function token(form: Record<string, string>): Promise<Tokens & { status: number }> {
  const res = await fetch(new URL('/oauth2/v1/token', org.url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: res.status, ...((await res.json()) as Tokens) };
}

const refresh = (rt: string, extra: Record<string, string> = {}) =>
  token({ grant_type: 'refresh_token', refresh_token: rt, client_id: 'web', ...extra });

describe('simulated OIDC refresh tokens', () => {
  it('gives one only for offline_access, to a client allowed the refresh grant', async () => {
    expect((await signIn('web', 'openid groups')).refresh_token).toBeUndefined();
    expect((await signIn('no-refresh', 'openid groups offline_access')).refresh_token).toBeUndefined();
    expect((await signIn('web', 'openid groups offline_access')).refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('rotates, carries the groups as they are now without a nonce, and keeps to scope, grace and the user', async () => {
    const first = await signIn('web', 'openid groups offline_access');
    expect(decodeJwt(first.id_token!)).toMatchObject({ nonce: 'n-1', groups: ['g1'] });
    oidc.setGroups('ann@x.example', ['g2']);
    const second = await refresh(first.refresh_token!);
    expect(second.status).toBe(200);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const claims = decodeJwt(second.id_token!);
    expect(claims.groups).toEqual(['g2']);
    expect(claims.nonce).toBeUndefined();
    expect(claims.sub).toBe(decodeJwt(first.id_token!).sub);

    // More scope than granted: refused.
    expect(
      await refresh(second.refresh_token!, { scope: 'openid groups offline_access okta.users.manage' }),
    ).toMatchObject({
      status: 400,
      error: 'invalid_scope',
    });
    // The replaced token still works within the grace period (parallel requests of one client)...
    clock += ROTATION_GRACE_MS - 1000;
    expect((await refresh(first.refresh_token!)).status).toBe(200);
    // ...and after it, its reuse revokes the whole family: the newest token too.
    clock += 2000;
    const violations = org.violations.length;
    expect(await refresh(first.refresh_token!)).toMatchObject({ status: 400, error: 'invalid_grant' });
    expect(org.violations.slice(violations)).toEqual([
      '400 POST /oauth2/v1/token {}: token: refresh token reused after its rotation grace period',
    ]);
    expect(await refresh(second.refresh_token!)).toMatchObject({ status: 400, error: 'invalid_grant' });

    // A removed user's refresh token is refused.
    const third = await signIn('web', 'openid groups offline_access');
    oidc.removeUser('ann@x.example');
    expect(await refresh(third.refresh_token!)).toMatchObject({ status: 400, error: 'invalid_grant' });
    // Another client may not use it.
    expect(await refresh(third.refresh_token!, { client_id: 'no-refresh' })).toMatchObject({
      status: 400,
      error: 'unauthorized_client',
    });
  });
});
