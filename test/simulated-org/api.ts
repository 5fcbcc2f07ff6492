/**
 * How the simulated org grows: each API it serves beyond the System Log and
 * the legacy Events API (hook management, users, security events, sign-in, …)
 * is a module implementing `SimApi`, registered with `SimulatedOrg.use`. The
 * org hands each module the parsed request, and the module answers or passes.
 * Modules authenticate through `SimulatedOrg.authorize` (the same tokens,
 * scopes and DPoP rules as the log APIs) and spend their endpoint family's
 * rate-limit bucket through `SimulatedOrg.admit`, so a rule hooklog breaks is
 * recorded in `violations` wherever it happens.
 */
import type { Reply } from './auth.js';

export interface RequestRecord {
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  status: number;
  /** Who asked: the Authorization header (tests give each hooklog instance its own token to tell them apart). */
  readonly client?: string;
  fault?: string;
  /** When the reply finished (or the connection closed); unset while it is being written. */
  doneAt?: number;
}

/** What a module may ask of the org it is part of (implemented by `SimulatedOrg`). */
export interface SimOrg {
  /** The org's base URL. */
  readonly url: string;
  /** Null when the request's credentials are good and hold `scope`, else the service's 401/403 reply. */
  authorize(req: SimRequest, scope: string): Promise<Reply | null>;
  /** Spends one request of an endpoint family's bucket: headers to send, or the 429 when it is empty. */
  admit(family: string, now?: number): { headers: Record<string, string>; refused: Reply | null };
  /** Requests refused because hooklog broke a rule: must stay empty. */
  readonly violations: string[];
}

export interface SimRequest {
  readonly method: string;
  readonly url: URL;
  /** A request header (first value), by lower-case name. */
  header(name: string): string | undefined;
  /** The whole body as sent. */
  readonly body: Buffer;
  /** The org's record of this request (status and fault are filled in as it is answered). */
  readonly rec: RequestRecord;
  readonly now: number;
}

/** A reply a module writes itself (a body that is not JSON, a streamed or slow answer). */
export interface RawReply {
  readonly status: number;
  readonly raw: string | Buffer;
  readonly headers?: Record<string, string | string[]>;
  readonly violation?: string;
}

export interface SimApi {
  /** Names the module in errors and logs. */
  readonly name: string;
  /** The answer, or null when the request is not for this API (the next module, then 404, get it). */
  handle(req: SimRequest, org: SimOrg): Promise<Reply | RawReply | null> | Reply | RawReply | null;
}

export function isRawReply(r: Reply | RawReply): r is RawReply {
  return 'raw' in r;
}
