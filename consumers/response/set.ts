/**
 * A risk change as a Security Event Token's claims (RFC 8417): the vendor's
 * user-risk-change event about one user, addressed to one org. Pure: the same
 * change gives the same `jti` wherever and however often it is derived, so a
 * receiver recognises a repeat whoever sent it.
 */
import { createHash } from 'node:crypto';
import type { RiskChange, RiskLevel } from '../../schemas/risk.js';
import type { ResponseOrgConfig } from './config.js';

/** The levels the vendor's event takes: hooklog's `none` is its lowest, `low`. */
export type VendorLevel = 'low' | 'medium' | 'high';

export function vendorLevel(level: RiskLevel): VendorLevel {
  return level === 'none' ? 'low' : level;
}

/** The SET's `jti`: 32 hex of sha256 over the org and the change id (stable, unique per change and org). */
export function setJti(org: string, changeId: string): string {
  return createHash('sha256').update(`hooklog-set\n${org}\n${changeId}`).digest('hex').slice(0, 32);
}

/** RFC 9493 subject identifiers, as the vendor's complex subject's `user` member. */
type UserSubject = { format: 'email'; email: string } | { format: 'iss_sub'; iss: string; sub: string };

export interface SetContext {
  readonly issuer: string;
  readonly eventType: string;
  /** The org's base_url: the default audience, and the `iss` of an iss_sub subject (who issued the user id). */
  readonly orgUrl: string;
  readonly settings: ResponseOrgConfig['security_events'];
}

export interface SetClaims {
  readonly iss: string;
  readonly aud: string;
  readonly jti: string;
  readonly iat: number;
  readonly events: Record<string, UserRiskChangeEvent>;
}

export interface UserRiskChangeEvent {
  readonly subject: { readonly user: UserSubject };
  readonly current_level: VendorLevel;
  readonly previous_level: VendorLevel;
  readonly event_timestamp: number;
  readonly initiating_entity: string;
  readonly reason_admin: { readonly en: string };
  readonly reason_user: { readonly en: string };
}

/**
 * The claims of the SET for `change`, issued at `nowMs`; null when the vendor
 * would see no change (none → low, low → none: both are its `low`).
 */
export function setClaims(change: RiskChange, ctx: SetContext, nowMs: number): SetClaims | null {
  const current = vendorLevel(change.current);
  const previous = vendorLevel(change.previous);
  if (current === previous) return null;
  const s = ctx.settings;
  const user: UserSubject =
    s.subject === 'email' && change.entity.login
      ? { format: 'email', email: change.entity.login }
      : { format: 'iss_sub', iss: ctx.orgUrl.replace(/\/+$/, ''), sub: change.entity.id };
  const at = Date.parse(change.at);
  return {
    iss: ctx.issuer,
    aud: s.audience ?? ctx.orgUrl.replace(/\/+$/, ''),
    jti: setJti(change.org, change.change_id),
    iat: Math.floor(nowMs / 1000),
    events: {
      [ctx.eventType]: {
        subject: { user },
        current_level: current,
        previous_level: previous,
        event_timestamp: Math.floor((Number.isFinite(at) ? at : nowMs) / 1000),
        initiating_entity: s.initiating_entity,
        reason_admin: { en: (change.reason || `rule ${change.rule_id}`).slice(0, 500) },
        reason_user: { en: s.reason_user },
      },
    },
  };
}
