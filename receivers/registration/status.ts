/**
 * `hooks status` rows, and the per-hook health the watch reports as metrics:
 * registered, active, verified, matches the config. Pure.
 */
import type { OrgState } from './index.js';
import type { HookPlan } from './plan.js';

export interface StatusRow {
  readonly org: string;
  readonly kind: 'event' | 'token';
  readonly hook: string;
  readonly id: string;
  readonly status: string;
  readonly verification: string;
  readonly events: string;
  readonly uri: string;
  readonly drift: string;
}

export interface Health {
  readonly registered: boolean;
  readonly active: boolean;
  /** Inline hooks are never verified: null. */
  readonly verified: boolean | null;
  readonly matches: boolean;
}

export function healthOf(p: HookPlan): Health {
  const r = p.registered;
  return {
    registered: r !== null,
    active: r?.status === 'ACTIVE',
    verified: p.kind === 'event' ? r?.verificationStatus === 'VERIFIED' : null,
    matches: r !== null && (p.drift?.differences.length ?? 1) === 0,
  };
}

/** What is wrong with a hook, in a few words; "none" when nothing is. */
export function driftOf(p: HookPlan): string {
  if (p.foreign) return "not hooklog's: left alone";
  if (!p.desired) return p.steps.length ? 'not in the config' : 'not in the config (hooks apply --prune deletes it)';
  if (!p.registered) return 'not registered';
  const h = healthOf(p);
  const parts = [
    ...(h.active ? [] : ['INACTIVE']),
    ...(h.verified === false ? ['UNVERIFIED'] : []),
    ...(p.drift?.differences ?? []),
  ];
  return parts.length ? parts.join('; ') : 'none';
}

export function statusRows(states: readonly OrgState[]): StatusRow[] {
  return states.flatMap((s) =>
    s.plans.map((p) => {
      const r = p.registered;
      return {
        org: s.org,
        kind: p.kind === 'event' ? 'event' : 'token',
        hook: p.id,
        id: r?.id ?? '-',
        status: r?.status ?? '-',
        verification: p.kind === 'event' ? (r?.verificationStatus ?? '-') : 'n/a',
        events: p.kind === 'event' ? (r?.events?.items ?? []).join(',') || '-' : (r?.type ?? '-'),
        uri: r?.channel.config.uri ?? p.desired?.uri ?? '-',
        drift: driftOf(p),
      };
    }),
  );
}

/** Hooks of the org that are not hooklog's, by kind ("2 event hooks, 3 inline hooks"), or null. */
export function othersOf(s: OrgState, prefix: string): string | null {
  const count = (list: OrgState['hooks']['event']) => (list ?? []).filter((r) => !r.name.startsWith(prefix)).length;
  const [e, i] = [count(s.hooks.event), count(s.hooks.inline)];
  if (e + i === 0) return null;
  const n = (k: number, what: string) => `${k} ${what}${k === 1 ? '' : 's'}`;
  return [e ? n(e, 'event hook') : '', i ? n(i, 'inline hook') : ''].filter(Boolean).join(', ');
}
