/**
 * The simulated org's SSF stream management (SSF 1.0 §8.1.1, at the
 * `configuration_endpoint` of its SSF configuration): a receiver creates a
 * push stream naming its endpoint, the event types it wants and the
 * Authorization header the pushes must carry; the org answers with the stream,
 * including the `aud` its SETs will carry (here: the receiver's endpoint URL).
 * Authenticated like every management call (SSWS, or OAuth with the scope
 * below) and rate-limited as the `ssf-streams` family. Strict: a stream
 * without a usable push endpoint is refused with the service's error body.
 */
import { randomUUID } from 'node:crypto';
import type { SimOrg, SimRequest } from './api.js';
import { oktaError, type Reply } from './auth.js';

/** The scope an OAuth client needs for stream management (the simulator's name). */
export const SSF_STREAMS_SCOPE = 'okta.ssf.streams.manage';
const PUSH = 'urn:ietf:rfc:8935';
const SUPPORTED = [
  'https://schemas.openid.net/secevent/caep/event-type/session-revoked',
  'https://schemas.openid.net/secevent/caep/event-type/credential-change',
  'https://schemas.openid.net/secevent/ssf/event-type/verification',
];

export interface SsfStream {
  readonly stream_id: string;
  readonly iss: string;
  readonly aud: string;
  readonly events_supported: readonly string[];
  readonly events_requested: readonly string[];
  readonly events_delivered: readonly string[];
  readonly delivery: { readonly method: string; readonly endpoint_url: string; readonly authorization_header?: string };
  readonly description?: string;
}

export class SsfStreams {
  readonly endpoint: string;
  readonly #iss: string;
  readonly #streams = new Map<string, SsfStream>();

  constructor(issuer: string, endpoint: string) {
    this.#iss = issuer;
    this.endpoint = endpoint;
  }

  all(): SsfStream[] {
    return [...this.#streams.values()];
  }

  /** Streams whose delivered events include `type`. */
  requesting(type: string): SsfStream[] {
    return this.all().filter((s) => s.events_delivered.includes(type));
  }

  /** Creates a stream as POST does; the stream, or why it is refused. */
  create(body: unknown): SsfStream | string {
    const b = (body ?? {}) as Record<string, unknown>;
    const delivery = (b.delivery ?? {}) as Record<string, unknown>;
    if (delivery.method !== PUSH) return `delivery.method must be ${PUSH}`;
    const url = typeof delivery.endpoint_url === 'string' ? URL.parse(delivery.endpoint_url) : null;
    if (!url || !['https:', 'http:'].includes(url.protocol)) return 'delivery.endpoint_url must be an http(s) URL';
    const requested = Array.isArray(b.events_requested) ? b.events_requested.filter((e) => typeof e === 'string') : [];
    if (requested.length === 0) return 'events_requested must name at least one event type';
    const auth = delivery.authorization_header;
    const stream: SsfStream = {
      stream_id: randomUUID(),
      iss: this.#iss,
      aud: url.href,
      events_supported: SUPPORTED,
      events_requested: requested,
      events_delivered: requested.filter((e) => SUPPORTED.includes(e)),
      delivery: {
        method: PUSH,
        endpoint_url: url.href,
        ...(typeof auth === 'string' ? { authorization_header: auth } : {}),
      },
      ...(typeof b.description === 'string' ? { description: b.description } : {}),
    };
    this.#streams.set(stream.stream_id, stream);
    return stream;
  }

  async handle(req: SimRequest, org: SimOrg): Promise<Reply | null> {
    if (req.url.pathname !== new URL(this.endpoint).pathname) return null;
    const limit = org.admit('ssf-streams');
    if (limit.refused) return limit.refused;
    const denied = await org.authorize(req, SSF_STREAMS_SCOPE);
    if (denied) return { ...denied, headers: limit.headers };
    const id = req.url.searchParams.get('stream_id');
    if (req.method === 'GET') {
      const found = id ? this.#streams.get(id) : undefined;
      if (id && !found) return oktaError(404, 'E0000007', `Not found: stream ${id}`);
      return { status: 200, body: found ?? this.all(), headers: limit.headers };
    }
    if (req.method === 'DELETE' && id) {
      if (!this.#streams.delete(id)) return oktaError(404, 'E0000007', `Not found: stream ${id}`);
      return { status: 204, body: null, headers: limit.headers };
    }
    if (req.method !== 'POST')
      return oktaError(405, 'E0000022', 'The endpoint does not support the provided HTTP method');
    let body: unknown;
    try {
      body = JSON.parse(req.body.toString('utf8'));
    } catch {
      return oktaError(400, 'E0000003', 'The request body was not well-formed.', { violation: 'stream body not JSON' });
    }
    const created = this.create(body);
    if (typeof created === 'string')
      return oktaError(400, 'E0000001', `Api validation failed: ${created}`, {
        violation: `stream refused: ${created}`,
      });
    return { status: 201, body: created, headers: limit.headers };
  }
}
