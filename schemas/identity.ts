/**
 * The identity records on the stream: each org's directory as the identity service's management API lists it
 * (users with their status, groups and administrator roles), synced by hooklog so that rules and analysts have
 * the context beyond the event (`actor.groups`, `actor.adminRoles`). Public contract, like the other topics: any
 * Kafka consumer may read them, so fields never change meaning.
 *
 * - `<prefix>.identity` (compacted), key `identityKey(org, userId)`: the user's current state as last synced; a
 *   tombstone once the user is deleted in the identity service (an empty value as hooklog's stream hands it over;
 *   on Kafka a null value, so compaction drops the key). A reader that keeps the latest record per key has every
 *   user's context. The Kafka stream may also put its own sync records on the topic (a key starting with NUL and a
 *   null value: how a process reads a compacted topic to its end, platform/stream/kafka/table.ts): they are no user,
 *   and a reader skips every key that is not `identityKey(org, userId)`'s shape (`Stream.watch` and
 *   `readLatestByKey` already do).
 *
 * Every value a user record carries came from the identity service and may have been chosen by an attacker who
 * can edit a profile or name a group: readers bound and show it as text, as they do event values.
 */
import { z } from 'zod';

/** Bounds of one record: a user in more groups or roles than this keeps the first ones and says it was cut. */
export const IDENTITY_LIMITS = { groups: 1000, adminRoles: 100, text: 512 } as const;

const text = z.string().min(1).max(IDENTITY_LIMITS.text);

export const identityGroupSchema = z.strictObject({
  /** The service's group id (00g…). */
  id: text,
  /** The group's `profile.name`. */
  name: z.string().max(IDENTITY_LIMITS.text),
});

/** The value of a `<prefix>.identity` record. */
export const identityUserSchema = z.strictObject({
  org: z.string().min(1),
  /** The service's user id (00u…): the key, and what events name as `actor.id`. */
  user_id: text,
  /** `profile.login` (usually an email), when the user has one. */
  login: text.optional(),
  /**
   * The status the service reported (seeds, document 1: STAGED, PROVISIONED, ACTIVE, RECOVERY, PASSWORD_EXPIRED,
   * LOCKED_OUT, SUSPENDED, DEPROVISIONED); one this release does not know is kept as the service's text.
   */
  status: text,
  /** The groups the user is a member of, by id and name. */
  groups: z.array(identityGroupSchema).max(IDENTITY_LIMITS.groups),
  /**
   * The administrator role types the user holds (`SUPER_ADMIN`, `ORG_ADMIN`, `READ_ONLY_ADMIN`, …), assigned to
   * the user directly or through a group, each once, sorted. Empty: not an administrator.
   */
  admin_roles: z.array(text).max(IDENTITY_LIMITS.adminRoles),
  /** True when the service listed more groups or roles than the limits above keep. */
  truncated: z.boolean(),
  /** The user's `lastUpdated` in the service (ISO-8601): what an incremental sync continues from. */
  last_updated: z.string(),
  /** When hooklog read this state (ISO-8601). */
  synced_at: z.string(),
});
export type IdentityUser = z.output<typeof identityUserSchema>;

/** The compacted topic's key for a user of an org. */
export function identityKey(org: string, userId: string): string {
  return `${org}/user/${userId}`;
}

/** Topic name of the identity records. */
export function identityTopic(prefix: string): string {
  return `${prefix}.identity`;
}
