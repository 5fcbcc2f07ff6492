/**
 * The issuer's signing keys (`{issuer}/v1/keys`), cached in memory.
 *
 * A token naming a kid we do not hold triggers one refetch — keys rotate —
 * but at most one per `minRefreshIntervalMs`, and concurrent requests share
 * the fetch in flight: a flood of made-up kids costs the key endpoint one
 * request per interval, and costs us no more than a Map miss. A failed fetch
 * keeps the keys we had (an issuer outage must not lock out tokens signed by
 * keys we already trust). A background refresh retires removed keys.
 */
import { importJWK, type CryptoKey, type JWK } from 'jose';

export const JWS_ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;
export type AsymmetricAlgorithm = (typeof JWS_ASYMMETRIC_ALGORITHMS)[number];

const KTY: Readonly<Record<AsymmetricAlgorithm, string>> = {
  RS256: 'RSA',
  RS384: 'RSA',
  RS512: 'RSA',
  PS256: 'RSA',
  PS384: 'RSA',
  PS512: 'RSA',
  ES256: 'EC',
  ES384: 'EC',
  ES512: 'EC',
  EdDSA: 'OKP',
};
const CRV: Partial<Record<AsymmetricAlgorithm, string>> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };

/** A JWKS larger than this is not a key set. */
const MAX_JWKS_BYTES = 512 * 1024;

export interface JwksEvents {
  fetched(url: string, keys: number, ms: number): void;
  fetchFailed(url: string, err: unknown): void;
  /** An unknown kid arrived within the minimum interval since the last fetch: no fetch. */
  throttled(url: string): void;
}

export interface JwksOptions {
  readonly url: string;
  readonly timeoutMs: number;
  readonly minRefreshIntervalMs: number;
  readonly refreshIntervalMs: number;
  readonly events: JwksEvents;
}

export class JwksCache {
  readonly #opts: JwksOptions;
  #keys: readonly JWK[] = [];
  readonly #imported = new Map<JWK, Map<string, Promise<CryptoKey | undefined>>>();
  #lastAttempt = Number.NEGATIVE_INFINITY;
  #inflight: Promise<boolean> | null = null;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: JwksOptions) {
    this.#opts = opts;
  }

  /** Fetches the keys once (an unreachable issuer is logged, not fatal) and starts the background refresh. */
  async start(): Promise<void> {
    await this.#refreshIfAllowed();
    this.#timer = setInterval(() => void this.#refreshIfAllowed(), this.#opts.refreshIntervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  get size(): number {
    return this.#keys.length;
  }

  /** The verification key for a token's header, refetching (rate-limited) when the kid is unknown. */
  async keyFor(kid: string | undefined, alg: AsymmetricAlgorithm): Promise<CryptoKey | undefined> {
    let jwk = this.#find(kid, alg);
    if (!jwk && (await this.#refreshIfAllowed())) jwk = this.#find(kid, alg);
    return jwk ? this.#import(jwk, alg) : undefined;
  }

  #find(kid: string | undefined, alg: AsymmetricAlgorithm): JWK | undefined {
    let only: JWK | undefined;
    let count = 0;
    for (const k of this.#keys) {
      if (k.kty !== KTY[alg] || (k.alg !== undefined && k.alg !== alg) || (k.use !== undefined && k.use !== 'sig'))
        continue;
      if (CRV[alg] !== undefined && k.crv !== CRV[alg]) continue;
      if (kid !== undefined) {
        if (k.kid === kid) return k;
      } else {
        only = k;
        count++;
      }
    }
    // Without a kid, only an unambiguous key will do.
    return count === 1 ? only : undefined;
  }

  #import(jwk: JWK, alg: AsymmetricAlgorithm): Promise<CryptoKey | undefined> {
    let byAlg = this.#imported.get(jwk);
    if (!byAlg) this.#imported.set(jwk, (byAlg = new Map()));
    let key = byAlg.get(alg);
    if (!key) {
      key = (importJWK(jwk, alg) as Promise<CryptoKey>).catch(() => undefined);
      byAlg.set(alg, key);
    }
    return key;
  }

  /** True when a fetch ran (now or already in flight) and succeeded. */
  #refreshIfAllowed(): Promise<boolean> {
    if (this.#inflight) return this.#inflight;
    const now = performance.now();
    if (now - this.#lastAttempt < this.#opts.minRefreshIntervalMs) {
      this.#opts.events.throttled(this.#opts.url);
      return Promise.resolve(false);
    }
    this.#lastAttempt = now;
    this.#inflight = this.#fetch()
      .then(
        () => true,
        (err: unknown) => {
          this.#opts.events.fetchFailed(this.#opts.url, err);
          return false;
        },
      )
      .finally(() => {
        this.#inflight = null;
      });
    return this.#inflight;
  }

  async #fetch(): Promise<void> {
    const started = performance.now();
    const res = await fetch(this.#opts.url, {
      headers: { accept: 'application/json' },
      redirect: 'error',
      signal: AbortSignal.timeout(this.#opts.timeoutMs),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`key endpoint answered ${res.status}`);
    if (text.length > MAX_JWKS_BYTES) throw new Error('key set is too large');
    const body = JSON.parse(text) as { keys?: unknown };
    if (!Array.isArray(body.keys)) throw new Error('key set has no keys array');
    const keys = body.keys.filter(
      (k): k is JWK => k !== null && typeof k === 'object' && typeof (k as JWK).kty === 'string',
    );
    this.#keys = keys;
    this.#imported.clear();
    this.#opts.events.fetched(this.#opts.url, keys.length, performance.now() - started);
  }
}
