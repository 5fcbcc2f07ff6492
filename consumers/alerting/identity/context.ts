/**
 * The actor's identity context, given to each event before the rules see it: the groups, administrator roles
 * and status the identity records (`<prefix>.identity`, schemas/identity.ts) hold for the event's `actor.id`
 * in the event's org, as paths of the actor (`actor.groups`, `actor.groupIds`, `actor.adminRoles`,
 * `actor.status`; schemas/logevent-fields.ts lists them for `rules lint`).
 *
 * "As of now", not as of the event: the context is the state the view holds when the event is evaluated. A
 * user with no record (never synced, deleted, or no actor id) has empty lists and no status, so a rule asking
 * for a role never fires for them. The context always replaces whatever the event's actor carried under these
 * names (an actor field spelled as one of them in any case or with `_`): what a rule reads there comes from the
 * identity records, never from the event.
 */
import { normalKey } from '../fields.js';

/** What the rules read of a user's identity record. */
export interface ActorContext {
  /** The groups' names, in the record's order. */
  readonly groups: readonly string[];
  /** The groups' ids (00g…), in the same order. */
  readonly groupIds: readonly string[];
  /** The administrator role types (SUPER_ADMIN, ORG_ADMIN…); empty: not an administrator. */
  readonly adminRoles: readonly string[];
  /** The user's status (ACTIVE, SUSPENDED…). */
  readonly status: string;
}

/** A user's context by org and user id: the live view (view.ts) or a test case's `mocks.identity`. */
export interface ActorContextLookup {
  actor(org: string, userId: string): ActorContext | undefined;
}

/** No user has a record: every actor gets empty lists. */
export const NO_IDENTITY: ActorContextLookup = { actor: () => undefined };

/** The context paths under `actor`, in normal form (fields.ts): keys the event's actor had under them go. */
const CONTEXT_KEYS = new Set(['groups', 'groupids', 'adminroles', 'status']);

/**
 * Gives `event` its actor's context, in place: the `actor` object is replaced by a copy with the context's
 * fields (the event was parsed for this evaluation; the object it replaces may be shared by nothing else).
 * An event without an actor object is left alone: no path under `actor` has a value, as with empty lists.
 */
export function addActorContext(event: Record<string, unknown>, org: string, lookup: ActorContextLookup): void {
  const actor = event['actor'];
  if (!actor || typeof actor !== 'object' || Array.isArray(actor)) return;
  const a = actor as Record<string, unknown>;
  const id = a['id'];
  const ctx = typeof id === 'string' && id !== '' ? lookup.actor(org, id) : undefined;
  const out: Record<string, unknown> = {};
  for (const k in a) if (!CONTEXT_KEYS.has(normalKey(k))) out[k] = a[k];
  out['groups'] = ctx ? ctx.groups : [];
  out['groupIds'] = ctx ? ctx.groupIds : [];
  out['adminRoles'] = ctx ? ctx.adminRoles : [];
  if (ctx) out['status'] = ctx.status;
  event['actor'] = out;
}
