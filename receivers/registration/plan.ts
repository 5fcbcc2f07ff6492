/**
 * What `hooks apply` would do for one org: the config's hooks against the
 * hooks the service holds, hook by hook. Pure.
 *
 * - hooklog's own hooks are recognised by name (`<name_prefix><id>`) and
 *   proven by the `x-hooklog-secret-id` header it registers with each (no one
 *   else sends it). Any other hook is never touched, and counts only against
 *   the inline limit; one that merely has such a name (another admin's, with
 *   another URI and secret) is named in the plan as left alone: apply neither
 *   takes it over with an update nor deletes it as a duplicate.
 * - A missing hook is created (ACTIVE; an event hook is then verified); one
 *   that differs is replaced whole (PUT), and verified again when its channel
 *   changed; an INACTIVE one is activated; an UNVERIFIED event hook verified.
 * - hooklog's hooks that are no longer configured (and duplicates of a name)
 *   are removed only with `prune`: deactivated, then deleted (the service
 *   deletes only INACTIVE hooks). Deletions come before creations, so pruning
 *   makes room under the limit of 10 inline hooks per org.
 */
import {
  SECRET_ID_HEADER,
  TOKEN_TRANSFORM,
  hookLabel,
  normalUri,
  secretId,
  type DesiredHook,
  type HookKind,
} from './desired.js';
import type { RegisteredHook } from './service.js';

export const INLINE_HOOK_LIMIT = 10;

export type Step = 'create' | 'update' | 'verify' | 'activate' | 'deactivate' | 'delete';

/** How a registered hook stands against its config. */
export interface Drift {
  /** What differs from the config ("events +a -b", "uri", "secret", …); empty when it matches. */
  readonly differences: readonly string[];
  /** Whether a difference is in the channel (the service then wants it verified again). */
  readonly channelChanged: boolean;
  readonly active: boolean;
  /** Null for inline hooks (never verified). */
  readonly verified: boolean | null;
  /** Which configured secret the service holds, by its id; null when neither. */
  readonly secret: 1 | 2 | null;
}

export interface HookPlan {
  readonly kind: HookKind;
  /** hooklog's id of the hook, or the registered name of one no longer configured. */
  readonly id: string;
  readonly org: string;
  readonly desired: DesiredHook | null;
  readonly registered: RegisteredHook | null;
  readonly drift: Drift | null;
  readonly steps: readonly Step[];
  readonly notes: readonly string[];
  /** Why apply will not do this one (the inline-hook limit). */
  readonly refused: string | null;
  /** Why hooklog leaves alone a hook named like its own: nothing shows hooklog made it. Null for hooklog's. */
  readonly foreign: string | null;
}

/** The org's hooks as listed; null for a kind that was not listed. */
export interface OrgHooks {
  readonly event: readonly RegisteredHook[] | null;
  readonly inline: readonly RegisteredHook[] | null;
}

export function compare(d: DesiredHook, r: RegisteredHook): Drift {
  const differences: string[] = [];
  let channelChanged = false;
  const channel = (what: string) => {
    differences.push(what);
    channelChanged = true;
  };
  if (d.kind === 'event') {
    const have = new Set(r.events?.items ?? []);
    const want = new Set(d.eventTypes);
    const added = [...want].filter((t) => !have.has(t));
    const removed = [...have].filter((t) => !want.has(t));
    if (added.length || removed.length)
      differences.push(`events ${[...added.map((t) => `+${t}`), ...removed.map((t) => `-${t}`)].join(' ')}`);
  } else if (r.type !== TOKEN_TRANSFORM) differences.push(`type ${r.type ?? '(none)'}`);
  const c = r.channel.config;
  if (r.channel.type !== 'HTTP') channel(`channel type ${r.channel.type}`);
  if (normalUri(c.uri) !== d.uri) channel(`uri ${c.uri}`);
  const key = c.authScheme?.key ?? null;
  if (key?.toLowerCase() !== d.header.toLowerCase()) channel(`auth header ${key ?? '(none)'}`);
  const headers = c.headers ?? [];
  const id = headers.find((h) => h.key.toLowerCase() === SECRET_ID_HEADER)?.value ?? null;
  const secret =
    id === secretId(d.secrets[0]!) ? 1 : d.secrets[1] !== undefined && id === secretId(d.secrets[1]) ? 2 : null;
  if (secret === 2) channel('secret: the service holds the second (old) one');
  else if (secret === null) channel('secret: not one of auth.secrets');
  const foreign = headers.filter((h) => h.key.toLowerCase() !== SECRET_ID_HEADER).map((h) => h.key);
  if (foreign.length) channel(`headers ${foreign.join(', ')}`);
  return {
    differences,
    channelChanged,
    active: r.status === 'ACTIVE',
    verified: d.kind === 'event' ? r.verificationStatus === 'VERIFIED' : null,
    secret,
  };
}

/**
 * Whether hooklog made a hook: it registers each with its secret-id header (16 hex digits), which no one else
 * sends. A name alone proves nothing: anyone may name a hook `hooklog:main`.
 */
export function madeByHooklog(r: RegisteredHook): boolean {
  return (r.channel.config.headers ?? []).some(
    (h) => h.key.toLowerCase() === SECRET_ID_HEADER && /^[0-9a-f]{16}$/.test(h.value ?? ''),
  );
}

/** A value another admin chose (a hook's name, URI), shown bounded, quoted, and with invisible characters drawn. */
export function shown(v: string, max = 120): string {
  const chars = [...v];
  const cut = chars.length > max ? `${chars.slice(0, max).join('')}…` : v;
  return `"${cut.replace(/[\p{C}"\\]/gu, (c) => (c === '"' || c === '\\' ? `\\${c}` : `\\u{${c.codePointAt(0)!.toString(16)}}`))}"`;
}

/** The steps that bring a registered hook (or none) to its config. */
function stepsFor(d: DesiredHook, r: RegisteredHook | null, drift: Drift | null): Step[] {
  if (!r || !drift) return d.kind === 'event' ? ['create', 'verify'] : ['create'];
  const steps: Step[] = [];
  if (drift.differences.length) steps.push('update');
  if (d.kind === 'event' && (drift.channelChanged || !drift.verified)) steps.push('verify');
  if (!drift.active) steps.push('activate');
  return steps;
}

export function planOrg(
  desired: readonly DesiredHook[],
  hooks: OrgHooks,
  opts: { readonly org: string; readonly prefix: string; readonly prune: boolean },
): HookPlan[] {
  const plans: HookPlan[] = [];
  const claimed = new Set<string>();
  for (const d of desired) {
    const same = (hooks[d.kind] ?? []).filter((r) => r.name === d.name && madeByHooklog(r));
    const r = same[0] ?? null;
    if (r) claimed.add(r.id);
    const drift = r ? compare(d, r) : null;
    const notes: string[] = [];
    if (drift?.secret === 1 && d.secrets.length === 2)
      notes.push(
        'the service holds the first secret: once no delivery carries the second, remove it from auth.secrets',
      );
    plans.push({
      kind: d.kind,
      id: d.id,
      org: opts.org,
      desired: d,
      registered: r,
      drift,
      steps: stepsFor(d, r, drift),
      notes,
      refused: null,
      foreign: null,
    });
  }
  // hooklog's hooks no one configures any more, and second hooks of one name (the oldest listed is kept); hooks
  // only named like them are listed, to be left alone.
  const orphans: HookPlan[] = (['event', 'inline'] as const).flatMap((kind) =>
    (hooks[kind] ?? [])
      .filter((r) => r.name.startsWith(opts.prefix) && !claimed.has(r.id))
      .map((r): HookPlan => {
        const common = { kind, org: opts.org, desired: null, registered: r, drift: null, refused: null };
        if (!madeByHooklog(r))
          return {
            ...common,
            id: shown(r.name, 80).slice(1, -1),
            steps: [],
            notes: [],
            foreign: `named like hooklog's hooks, but not made by hooklog (no ${SECRET_ID_HEADER} header; it calls ${shown(r.channel.config.uri)}): rename it, or give hooklog another hook_registration.name_prefix`,
          };
        return {
          ...common,
          id: r.name,
          steps: opts.prune ? ([...(r.status === 'ACTIVE' ? ['deactivate'] : []), 'delete'] as Step[]) : [],
          notes: opts.prune ? [] : ['not in the config; `hooklog hooks apply --prune` deactivates and deletes it'],
          foreign: null,
        };
      }),
  );
  // The inline-hook limit counts every inline hook of the org, hooklog's or not.
  let inline =
    (hooks.inline?.length ?? 0) - orphans.filter((o) => o.kind === 'inline' && o.steps.includes('delete')).length;
  const limited = plans.map((p) => {
    if (p.kind !== 'inline' || !p.steps.includes('create')) return p;
    if (inline < INLINE_HOOK_LIMIT) {
      inline++;
      return p;
    }
    const ownOrphans = orphans.some((o) => o.kind === 'inline' && !o.foreign && !opts.prune);
    return {
      ...p,
      steps: [],
      refused:
        `the org has ${inline} inline hooks and the service allows ${INLINE_HOOK_LIMIT} per org (all types); delete one it no longer needs` +
        (ownOrphans ? " (`hooklog hooks apply --prune` deletes hooklog's own that are no longer configured)" : ''),
    };
  });
  return [...orphans, ...limited];
}

/** One line for a hook's plan, like a diff: + create, ~ change, - delete, = in sync, ! refused, ? left alone. */
export function describePlan(p: HookPlan): string {
  const who = `${hookLabel(p)} (org ${p.org}${p.registered ? `, ${p.registered.id}` : ''})`;
  if (p.refused) return `! ${who}: cannot create: ${p.refused}`;
  if (p.foreign) return `? ${who}: left alone: ${p.foreign}`;
  if (!p.desired)
    return p.steps.length ? `- ${who}: ${p.steps.join(', ')} (not in the config)` : `? ${who}: ${p.notes.join('; ')}`;
  const notes = p.notes.length ? ` [${p.notes.join('; ')}]` : '';
  if (!p.registered) {
    const what = p.kind === 'event' ? ` [${p.desired.eventTypes.join(', ')}]` : '';
    return `+ ${who}: ${p.steps.join(', ')} "${p.desired.name}" -> ${p.desired.uri}${what}`;
  }
  if (p.steps.length === 0) return `= ${who}: in sync (${stateOf(p.registered)})${notes}`;
  const why = [
    ...(p.drift?.differences ?? []),
    ...(p.drift?.active ? [] : ['INACTIVE']),
    ...(p.drift?.verified === false ? ['UNVERIFIED'] : []),
  ];
  return `~ ${who}: ${p.steps.join(', ')} (${why.join('; ')})${notes}`;
}

export function stateOf(r: RegisteredHook): string {
  return [r.status, ...(r.verificationStatus ? [r.verificationStatus] : [])].join(', ');
}
