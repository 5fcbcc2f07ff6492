/**
 * The risk records on the stream: the seam between what decides a user's risk
 * (alerting's findings) and what acts on it (the token hook's in-memory view,
 * the Shared Signals transmitter, response actions). Public contract, like the
 * other topics: any Kafka consumer may read them, so fields never change meaning.
 *
 * - `<prefix>.risk` (compacted), key `riskKey(org, entity)`: the entity's
 *   current state with the contributions that can still decide its level; a
 *   tombstone once nothing holds it above `none` (an empty value as hooklog's
 *   stream hands it over; on Kafka a null value, so compaction drops the key).
 *   A reader that keeps the latest record per key has every entity's level
 *   (the token hook's view); `levelAt` tells it at a given instant, so a
 *   contribution past `expires_at` stops counting before the record saying so.
 * - `<prefix>.risk-changes`, key = org: one record per change of an entity's
 *   level, in the order they happened per org, with a stable `change_id`. The
 *   outbox that SETs and actions are delivered from (a crash repeats a delivery,
 *   never the decision).
 */
import { z } from 'zod';

export const RISK_LEVELS = ['none', 'low', 'medium', 'high'] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];

/** Orders levels: `none` < `low` < `medium` < `high`. */
export function riskRank(level: RiskLevel): number {
  return RISK_LEVELS.indexOf(level);
}

export const riskLevelSchema = z.enum(RISK_LEVELS);

/** Whose risk: today a user of the org (the service's user id; its login, an email, when known). */
export const riskEntitySchema = z.strictObject({
  type: z.literal('user'),
  /** The identity service's user id (00u…): the key, and the subject of actions. */
  id: z.string().min(1).max(256),
  /** The user's login (usually an email): the SET subject by email, and what analysts read. */
  login: z.string().min(1).max(512).optional(),
});
export type RiskEntity = z.output<typeof riskEntitySchema>;

/** One finding's say on an entity's level until it expires. */
export const riskContributionSchema = z.strictObject({
  rule_id: z.string().min(1),
  alert_id: z.string().min(1),
  level: riskLevelSchema,
  reason: z.string().max(1000),
  /** ISO-8601: from then on it no longer counts. */
  expires_at: z.string(),
});
export type RiskContribution = z.output<typeof riskContributionSchema>;

/**
 * The value of a `<prefix>.risk` record: the entity's level is the highest unexpired contribution.
 * A contribution at or below another's level that expires no later can never decide the level, so
 * it is not kept: at most one per level, higher levels expiring sooner.
 */
export const riskStateSchema = z.strictObject({
  org: z.string().min(1),
  entity: riskEntitySchema,
  level: riskLevelSchema,
  contributions: z.array(riskContributionSchema),
  /** ISO-8601 time of the change that wrote this state. */
  updated_at: z.string(),
  /** The `change_id` of the change that wrote this state. */
  change_id: z.string().min(1),
});
export type RiskState = z.output<typeof riskStateSchema>;

/** The value of a `<prefix>.risk-changes` record. */
export const riskChangeSchema = z.strictObject({
  /** Stable id of this change (hex): the same change derived twice has the same id; the SET's `jti` derives from it. */
  change_id: z.string().min(1),
  org: z.string().min(1),
  entity: riskEntitySchema,
  previous: riskLevelSchema,
  current: riskLevelSchema,
  /** `finding`: a contribution arrived; `expiry`: the one holding the level expired. */
  cause: z.enum(['finding', 'expiry']),
  /** The rule and alert whose contribution arrived (finding) or expired (expiry). */
  rule_id: z.string().min(1),
  alert_id: z.string().min(1),
  /** Why, for people: the rule's stated reason. */
  reason: z.string().max(1000),
  /** ISO-8601 time of the change (the finding's event time, or the expiry time). */
  at: z.string(),
});
export type RiskChange = z.output<typeof riskChangeSchema>;

/** The highest level among `contributions` not yet expired at `nowMs`, with the contribution holding it. */
export function levelAt(
  contributions: readonly Pick<RiskContribution, 'level' | 'expires_at'>[],
  nowMs: number,
): RiskLevel {
  let best = 0;
  for (const c of contributions) {
    const r = riskRank(c.level);
    if (r > best && Date.parse(c.expires_at) > nowMs) best = r;
  }
  return RISK_LEVELS[best]!;
}

/** The compacted topic's key for an entity of an org. */
export function riskKey(org: string, entity: Pick<RiskEntity, 'type' | 'id'>): string {
  return `${org}/${entity.type}/${entity.id}`;
}

/** Topic names of the risk records. */
export function riskTopics(prefix: string): { readonly state: string; readonly changes: string } {
  return { state: `${prefix}.risk`, changes: `${prefix}.risk-changes` };
}
