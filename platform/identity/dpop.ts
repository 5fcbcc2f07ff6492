/**
 * DPoP (RFC 9449) proofs: a per-process ES256 key pair whose public half
 * rides in every proof's header; the token is bound to its thumbprint, so a
 * stolen access token is useless without the key. Servers may demand a nonce
 * (`DPoP-Nonce` header with a `use_dpop_nonce` error); the token endpoint and
 * the resource server keep separate nonces, and the latest one each sent is
 * echoed in the next proof.
 */
import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

export type NonceScope = 'token' | 'resource';

/** `htu` is the request URL without query and fragment. */
export function dpopHtu(url: string): string {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  return u.toString();
}

/** `ath`: base64url SHA-256 of the access token. */
export function accessTokenHash(token: string): string {
  return createHash('sha256').update(token, 'ascii').digest('base64url');
}

export class DpopProver {
  readonly #privateKey: CryptoKey;
  readonly #jwk: JWK;
  readonly #nonces = new Map<NonceScope, string>();
  readonly #now: () => number;

  private constructor(privateKey: CryptoKey, jwk: JWK, now: () => number) {
    this.#privateKey = privateKey;
    this.#jwk = jwk;
    this.#now = now;
  }

  static async create(now: () => number = Date.now): Promise<DpopProver> {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const { kty, crv, x, y } = await exportJWK(publicKey);
    return new DpopProver(privateKey, { kty, crv, x, y } as JWK, now);
  }

  /** The public key in proofs (tests compare thumbprints). */
  get publicJwk(): JWK {
    return { ...this.#jwk };
  }

  nonce(scope: NonceScope): string | undefined {
    return this.#nonces.get(scope);
  }

  /** Remembers a nonce the server sent (on any reply, not only on errors). */
  setNonce(scope: NonceScope, nonce: string | null | undefined): void {
    if (nonce) this.#nonces.set(scope, nonce);
  }

  /** A fresh proof for one request; `accessToken` adds `ath` (resource requests). */
  async proof(htm: string, url: string, scope: NonceScope, accessToken?: string): Promise<string> {
    const claims: Record<string, unknown> = {
      htm,
      htu: dpopHtu(url),
      jti: randomUUID(),
      iat: Math.floor(this.#now() / 1000),
    };
    const nonce = this.#nonces.get(scope);
    if (nonce) claims.nonce = nonce;
    if (accessToken) claims.ath = accessTokenHash(accessToken);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: this.#jwk })
      .sign(this.#privateKey);
  }
}

/** True when a reply asks for a (new) DPoP nonce: `use_dpop_nonce` in the body or WWW-Authenticate. */
export function wantsNonce(bodyText: string, wwwAuthenticate: string | null): boolean {
  return /use_dpop_nonce/.test(wwwAuthenticate ?? '') || /"error"\s*:\s*"use_dpop_nonce"/.test(bodyText);
}
