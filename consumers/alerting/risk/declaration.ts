/**
 * Risk declarations: what a rule's finding means for a user's risk level
 * (`risk: { level: high, ttl: 24h, reason: "…" }` on a hooklog rule, or
 * `alerting.risk.rules.<rule id>` for rules loaded as published).
 *
 * Which user: a finding is about the user its events name, found once, when
 * the alert is made, and carried on the alert (`Alert.risk`), so whatever
 * folds alerts into risk states needs no rules and no events:
 *
 * - `user: actor` (default): the event's actor: `actor.id` is the user id,
 *   `actor.alternateId` the login; an actor whose `type` is not `User` (an
 *   API client, the system) makes no contribution.
 * - `user: target`: the first target whose `type` is `User` (an admin acting
 *   on a user: the user acted on is the one at risk).
 * - Scheduled rules: the result columns `id_column` and `login_column`.
 *
 * The event is the one that completed the finding. A rule across several
 * events must group by that user (its id or login path is in `group_by`;
 * for a temporal correlation, in every step's), or its events could name
 * different users: refused at load, as is an absence rule (its finding has
 * no event). Without a user id the alert carries no risk (counted).
 */
import { z } from 'zod';
import type { RiskEntity } from '../../../schemas/risk.js';
import { compilePath, firstString, resolve, type FieldPath } from '../fields.js';

const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d{1,6})(s|m|h|d)$/;
/** The longest a contribution may last: a year. */
const MAX_TTL_MS = 366 * 86_400_000;

export const riskDeclarationSchema = z
  .strictObject({
    entity: z.literal('user').default('user').describe('Whose risk: the user the finding is about (the only kind).'),
    level: z.enum(['low', 'medium', 'high']).describe('The level this finding holds the user at until it expires.'),
    ttl: z
      .string()
      .regex(DURATION, 'must be a duration: a whole number and s, m, h or d (30m, 24h, 7d)')
      .describe('How long the finding counts, from its event time: 30m, 24h, 7d (at most 366d).'),
    reason: z
      .string()
      .min(1)
      .max(1000)
      .describe('Why, for people: kept with the contribution and every change it makes (and a SET reason).'),
    user: z
      .enum(['actor', 'target'])
      .default('actor')
      .describe("Event rules: the event's actor, or its first target of type User (an admin acting on a user)."),
    id_column: z.string().min(1).default('user_id').describe("Scheduled rules: the result column with the user's id."),
    login_column: z
      .string()
      .min(1)
      .default('user_login')
      .describe("Scheduled rules: the result column with the user's login (optional in the result)."),
  })
  .describe("What a finding of this rule means for a user's risk level.");

export type RiskDeclaration = z.output<typeof riskDeclarationSchema>;

/** A user as a finding names it. */
export type RiskUser = Omit<RiskEntity, 'type'>;

export interface CompiledRisk {
  readonly level: RiskDeclaration['level'];
  readonly ttlMs: number;
  readonly reason: string;
  readonly user: RiskDeclaration['user'];
  readonly idColumn: string;
  readonly loginColumn: string;
  /** The user `event` names (per `user`), null when it names none. */
  entityOf(event: unknown): RiskUser | null;
}

/** What a declaration is checked against: the rule it is attached to. */
export interface RiskTarget {
  readonly id: string;
  readonly kind: string;
  readonly groupBy: readonly FieldPath[];
  readonly steps?: readonly { readonly groupBy: readonly FieldPath[] }[];
}

const P = {
  actorId: compilePath('actor.id'),
  actorLogin: compilePath('actor.alternateId'),
  actorType: compilePath('actor.type'),
  target: compilePath('target'),
  id: compilePath('id'),
  login: compilePath('alternateId'),
  type: compilePath('type'),
};

/** A user from a finding's values (also a scheduled rule's row); null without an id. */
export function user(id: string, login: string): RiskUser | null {
  // The limits of schemas/risk.ts: an id longer than any the service makes is not a user id.
  if (id === '' || id.length > 256) return null;
  return login === '' ? { id } : { id, login: login.slice(0, 512) };
}

function actorOf(event: unknown): RiskUser | null {
  const type = firstString(event, P.actorType);
  if (type !== '' && type.toLowerCase() !== 'user') return null;
  return user(firstString(event, P.actorId), firstString(event, P.actorLogin));
}

function targetOf(event: unknown): RiskUser | null {
  for (const t of resolve(event, P.target)) {
    if (firstString(t, P.type).toLowerCase() === 'user') return user(firstString(t, P.id), firstString(t, P.login));
  }
  return null;
}

/** `24h` → 86 400 000; null when not a duration. */
export function parseTtl(text: string): number | null {
  const m = DURATION.exec(text);
  return m ? Number(m[1]) * UNIT_MS[m[2]!]! : null;
}

const joined = (p: readonly string[]) => p.join('.');

/**
 * Compiles a declaration for `rule`; throws (message naming `where`) when it cannot say which user a finding is
 * about.
 */
export function compileRisk(input: unknown, rule: RiskTarget, where: string): CompiledRisk {
  const parsed = riskDeclarationSchema.safeParse(input);
  if (!parsed.success)
    throw new Error(
      `${where}: ${parsed.error.issues.map((i) => `${['risk', ...i.path].join('.')}: ${i.message}`).join('; ')}`,
    );
  const d = parsed.data;
  const ttlMs = parseTtl(d.ttl)!;
  if (ttlMs < 1000 || ttlMs > MAX_TTL_MS) throw new Error(`${where}: risk.ttl must be from 1s to 366d, got ${d.ttl}`);
  if (rule.kind === 'absence')
    throw new Error(`${where}: an absence rule's finding names no user, so it cannot declare risk`);
  if (rule.kind !== 'match' && rule.kind !== 'scheduled') {
    const own = new Set(
      (d.user === 'actor' ? ['actor.id', 'actor.alternateId'] : ['target.id', 'target.alternateId']).map((p) =>
        joined(compilePath(p)),
      ),
    );
    const groups = rule.kind === 'temporal' && rule.steps?.length ? rule.steps.map((s) => s.groupBy) : [rule.groupBy];
    const grouped = groups.every((g) => g.some((p) => own.has(joined(p))));
    if (!grouped)
      throw new Error(
        `${where}: a ${rule.kind} rule declaring risk must group by the ${d.user}'s id or login (group_by: [${d.user}.id] or [${d.user}.alternateId]), so all its events are about one user`,
      );
  }
  return {
    level: d.level,
    ttlMs,
    reason: d.reason,
    user: d.user,
    idColumn: d.id_column,
    loginColumn: d.login_column,
    entityOf: d.user === 'actor' ? actorOf : targetOf,
  };
}

/**
 * The rules with the config's risk declarations (alerting.risk.rules, by rule id) attached, each replacing the
 * rule's own. Throws naming the id when no rule has it or the declaration does not fit the rule.
 */
export function attachRisk<R extends RiskTarget & { readonly risk?: CompiledRisk }>(
  rules: readonly R[],
  byId: Readonly<Record<string, unknown>>,
): R[] {
  const ids = new Set(rules.map((r) => r.id));
  for (const id of Object.keys(byId))
    if (!ids.has(id)) throw new Error(`alerting.risk.rules.${id}: no loaded rule has this id`);
  return rules.map((r) =>
    Object.hasOwn(byId, r.id) ? { ...r, risk: compileRisk(byId[r.id], r, `alerting.risk.rules.${r.id}`) } : r,
  );
}
