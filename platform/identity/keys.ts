/**
 * The private key a service app signs its client assertions with: PEM (PKCS#8
 * or PKCS#1) or a JWK, plus the key id the org knows it by. Loaded once at
 * start, so a key that cannot sign fails at boot with a message naming the
 * config key instead of at the first token request.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { HooklogError, errorMessage } from '../errors.js';

/** The algorithms the service accepts for client assertions (protocols.md §3). */
export const ASSERTION_ALGS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512'] as const;
export type AssertionAlg = (typeof ASSERTION_ALGS)[number];

export interface SigningKey {
  readonly key: KeyObject;
  readonly alg: AssertionAlg;
  readonly kid: string;
}

const CURVE_ALG: Record<string, AssertionAlg> = {
  prime256v1: 'ES256',
  'P-256': 'ES256',
  secp384r1: 'ES384',
  'P-384': 'ES384',
  secp521r1: 'ES512',
  'P-521': 'ES512',
};

/**
 * Parses `text` (PEM, or a JWK as JSON) into a signing key. `kid` defaults to
 * the JWK's own; `alg` to RS256 for RSA and to the curve's ES alg for EC.
 * Throws CONFIG_INVALID naming `where` for anything that cannot sign.
 */
export function loadSigningKey(
  text: string,
  opts: { kid?: string | undefined; alg?: AssertionAlg | undefined },
  where: string,
): SigningKey {
  const at = where ? `${where}: ` : '';
  const trimmed = text.trim();
  let key: KeyObject;
  let jwkKid: string | undefined;
  let jwkAlg: string | undefined;
  try {
    if (trimmed.startsWith('{')) {
      const jwk = JSON.parse(trimmed) as { kid?: unknown; alg?: unknown; d?: unknown };
      if (typeof jwk.d !== 'string') throw new Error('the JWK has no private part ("d")');
      jwkKid = typeof jwk.kid === 'string' ? jwk.kid : undefined;
      jwkAlg = typeof jwk.alg === 'string' ? jwk.alg : undefined;
      key = createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
    } else {
      if (!trimmed.includes('PRIVATE KEY-----'))
        throw new Error('not a PEM private key (expected "-----BEGIN PRIVATE KEY-----")');
      key = createPrivateKey({ key: trimmed, format: 'pem' });
    }
  } catch (err) {
    throw new HooklogError('CONFIG_INVALID', `${at}not a usable private key (PEM or JWK): ${errorMessage(err)}`, {
      cause: err,
    });
  }
  const kid = opts.kid ?? jwkKid;
  if (!kid)
    throw new HooklogError(
      'CONFIG_INVALID',
      `${at}key_id is required (the kid of the public key registered with the service app) unless the JWK carries one`,
    );

  let inferred: AssertionAlg;
  if (key.asymmetricKeyType === 'rsa') {
    if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048)
      throw new HooklogError('CONFIG_INVALID', `${at}RSA keys must have at least 2048 bits`);
    inferred = 'RS256';
  } else if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve ?? '';
    const alg = CURVE_ALG[curve];
    if (!alg)
      throw new HooklogError(
        'CONFIG_INVALID',
        `${at}EC curve ${curve || '(unknown)'} is not accepted; use P-256, P-384 or P-521`,
      );
    inferred = alg;
  } else {
    throw new HooklogError(
      'CONFIG_INVALID',
      `${at}${key.asymmetricKeyType ?? 'this'} keys are not accepted; use RSA (RS256/384/512) or EC (ES256/384/512)`,
    );
  }
  const alg = opts.alg ?? (ASSERTION_ALGS.includes(jwkAlg as AssertionAlg) ? (jwkAlg as AssertionAlg) : inferred);
  if (alg.slice(0, 2) !== inferred.slice(0, 2) || (alg.startsWith('ES') && alg !== inferred)) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `${at}algorithm ${alg} does not fit a ${key.asymmetricKeyType} key (use ${inferred})`,
    );
  }
  return { key, alg, kid };
}
