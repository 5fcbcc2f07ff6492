/**
 * A user's `<prefix>.identity` record (schemas/identity.ts) from what the directory listed, and its tombstone.
 */
import { createHash } from 'node:crypto';
import { Header } from '../../platform/stream/headers.js';
import type { StreamRecord } from '../../platform/stream/types.js';
import type { DirectoryGroup, DirectoryUser } from '../../platform/identity/directory.js';
import { IDENTITY_LIMITS, identityKey, identityUserSchema, type IdentityUser } from '../../schemas/identity.js';

/** The user's state as a record value: groups and roles bounded (`truncated` says when cut), roles once, sorted. */
export function identityUser(
  org: string,
  user: DirectoryUser,
  groups: readonly DirectoryGroup[],
  groupsCut: boolean,
  roles: Iterable<string>,
  syncedAt: number,
): IdentityUser {
  const sorted = [...new Set(roles)].sort();
  const value: IdentityUser = {
    org,
    user_id: user.id,
    ...(user.login ? { login: user.login } : {}),
    status: user.status,
    groups: groups.slice(0, IDENTITY_LIMITS.groups).map((g) => ({ id: g.id, name: g.name })),
    admin_roles: sorted.slice(0, IDENTITY_LIMITS.adminRoles),
    truncated: groupsCut || groups.length > IDENTITY_LIMITS.groups || sorted.length > IDENTITY_LIMITS.adminRoles,
    last_updated: new Date(Date.parse(user.lastUpdated)).toISOString(),
    synced_at: new Date(syncedAt).toISOString(),
  };
  // What is written is the contract, checked here rather than by every reader.
  return identityUserSchema.parse(value);
}

/** What the record says about the user, without when it was read: two reads of an unchanged user digest alike. */
export function digestOf(u: IdentityUser): string {
  const { synced_at: _synced, ...state } = u;
  return createHash('sha256').update(JSON.stringify(state)).digest('base64url');
}

export function userRecord(u: IdentityUser): StreamRecord {
  return {
    key: identityKey(u.org, u.user_id),
    value: Buffer.from(JSON.stringify(u)),
    headers: { [Header.org]: u.org, [Header.receivedAt]: u.synced_at },
  };
}

/** The user is gone from the directory: an empty value (null on Kafka), so compaction drops the key. */
export function tombstone(org: string, userId: string, at: number): StreamRecord {
  return {
    key: identityKey(org, userId),
    value: Buffer.alloc(0),
    headers: { [Header.org]: org, [Header.receivedAt]: new Date(at).toISOString() },
  };
}

/** The user id of one of `org`'s keys, or null for another org's key (or not an identity key). */
export function userIdOfKey(org: string, key: string | null): string | null {
  const prefix = identityKey(org, '');
  return key !== null && key.startsWith(prefix) && key.length > prefix.length ? key.slice(prefix.length) : null;
}
