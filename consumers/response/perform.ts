/**
 * One management action as one call of the org's management API
 * (protocols.md §8), within the family's budget, and what its answer means.
 *
 * Repeatable actions may be called again when it is unknown whether a call
 * took effect (a crash after it was sent, a 5xx): clearing sessions and adding
 * to a group end in the same state however often they run, and suspending or
 * unsuspending again is refused by the service (400, the user is no longer in
 * the state the call needs), which the record shows. Expiring a password and
 * resetting factors are not: between the two calls the user may have set a new
 * password or enrolled a factor, which a repeat would undo. Those are never
 * repeated by hooklog; an unknown outcome is recorded as `uncertain` and waits
 * for an operator (`hooklog actions approve <id>` runs it again).
 */
import type { AttemptReply } from '../../platform/identity/client.js';
import { IdpReplyError } from '../../platform/identity/errors.js';
import type { Management, ManagementBucket } from '../../platform/identity/management.js';
import type { RetryPolicy } from '../../platform/retry.js';
import type { ActionName } from './config.js';

interface ActionCall {
  readonly method: 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly family: ManagementBucket;
}

const REPEATABLE: ReadonlySet<ActionName> = new Set(['clear_sessions', 'suspend', 'unsuspend', 'add_to_group']);

/** May this action be called again when the outcome of an earlier call is unknown? */
export function isRepeatable(action: ActionName): boolean {
  return REPEATABLE.has(action);
}

/** The OAuth scopes the actions need (SSWS tokens need an admin role instead). */
export function scopesFor(actions: readonly ActionName[]): string[] {
  const scopes = new Set<string>();
  for (const a of actions) scopes.add(a === 'add_to_group' ? 'okta.groups.manage' : 'okta.users.manage');
  return [...scopes].sort();
}

/** The call an action makes. */
export function actionCall(action: ActionName, userId: string, groupId?: string): ActionCall {
  const user = encodeURIComponent(userId);
  switch (action) {
    case 'clear_sessions':
      // oauthTokens=true: the user's refresh and access tokens go too, not only the browser sessions.
      return { method: 'DELETE', path: `/api/v1/users/${user}/sessions?oauthTokens=true`, family: 'users' };
    case 'add_to_group':
      return {
        method: 'PUT',
        path: `/api/v1/groups/${encodeURIComponent(groupId ?? '')}/users/${user}`,
        family: 'groups',
      };
    default:
      return { method: 'POST', path: `/api/v1/users/${user}/lifecycle/${action}`, family: 'users' };
  }
}

export type ActionOutcome =
  | { readonly result: 'done'; readonly status: number }
  | { readonly result: 'failed'; readonly status: number; readonly error_code: string; readonly error: string };

/**
 * Makes the call. Resolves `done` on 2xx, `failed` with the service's error
 * when it refuses (4xx: the same call would be refused again); throws the
 * client's retriable error when the service could not be reached or answered
 * 5xx past `transient` (the outcome is then unknown). `onAttempt` hears of
 * every HTTP request the call makes (the client's retries included).
 */
export async function performAction(
  m: Management,
  a: { action: ActionName; user_id: string; group_id?: string | undefined },
  opts: { transient: RetryPolicy; signal?: AbortSignal; onAttempt?: (reply: AttemptReply) => void },
): Promise<ActionOutcome> {
  const call = actionCall(a.action, a.user_id, a.group_id);
  try {
    const reply = await m.client.send({
      method: call.method,
      path: call.path,
      budget: m.budget(call.family),
      // A repeatable POST may be sent again after a 5xx; the others are repeated only by PUT/DELETE semantics.
      retryUnsafe: isRepeatable(a.action),
      transient: opts.transient,
      needs: `the ${scopesFor([a.action]).join(' ')} scope (or an admin role for SSWS)`,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onAttempt ? { onAttempt: opts.onAttempt } : {}),
    });
    return { result: 'done', status: reply.status };
  } catch (err) {
    if (err instanceof IdpReplyError && !err.retriable)
      return {
        result: 'failed',
        status: err.status,
        error_code: err.errorCode ?? `http_${err.status}`,
        error: err.serviceSays,
      };
    throw err;
  }
}
