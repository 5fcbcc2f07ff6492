/**
 * The transmitter's signing key, loaded once at start (a key that cannot sign
 * fails the boot naming the config key), and the public keys hooklog serves as
 * its JWKS. Signing is jose's `CompactSign` over the claims' bytes with
 * `typ: secevent+jwt` (RFC 8417 §2.3); nothing here hand-rolls base64url or a
 * signature.
 */
import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CompactSign, calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { HooklogError, errorMessage } from '../../platform/errors.js';
import { loadSigningKey, type SigningKey } from '../../platform/identity/keys.js';
import type { TransmitterConfig } from './config.js';

export const SET_TYP = 'secevent+jwt';

export interface SetSigner {
  readonly issuer: string;
  readonly kid: string;
  readonly alg: string;
  /** What `jwks_uri` serves: the signing key's public half, then any additional public keys. */
  readonly jwks: { readonly keys: readonly JWK[] };
  /** The compact JWS of `claims` (serialised once, here). */
  sign(claims: object): Promise<string>;
}

/** Reads and checks the configured key; throws CONFIG_INVALID naming the key's config path. */
export async function loadSetSigner(cfg: TransmitterConfig): Promise<SetSigner> {
  const where = 'response.transmitter';
  let text: string;
  try {
    text = cfg.private_key ?? readFileSync(cfg.private_key_path!, 'utf8');
  } catch (err) {
    throw new HooklogError('CONFIG_INVALID', `${where}.private_key_path: ${errorMessage(err)}`, { cause: err });
  }
  // The kid: configured, else the JWK's own, else the public key's thumbprint (stable for the key).
  const probe = loadSigningKey(text, { kid: cfg.key_id ?? '-', alg: cfg.algorithm }, `${where}.private_key`);
  const publicJwk = await exportJWK(createPublicKey(probe.key));
  const jwkKid = text.trim().startsWith('{') ? (JSON.parse(text) as { kid?: unknown }).kid : undefined;
  const kid = cfg.key_id ?? (typeof jwkKid === 'string' ? jwkKid : await calculateJwkThumbprint(publicJwk));
  const key: SigningKey = { ...probe, kid };
  const extra = cfg.additional_public_keys.map((k, i) => parsePublicJwk(k, `${where}.additional_public_keys[${i}]`));
  const keys: JWK[] = [{ ...publicJwk, kid, alg: key.alg, use: 'sig' }, ...extra];
  return {
    issuer: cfg.issuer,
    kid,
    alg: key.alg,
    jwks: { keys },
    sign: (claims) =>
      new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
        .setProtectedHeader({ alg: key.alg, kid, typ: SET_TYP })
        .sign(key.key),
  };
}

function parsePublicJwk(text: string, where: string): JWK {
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
    createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
  } catch (err) {
    throw new HooklogError('CONFIG_INVALID', `${where}: not a public JWK: ${errorMessage(err)}`, { cause: err });
  }
  if ('d' in jwk)
    throw new HooklogError('CONFIG_INVALID', `${where}: holds a private key; publish the public half only`);
  if (typeof jwk.kid !== 'string') throw new HooklogError('CONFIG_INVALID', `${where}: needs a kid`);
  return jwk;
}
