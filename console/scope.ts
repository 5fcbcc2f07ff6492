/**
 * The orgs a read covers, as SQL: every read of org data is limited to what
 * the principal may see (platform/access.ts) before anything else filters it.
 */
import type { Principal } from '../platform/access.js';

/** `all`: an unscoped principal; otherwise exactly these orgs (possibly none). */
export interface Scope {
  readonly all: boolean;
  readonly orgs: readonly string[];
}

export function scopeOf(p: Principal): Scope {
  return p.orgs === 'all' ? { all: true, orgs: [] } : { all: false, orgs: p.orgs };
}

/** The narrowed scope for one org the caller has already checked the principal may see. */
export function oneOrg(org: string): Scope {
  return { all: false, orgs: [org] };
}

/** A condition on `column` (bound as {orgs:Array(String)}); `1` for an unscoped principal. */
export function orgCondition(column: string, s: Scope): string {
  return s.all ? '1' : `${column} IN {orgs:Array(String)}`;
}
