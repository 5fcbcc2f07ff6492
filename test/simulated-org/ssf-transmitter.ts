/**
 * The simulated org as a Shared Signals transmitter (protocols.md §8): it
 * publishes `/.well-known/ssf-configuration` and its signing keys at the
 * document's `jwks_uri`, lets a receiver register a push stream (SSF 1.0
 * stream management, `POST {configuration_endpoint}`), and pushes CAEP
 * `session-revoked` (from `user.session.end`) and `credential-change` (factor
 * and password changes) SETs, signed with jose, to each stream that requested
 * the event type (RFC 8935): transient failures (5xx, network) are retried
 * with back-off and the SET is never changed; a 400 ends the delivery with
 * its `err` recorded. Keys rotate: `rotate()` publishes a new key and signs
 * with it, `retire(kid)` removes an old one from the published set.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import type { RawReply, SimApi, SimOrg, SimRequest } from './api.js';
import type { Reply } from './auth.js';
import { SsfStreams, type SsfStream } from './ssf-streams.js';

export const CAEP_SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
export const CAEP_CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const SSF_VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';
const PUSH = 'urn:ietf:rfc:8935';

export type SigningAlg = 'RS256' | 'ES256';

interface SigningKey {
  readonly kid: string;
  readonly alg: SigningAlg;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

/** Everything a test may vary to forge a bad SET; each defaults to what the transmitter does. */
export interface SignOptions {
  readonly alg?: SigningAlg;
  /** Sign with this key (e.g. a retired one). Default the current key. */
  readonly kid?: string;
  /** The JOSE header kid written, when it should differ from the signing key's. */
  readonly headerKid?: string;
  readonly typ?: string;
  readonly iss?: string;
  readonly aud?: string | string[];
  readonly iat?: number;
  readonly jti?: string;
}

export interface PushResult {
  readonly status: number;
  readonly body: string;
  /** The RFC 8935 err of a 400, when the body named one. */
  readonly err?: string;
}

export interface Delivery extends PushResult {
  readonly jti: string;
  readonly streamId: string;
  readonly attempts: number;
}

/** Subjects in SETs: the user (by iss_sub and email together) and, for session events, the session. */
export interface SetUser {
  readonly id: string;
  readonly login: string;
  readonly sessionId?: string;
}

export class SsfTransmitter implements SimApi {
  readonly name = 'ssf-transmitter';
  readonly streams: SsfStreams;
  /** Deliveries finished (202, a 400, or retries exhausted), in order. */
  readonly deliveries: Delivery[] = [];
  /** GETs of the JWKS: how often receivers fetched the keys. */
  jwksFetches = 0;
  readonly #url: string;
  readonly #keys: SigningKey[] = [];
  #current!: SigningKey;
  #retired: SigningKey[] = [];

  private constructor(org: SimOrg) {
    this.#url = org.url;
    this.streams = new SsfStreams(org.url, `${org.url}/api/v1/ssf/stream`);
  }

  /** A transmitter for `org` with one key of `alg`, registered with `org.use`. */
  static async create(org: SimOrg & { use(api: SimApi): unknown }, alg: SigningAlg = 'RS256'): Promise<SsfTransmitter> {
    const t = new SsfTransmitter(org);
    await t.rotate(alg);
    org.use(t);
    return t;
  }

  get issuer(): string {
    return this.#url;
  }

  get configurationUrl(): string {
    return `${this.#url}/.well-known/ssf-configuration`;
  }

  get jwksUri(): string {
    return `${this.#url}/oauth2/v1/ssf/keys`;
  }

  /** The kid signing new SETs. */
  get currentKid(): string {
    return this.#current.kid;
  }

  /** Publishes a new key beside the old ones and signs with it from now on; its kid. */
  async rotate(alg: SigningAlg = this.#current?.alg ?? 'RS256'): Promise<string> {
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const kid = `sim-${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`;
    const key = { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
    this.#keys.push(key);
    this.#current = key;
    return kid;
  }

  /** Removes a key from the published set (it can still sign, as a stolen or stale key would). */
  retire(kid: string): void {
    const i = this.#keys.findIndex((k) => k.kid === kid);
    if (i < 0 || this.#keys[i] === this.#current) throw new Error(`cannot retire ${kid}`);
    this.#retired.push(...this.#keys.splice(i, 1));
  }

  handle(req: SimRequest, org: SimOrg): Promise<Reply | RawReply | null> | Reply | null {
    const path = req.url.pathname;
    if (req.method === 'GET' && path === '/.well-known/ssf-configuration')
      return {
        status: 200,
        body: {
          spec_version: '1_0',
          issuer: this.#url,
          jwks_uri: this.jwksUri,
          delivery_methods_supported: [PUSH],
          configuration_endpoint: this.streams.endpoint,
          authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
        },
      };
    if (req.method === 'GET' && path === new URL(this.jwksUri).pathname) {
      this.jwksFetches++;
      return { status: 200, body: { keys: this.#keys.map((k) => k.publicJwk) } };
    }
    return this.streams.handle(req, org);
  }

  /** A SET with `events`, signed as `opts` says (by default as the transmitter signs every SET). */
  async sign(
    events: Record<string, Record<string, unknown>>,
    extra: JWTPayload = {},
    opts: SignOptions = {},
  ): Promise<string> {
    const key = opts.kid ? [...this.#keys, ...this.#retired].find((k) => k.kid === opts.kid) : this.#current;
    if (!key) throw new Error(`no key ${opts.kid}`);
    return new SignJWT({ ...extra, events })
      .setProtectedHeader({ alg: opts.alg ?? key.alg, kid: opts.headerKid ?? key.kid, typ: opts.typ ?? 'secevent+jwt' })
      .setIssuer(opts.iss ?? this.#url)
      .setAudience(opts.aud ?? 'unset')
      .setIssuedAt(opts.iat ?? Math.floor(Date.now() / 1000))
      .setJti(opts.jti ?? randomUUID())
      .sign(key.privateKey);
  }

  /** CAEP session-revoked about `user` (RFC 9493 complex subject: the user by alias, the session). */
  sessionRevoked(user: SetUser, opts: SignOptions & { reason?: string; initiator?: string } = {}): Promise<string> {
    const event = {
      event_timestamp: Math.floor(Date.now() / 1000),
      initiating_entity: opts.initiator ?? 'user',
      ...(opts.reason ? { reason_admin: { en: opts.reason } } : {}),
    };
    return this.sign({ [CAEP_SESSION_REVOKED]: event }, { sub_id: this.#subject(user) }, opts);
  }

  /** CAEP credential-change about `user`. */
  credentialChange(
    user: SetUser,
    change: { credentialType: string; changeType: 'create' | 'revoke' | 'update' | 'delete'; friendlyName?: string },
    opts: SignOptions = {},
  ): Promise<string> {
    const event = {
      event_timestamp: Math.floor(Date.now() / 1000),
      initiating_entity: 'user',
      credential_type: change.credentialType,
      change_type: change.changeType,
      ...(change.friendlyName ? { friendly_name: change.friendlyName } : {}),
    };
    return this.sign({ [CAEP_CREDENTIAL_CHANGE]: event }, { sub_id: this.#subject(user) }, opts);
  }

  /**
   * The SETs a System Log event makes this transmitter send to each stream that requested them:
   * `user.session.end` → session-revoked; factor and password changes → credential-change.
   * Resolves with the deliveries once each has finished.
   */
  async transmit(logEvent: {
    eventType: string;
    actor?: { id?: string; alternateId?: string };
    authenticationContext?: { externalSessionId?: string };
  }): Promise<Delivery[]> {
    const user: SetUser = {
      id: logEvent.actor?.id ?? 'unknown',
      login: logEvent.actor?.alternateId ?? 'unknown',
      ...(logEvent.authenticationContext?.externalSessionId
        ? { sessionId: logEvent.authenticationContext.externalSessionId }
        : {}),
    };
    const change = credentialChangeOf(logEvent.eventType);
    const type =
      logEvent.eventType === 'user.session.end' ? CAEP_SESSION_REVOKED : change ? CAEP_CREDENTIAL_CHANGE : null;
    if (!type) return [];
    const out: Delivery[] = [];
    for (const stream of this.streams.requesting(type)) {
      const set =
        type === CAEP_SESSION_REVOKED
          ? await this.sessionRevoked(user, { aud: stream.aud })
          : await this.credentialChange(user, change!, { aud: stream.aud });
      out.push(await this.deliver(set, stream));
    }
    return out;
  }

  /** SSF stream verification (SSF 1.0 §8.1.4): a SET carrying the receiver's `state`, pushed to the stream. */
  async verify(stream: SsfStream, state: string): Promise<Delivery> {
    const subject = { format: 'opaque', id: stream.stream_id };
    const set = await this.sign({ [SSF_VERIFICATION]: { state } }, { sub_id: subject }, { aud: stream.aud });
    return this.deliver(set, stream);
  }

  /** Pushes `set` to `stream` as RFC 8935 says, retrying 5xx and network failures unchanged (at most `attempts`). */
  async deliver(set: string, stream: SsfStream, attempts = 6): Promise<Delivery> {
    const jti = (JSON.parse(Buffer.from(set.split('.')[1]!, 'base64url').toString()) as { jti: string }).jti;
    let last: PushResult = { status: 0, body: '' };
    let n = 0;
    for (let backoff = 50; n < attempts; backoff *= 2) {
      n++;
      last = await this.push(stream.delivery.endpoint_url, set, stream.delivery.authorization_header).catch(
        (err: Error) => ({ status: 0, body: err.message }),
      );
      if (last.status !== 0 && last.status < 500) break;
      await new Promise((r) => setTimeout(r, backoff));
    }
    const d = { ...last, jti, streamId: stream.stream_id, attempts: n };
    this.deliveries.push(d);
    return d;
  }

  /** One push attempt of `body` (a SET, or anything a test wants to send as one). */
  async push(
    url: string,
    body: string | Buffer,
    authorization?: string,
    contentType = 'application/secevent+jwt',
  ): Promise<PushResult> {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': contentType, accept: 'application/json', ...(authorization ? { authorization } : {}) },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    let err: string | undefined;
    if (res.status === 400) err = (JSON.parse(text) as { err?: string }).err;
    return { status: res.status, body: text, ...(err ? { err } : {}) };
  }

  #subject(user: SetUser): Record<string, unknown> {
    return {
      format: 'complex',
      user: {
        format: 'aliases',
        identifiers: [
          { format: 'iss_sub', iss: this.#url, sub: user.id },
          { format: 'email', email: user.login },
        ],
      },
      ...(user.sessionId ? { session: { format: 'opaque', id: user.sessionId } } : {}),
    };
  }
}

/** The credential-change a System Log event type stands for (protocols.md §8), or undefined. */
function credentialChangeOf(
  eventType: string,
): { credentialType: string; changeType: 'create' | 'revoke' | 'update' | 'delete' } | undefined {
  const factor = /^user\.mfa\.factor\.(activate|deactivate|suspend|unsuspend|update|reset_all)$/.exec(eventType)?.[1];
  if (factor) {
    const changeType = ({ activate: 'create', deactivate: 'delete', suspend: 'revoke', reset_all: 'revoke' } as const)[
      factor as 'activate'
    ];
    return { credentialType: 'app', changeType: changeType ?? 'update' };
  }
  if (eventType === 'user.account.reset_password' || eventType === 'user.account.update_password')
    return { credentialType: 'password', changeType: 'update' };
  return undefined;
}
