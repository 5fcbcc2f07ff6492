/**
 * RFC 8935 push of one signed SET to the org's security-events endpoint,
 * through the org's management client (its `security-events` budget, 429
 * handling). The SET authenticates itself, so the call carries no credentials.
 * The one decision made here: what the receiver's answer means.
 *
 * - 202 (any 2xx): accepted. A repeat of a `jti` it already has is accepted
 *   too (the receiver treats it as received), so resending is always safe.
 * - 400 (or another 4xx) with `{"err": …}`: refused. The same bytes would be
 *   refused again, so the SET is not retried: it is dead-lettered and logged
 *   with the `err` code.
 * - 5xx, network, time-out: transient. The client retries with the caller's
 *   policy, byte-identical (`retryUnsafe`: the receiver dedupes the jti); past
 *   it the error is thrown and the caller retries the whole delivery later.
 *   `onAttempt` hears of every request, so the caller can count them all.
 */
import { isRetriable } from '../../platform/errors.js';
import type { AttemptReply } from '../../platform/identity/client.js';
import { IdpReplyError } from '../../platform/identity/errors.js';
import type { Management } from '../../platform/identity/management.js';
import type { RetryPolicy } from '../../platform/retry.js';
import { SET_ERRORS } from '../../schemas/ssf.js';

export const SECURITY_EVENTS_PATH = '/security/api/v1/security-events';

export type SetOutcome =
  | { readonly result: 'accepted'; readonly status: number }
  | {
      readonly result: 'refused';
      readonly status: number;
      /** An RFC 8935 code, `other` for a code outside the list, or `http_<status>` when the body names none. */
      readonly err: string;
      readonly description: string;
    };

/** The receiver's refusal: its `err` (checked against the list) and description. */
export function readRefusal(status: number, body: unknown): { err: string; description: string } {
  const b = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const err = typeof b.err === 'string' ? b.err : null;
  const description = typeof b.description === 'string' ? b.description.slice(0, 500) : '';
  if (err === null) {
    // The vendor's own error body (errorCode, errorSummary) for a 4xx that is not RFC 8935's.
    const summary = typeof b.errorSummary === 'string' ? b.errorSummary.slice(0, 500) : '';
    return { err: `http_${status}`, description: description || summary };
  }
  return { err: (SET_ERRORS as readonly string[]).includes(err) ? err : 'other', description: description || err };
}

/**
 * POSTs `token`; resolves with the outcome, or throws a retriable error once
 * `transient` is spent (the caller holds the SET and tries again later).
 */
export async function pushSet(
  m: Management,
  token: string,
  opts: { transient: RetryPolicy; signal?: AbortSignal; onAttempt?: (reply: AttemptReply) => void },
): Promise<SetOutcome> {
  try {
    const reply = await m.client.send({
      method: 'POST',
      path: SECURITY_EVENTS_PATH,
      body: token,
      contentType: 'application/secevent+jwt',
      anonymous: true,
      retryUnsafe: true,
      budget: m.budget('security-events'),
      transient: opts.transient,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onAttempt ? { onAttempt: opts.onAttempt } : {}),
    });
    return { result: 'accepted', status: reply.status };
  } catch (err) {
    if (err instanceof IdpReplyError && !isRetriable(err) && err.status >= 400 && err.status < 500)
      return { result: 'refused', status: err.status, ...readRefusal(err.status, err.body) };
    throw err;
  }
}
