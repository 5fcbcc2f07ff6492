/**
 * The transmitter's signing keys, for `jwtVerify`: jose's `createRemoteJWKSet`
 * is the cache and the rotation story (style.md, "Security tokens with jose
 * only").
 *
 * - Cached for `jwks_cache_max_age_ms`: older keys are fetched again before the
 *   next verification, so a key the transmitter removed stops verifying at most
 *   that long after its removal.
 * - A kid the cache lacks fetches the keys again, at most once per
 *   `jwks_cooldown_ms` since the last fetch (concurrent misses share one
 *   fetch): a rotated-in key verifies at once, and made-up kids cost the
 *   transmitter at most one request per interval.
 * - When the keys cannot be had (the key or configuration endpoint down, a
 *   time-out, a reply that is no key set at all), verification throws
 *   `KeysUnavailable`: the push is answered 503 so the transmitter retries,
 *   never 400, which would make it give the SET up for our outage.
 *
 * With `configuration_url`, the jwks_uri is read from the transmitter's SSF
 * configuration document, whose issuer must equal the configured one (SSF
 * §7.1: a document naming another issuer is not this transmitter's).
 */
import { createRemoteJWKSet, customFetch, errors, type JWTVerifyGetKey } from 'jose';
import { HooklogError, errorMessage } from '../../platform/errors.js';
import type { SsfReceiverConfig } from './receiver-config.js';

/** A key set or configuration document larger than this is not one. */
const MAX_DOCUMENT_BYTES = 512 * 1024;

/** The keys could not be had: answer 503, the transmitter retries. */
export class KeysUnavailable extends HooklogError {
  constructor(message: string, cause?: unknown) {
    super('IDP_UNAVAILABLE', message, { retriable: true, cause });
  }
}

export interface KeyEvents {
  /** One HTTP fetch of the key set or the configuration document, with how it ended. */
  fetched(receiver: string, what: 'jwks' | 'configuration', ok: boolean, ms: number, why?: string): void;
}

type RemoteSet = ReturnType<typeof createRemoteJWKSet>;

export class TransmitterKeys {
  readonly #cfg: SsfReceiverConfig;
  readonly #events: KeyEvents;
  #remote: RemoteSet | undefined;
  #discovery: Promise<RemoteSet> | null = null;
  #lastDiscovery = Number.NEGATIVE_INFINITY;
  #lastDiscoveryError = '';

  constructor(cfg: SsfReceiverConfig, events: KeyEvents) {
    this.#cfg = cfg;
    this.#events = events;
    if (cfg.jwks_uri) this.#remote = this.#remoteSet(cfg.jwks_uri);
  }

  /**
   * Reads the configuration document (when configured) and the keys once, so
   * the first push does not wait for them. Never throws: a transmitter that is
   * down at our start is tried again by the first push.
   */
  async start(): Promise<void> {
    try {
      const remote = await this.#resolve();
      await remote.reload();
    } catch {
      // Logged by `fetched`; the first push tries again.
    }
  }

  /** The key resolver `jwtVerify` calls with the SET's protected header. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    const remote = await this.#resolve();
    try {
      return await remote(header, token);
    } catch (err) {
      // What is about this SET's header (no such kid, several without a kid, a bad key) is the SET's problem.
      if (
        err instanceof errors.JWKSNoMatchingKey ||
        err instanceof errors.JWKSMultipleMatchingKeys ||
        err instanceof errors.JWKSInvalid ||
        err instanceof errors.JOSENotSupported
      )
        throw err;
      throw new KeysUnavailable(`the transmitter's keys could not be fetched: ${errorMessage(err)}`, err);
    }
  };

  #resolve(): Promise<RemoteSet> {
    if (this.#remote) return Promise.resolve(this.#remote);
    if (this.#discovery) return this.#discovery;
    const now = performance.now();
    if (now - this.#lastDiscovery < this.#cfg.jwks_cooldown_ms)
      return Promise.reject(new KeysUnavailable(`SSF configuration not read yet: ${this.#lastDiscoveryError}`));
    this.#lastDiscovery = now;
    this.#discovery = this.#discover()
      .then((jwksUri) => (this.#remote = this.#remoteSet(jwksUri)))
      .catch((err: unknown) => {
        this.#lastDiscoveryError = errorMessage(err);
        throw new KeysUnavailable(`SSF configuration could not be read: ${this.#lastDiscoveryError}`, err);
      })
      .finally(() => (this.#discovery = null));
    return this.#discovery;
  }

  async #discover(): Promise<string> {
    const url = this.#cfg.configuration_url!;
    const res = await this.#fetch('configuration', url, { headers: { accept: 'application/json' }, redirect: 'error' });
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== this.#cfg.issuer)
      throw new Error(`the document's issuer ${JSON.stringify(doc.issuer)} is not ${JSON.stringify(this.#cfg.issuer)}`);
    if (typeof doc.jwks_uri !== 'string') throw new Error('the document has no jwks_uri');
    const jwks = new URL(doc.jwks_uri);
    const local = ['127.0.0.1', 'localhost', '[::1]'].includes(jwks.hostname);
    if (jwks.protocol !== 'https:' && !(jwks.protocol === 'http:' && local))
      throw new Error(`jwks_uri ${jwks.href} is not https`);
    return jwks.href;
  }

  #remoteSet(jwksUri: string): RemoteSet {
    return createRemoteJWKSet(new URL(jwksUri), {
      cacheMaxAge: this.#cfg.jwks_cache_max_age_ms,
      cooldownDuration: this.#cfg.jwks_cooldown_ms,
      timeoutDuration: this.#cfg.jwks_timeout_ms,
      [customFetch]: (u: string, init: RequestInit) => this.#fetch('jwks', u, init),
    });
  }

  /** One fetch, timed and counted, its body capped; resolves only with a 200 whose body was read whole. */
  async #fetch(what: 'jwks' | 'configuration', url: string, init: RequestInit): Promise<Response> {
    const started = performance.now();
    try {
      const res = await fetch(url, { ...init, signal: init.signal ?? AbortSignal.timeout(this.#cfg.jwks_timeout_ms) });
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new Error(`${what} endpoint answered ${res.status}`);
      }
      const body = await readCapped(res, MAX_DOCUMENT_BYTES);
      this.#events.fetched(this.#cfg.id, what, true, performance.now() - started);
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
    } catch (err) {
      this.#events.fetched(this.#cfg.id, what, false, performance.now() - started, errorMessage(err));
      throw err;
    }
  }
}

async function readCapped(res: Response, max: number): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length'));
  if (declared > max) {
    await res.body?.cancel();
    throw new Error(`document larger than ${max} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    const bytes = chunk as Uint8Array;
    size += bytes.length;
    if (size > max) throw new Error(`document larger than ${max} bytes`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, size);
}
