/**
 * SETs as the org verifies them: a risk change becomes a compact JWS with
 * typ secevent+jwt, signed by the configured key (kid in the header, the public
 * half in the JWKS), carrying the vendor's user-risk-change event; the jti is
 * stable per (org, change).
 */
import { generateKeyPairSync } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, exportJWK, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { HooklogError } from '../../platform/errors.js';
import { USER_RISK_CHANGE } from './config.js';
import { setClaims, setJti } from './set.js';
import { loadSetSigner } from './signer.js';
import { responseConfig, riskChange, TEST_SET_KEY } from './testing.js';

const ORG = { id: 'acme', url: 'https://acme.example.test' };

function ctx(settings: Record<string, unknown> = {}) {
  const c = responseConfig([ORG], { orgs: [{ org: 'acme', security_events: settings }] });
  return {
    config: c.response!,
    set: {
      issuer: c.response!.transmitter!.issuer,
      eventType: c.response!.transmitter!.event_type,
      orgUrl: ORG.url,
      settings: c.response!.orgs[0]!.security_events,
    },
  };
}

describe('a risk change as a SET', () => {
  it('is signed with typ secevent+jwt and verifies against the published JWKS, with the event the vendor expects', async () => {
    const { config, set } = ctx();
    const signer = await loadSetSigner(config.transmitter!);
    const change = riskChange('acme', { id: '00u1', login: 'ann@acme.test' }, 'none', 'high');
    const claims = setClaims(change, set, Date.parse('2026-03-01T10:00:00Z'))!;
    const token = await signer.sign(claims);
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'RS256', kid: signer.kid, typ: 'secevent+jwt' });
    const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: [...signer.jwks.keys] }), {
      typ: 'secevent+jwt',
      issuer: 'https://hooklog.example.test',
      audience: ORG.url,
      algorithms: ['RS256'],
    });
    expect(payload.jti).toBe(setJti('acme', change.change_id));
    expect(payload.iat).toBe(Date.parse('2026-03-01T10:00:00Z') / 1000);
    expect(payload.events).toEqual({
      [USER_RISK_CHANGE]: {
        subject: { user: { format: 'email', email: 'ann@acme.test' } },
        current_level: 'high',
        previous_level: 'low',
        event_timestamp: Math.floor(Date.parse(change.at) / 1000),
        initiating_entity: 'policy',
        reason_admin: { en: change.reason },
        reason_user: { en: 'Unusual activity was detected on your account.' },
      },
    });
    // The public half only, with its kid and use.
    expect(signer.jwks.keys[0]).toMatchObject({ kty: 'RSA', kid: signer.kid, alg: 'RS256', use: 'sig' });
    expect(signer.jwks.keys[0]).not.toHaveProperty('d');
  });

  it('derives the jti from the org and the change only', () => {
    const { set } = ctx();
    const a = riskChange('acme', { id: '00u1' }, 'none', 'high');
    expect(setClaims(a, set, 1)!.jti).toBe(setClaims(a, set, 999_999)!.jti);
    expect(setJti('acme', a.change_id)).not.toBe(setJti('other', a.change_id));
    const b = riskChange('acme', { id: '00u1' }, 'high', 'none');
    expect(setClaims(b, set, 1)!.jti).not.toBe(setClaims(a, set, 1)!.jti);
  });

  it("maps none to the vendor's low, and sends nothing when the vendor would see no change", () => {
    const { set } = ctx();
    const lowered = setClaims(riskChange('acme', { id: '00u1' }, 'high', 'none'), set, 1)!;
    expect(lowered.events[USER_RISK_CHANGE]).toMatchObject({ previous_level: 'high', current_level: 'low' });
    expect(setClaims(riskChange('acme', { id: '00u1' }, 'none', 'low'), set, 1)).toBeNull();
    expect(setClaims(riskChange('acme', { id: '00u1' }, 'low', 'none'), set, 1)).toBeNull();
  });

  it('names the user by iss_sub when asked, or when the login is unknown', () => {
    const known = riskChange('acme', { id: '00u1', login: 'ann@acme.test' }, 'none', 'medium');
    const unknown = riskChange('acme', { id: '00u2' }, 'none', 'medium');
    const bySub = { format: 'iss_sub', iss: ORG.url, sub: '00u1' };
    expect(setClaims(known, ctx({ subject: 'iss_sub' }).set, 1)!.events[USER_RISK_CHANGE]!.subject.user).toEqual(bySub);
    expect(setClaims(unknown, ctx().set, 1)!.events[USER_RISK_CHANGE]!.subject.user).toEqual({ ...bySub, sub: '00u2' });
    expect(setClaims(known, ctx({ audience: 'https://aud.test' }).set, 1)!.aud).toBe('https://aud.test');
  });

  it('takes an EC key (ES256), names the kid by thumbprint when none is configured, and publishes extra public keys', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const old = { ...(await exportJWK(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey)), kid: 'old-1' };
    const pem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const c = responseConfig([ORG], {
      transmitter: { issuer: 'https://h.test', private_key: pem, additional_public_keys: [JSON.stringify(old)] },
    });
    const signer = await loadSetSigner(c.response!.transmitter!);
    expect(signer.alg).toBe('ES256');
    expect(signer.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signer.jwks.keys.map((k) => k.kid)).toEqual([signer.kid, 'old-1']);
    const again = await loadSetSigner(c.response!.transmitter!);
    expect(again.kid).toBe(signer.kid);
  });

  it('refuses a private key among the published ones, naming the config key', async () => {
    const priv = await exportJWK(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
    const c = responseConfig([ORG], {
      transmitter: {
        issuer: 'https://h.test',
        private_key: TEST_SET_KEY,
        additional_public_keys: [JSON.stringify({ ...priv, kid: 'x' })],
      },
    });
    const err = await loadSetSigner(c.response!.transmitter!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HooklogError);
    expect((err as Error).message).toContain('response.transmitter.additional_public_keys[0]: holds a private key');
  });
});
