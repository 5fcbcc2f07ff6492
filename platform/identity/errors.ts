/**
 * Classification of the identity service's replies and of network failures
 * into hooklog's error codes: the one place that decides what is retried.
 */
import { HooklogError, errorMessage } from '../errors.js';

/** The service's error body (`errorCode` E0000…) or an OAuth error (`error`). */
export interface IdpErrorBody {
  readonly errorCode?: string;
  readonly errorSummary?: string;
  readonly errorCauses?: ReadonlyArray<{ errorSummary?: string }>;
  readonly error?: string;
  readonly error_description?: string;
}

/** Parses an error body if it is one; never throws. */
export function parseErrorBody(text: string): IdpErrorBody {
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as IdpErrorBody) : {};
  } catch {
    return {};
  }
}

/** "E0000053: Invalid value for 'since' …" from a body, bounded in length (it goes into logs). */
export function describeErrorBody(body: IdpErrorBody): string {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const code = str(body.errorCode) || str(body.error);
  const summary = str(body.errorSummary) || str(body.error_description);
  const causes = Array.isArray(body.errorCauses)
    ? body.errorCauses
        .map((c) => str(c?.errorSummary))
        .filter(Boolean)
        .join('; ')
    : '';
  const text = [code, summary].filter(Boolean).join(': ') + (causes ? ` (${causes})` : '');
  return (text || 'no error body').slice(0, 500);
}

/** True for the service's "this feature/API is not enabled for the org" answers. */
function notEnabled(status: number, body: IdpErrorBody): boolean {
  if (status === 404) return true;
  if (body.errorCode === 'E0000015') return true;
  return /not enabled|feature|not available/i.test(`${body.errorSummary ?? ''}`);
}

/**
 * A non-2xx reply, classified: the code says what hooklog does about it, `status` and the service's own
 * `errorCode`, `errorSummary` and `errorCauses` say what the service said (shown to operators as they are,
 * kept with a failed action).
 */
export class IdpReplyError extends HooklogError {
  readonly status: number;
  readonly body: IdpErrorBody;

  constructor(
    code: HooklogError['code'],
    message: string,
    status: number,
    body: IdpErrorBody,
    opts: { retriable?: boolean } = {},
  ) {
    super(code, message, opts);
    this.name = 'IdpReplyError';
    this.status = status;
    this.body = body;
  }

  /** The service's error code (E0000…) or OAuth `error`, if it sent one. */
  get errorCode(): string | undefined {
    const c = this.body.errorCode ?? this.body.error;
    return typeof c === 'string' ? c : undefined;
  }

  /** The service's summary and causes as one line ("E0000001: Api validation failed (uri: …)"). */
  get serviceSays(): string {
    return describeErrorBody(this.body);
  }
}

export interface ClassifyOptions {
  /** The legacy Events API: 403/404 usually mean the org does not have it. */
  readonly feature?: boolean | undefined;
  /** What a 403 means the request lacks (scope, admin role); default: the pollers' read scopes. */
  readonly needs?: string | undefined;
}

/**
 * Maps a non-2xx reply to an `IdpReplyError`. `what` names the request in the
 * message ("org acme: GET /api/v1/logs").
 */
export function classifyIdpReply(
  status: number,
  bodyText: string,
  what: string,
  opts: ClassifyOptions = {},
): IdpReplyError {
  const body = parseErrorBody(bodyText);
  const detail = describeErrorBody(body);
  const fail = (code: HooklogError['code'], message: string, retriable = false) =>
    new IdpReplyError(code, message, status, body, { retriable });
  if (status === 429) return fail('IDP_RATE_LIMITED', `${what}: rate limited (429 ${detail})`, true);
  if (status >= 500) {
    const why = body.errorCode === 'E0000009' ? "the query ran over the service's 30 s limit" : 'server error';
    return fail('IDP_UNAVAILABLE', `${what}: ${why} (${status} ${detail})`, true);
  }
  if (status === 401) {
    return fail('IDP_AUTH_FAILED', `${what}: credentials refused (401 ${detail}); check the org's auth settings`);
  }
  if (status === 403 || (opts.feature && status === 404)) {
    if (opts.feature && notEnabled(status, body)) {
      return fail(
        'IDP_API_NOT_ENABLED',
        `${what}: the API is not enabled for this org (${status} ${detail}); it was closed to new orgs in 2019 — disable legacy_events for this org or ask the vendor to enable it`,
      );
    }
    const needs = opts.needs ?? 'a read-only admin role and the okta.logs.read / okta.events.read scope';
    return fail(
      'IDP_AUTH_FAILED',
      `${what}: permission denied (${status} ${detail}); the token or service app needs ${needs}`,
    );
  }
  return fail('IDP_REQUEST_REJECTED', `${what}: request rejected (${status} ${detail})`);
}

/** A failure before any reply: refused, reset, DNS, TLS, a body cut short, or our time-out. */
export function classifyNetworkError(err: unknown, what: string, timeoutMs: number): HooklogError {
  if (err instanceof HooklogError) return err;
  const e = err as { name?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError') {
    return new HooklogError('IDP_UNAVAILABLE', `${what}: no complete reply within ${timeoutMs} ms`, {
      retriable: true,
      cause: err,
    });
  }
  const code = e?.cause?.code ? ` ${e.cause.code}` : '';
  const msg = e?.cause?.message ?? errorMessage(err);
  return new HooklogError('IDP_UNAVAILABLE', `${what}: network error${code}: ${msg}`, { retriable: true, cause: err });
}
