/**
 * Hook registration: the config's event and token hooks registered with the
 * identity service through its management API (`hooklog hooks plan | apply |
 * status`, cli/hooks-command.ts), and watched while hooklog runs (watch.ts).
 * This file reads one org: its management client, its hooks, the plan.
 */
import { HooklogError } from '../../platform/errors.js';
import type { Logger } from '../../platform/log.js';
import type { OrgIdentity } from '../../platform/identity/config.js';
import { openManagement } from '../../platform/identity/management.js';
import { IdpRetryPolicies, type IdpPolicies } from '../../platform/identity/policies.js';
import { describeFailure, failureLine } from './apply.js';
import { desiredHooks, type DesiredHook, type HookKind, type RegistrationInput } from './desired.js';
import { planOrg, type HookPlan, type OrgHooks } from './plan.js';
import { HookService, scopesFor, type RegisteredHook } from './service.js';

export { applyPlans, type HookOutcome } from './apply.js';
export { describePlan, type HookPlan } from './plan.js';

export interface OrgState {
  readonly org: string;
  readonly service: HookService | null;
  readonly hooks: OrgHooks;
  readonly plans: readonly HookPlan[];
  /** One line per configured hook when the org's hooks could not be read (one for the org when it has none). */
  readonly errors: readonly string[];
  /** What could not be shown and why, changing nothing (a kind listed only to show leftovers, not readable). */
  readonly notes: readonly string[];
}

export interface ReadOptions {
  /** read: plan, status, the watch. manage: apply (the OAuth token asks for these scopes). */
  readonly access: 'read' | 'manage';
  /** List both kinds and plan the removal of hooklog's hooks no longer configured. */
  readonly prune: boolean;
  readonly logger: Logger;
  readonly budgetDir?: string;
  readonly policies?: IdpPolicies;
  /** A client opened before for this org and these kinds (the watch keeps one: one OAuth token, one budget). */
  readonly service?: HookService;
  /** A command someone runs (plan, apply, status): each wait of a second or more for a share is logged at warn. */
  readonly announceWaits?: boolean;
  /**
   * Kinds to list besides the registered hooks' own, to show hooklog's hooks left there (`hookOrgs`). Best
   * effort: when they cannot be read (a scope or role the credentials lack), the plan says so in a note.
   */
  readonly alsoList?: ReadonlySet<HookKind>;
  /** Aborts the reads (the watch stopping): the read then fails with the abort's reason. */
  readonly signal?: AbortSignal;
}

/** An org the hook commands read: its registered hooks, and the kinds of hook to list there. */
export interface OrgScope {
  readonly desired: readonly DesiredHook[];
  readonly alsoList: ReadonlySet<HookKind>;
}

/** The orgs that manage a configured hook, each with its hooks (config order). */
export function hooksByOrg(cfg: RegistrationInput): Map<string, DesiredHook[]> {
  const by = new Map<string, DesiredHook[]>();
  for (const d of desiredHooks(cfg)) by.set(d.org, [...(by.get(d.org) ?? []), d]);
  return by;
}

/**
 * The orgs `hooks plan | apply | status` read: each org that manages a registered hook, and each org of a
 * configured hook without `register:` (one hooklog could register: its `register:` removed, hooklog's hook stays
 * there, by default in the hook's org, until `apply --prune` removes it). Listing that hook's kind is what lets plan
 * and status show it. `--org` may name any orgs[] entry (where else a leftover may be).
 */
export function hookOrgs(cfg: RegistrationInput, only?: string): Map<string, OrgScope> {
  const by = new Map<string, { desired: DesiredHook[]; alsoList: Set<HookKind> }>();
  const entry = (org: string) => {
    let e = by.get(org);
    if (!e) by.set(org, (e = { desired: [], alsoList: new Set() }));
    return e;
  };
  for (const d of desiredHooks(cfg)) entry(d.org).desired.push(d);
  const managed = new Set(cfg.orgs.map((o) => o.id));
  const unregistered = [
    ...cfg.event_hooks.filter((h) => !h.register).map((h) => ({ org: h.org, kind: 'event' as const })),
    ...cfg.token_hooks
      .filter((h) => !h.register && h.auth.type === 'header')
      .map((h) => ({ org: h.org, kind: 'inline' as const })),
  ];
  for (const u of unregistered) if (managed.has(u.org)) entry(u.org).alsoList.add(u.kind);
  if (only !== undefined && managed.has(only)) entry(only);
  if (only !== undefined) for (const id of [...by.keys()]) if (id !== only) by.delete(id);
  return by;
}

/** Reads one org's hooks and plans what apply would do there. Never throws: a failure is a line per hook. */
export async function readOrg(
  cfg: RegistrationInput,
  org: OrgIdentity,
  desired: readonly DesiredHook[],
  opts: ReadOptions,
): Promise<OrgState> {
  const needed = new Set<HookKind>(opts.prune ? ['event', 'inline'] : desired.map((d) => d.kind));
  const optional = [...(opts.alsoList ?? [])].filter((k) => !needed.has(k));
  // Nothing registered: the leftovers are all there is to read, so reading them is no longer best effort.
  if (needed.size === 0) for (const k of optional.splice(0)) needed.add(k);
  // The command's (or the watch pass's) bound on waiting for rate limits starts now; apply's calls share it.
  const waitUntilMs = Date.now() + (opts.policies ?? IdpRetryPolicies).commandWait.maxMs;
  let read = await listOrg(org, [...needed], optional, opts, waitUntilMs);
  // An OAuth service app is refused a token naming a scope it was not granted, whichever: ask again without those.
  if (read.failed && optional.length && !opts.service && isTokenRefusal(read.failed.err)) {
    read = await listOrg(org, [...needed], [], opts, waitUntilMs);
    read.notes.push(
      ...optional.map(
        (k) => `org ${org.id}: ${kindName(k)} not listed (${scopesFor([k], opts.access)[0]} not granted)${LEFT_UNSEEN}`,
      ),
    );
  }
  const { service, hooks, failed, notes } = read;
  if (failed) {
    const f = failed;
    const errors = desired.length
      ? desired.map((d) => failureLine(d, f.what, f.err))
      : [`org ${org.id}: ${f.what} failed: ${describeFailure(f.err)}`];
    return { org: org.id, service, hooks, plans: [], errors, notes };
  }
  const plans = planOrg(desired, hooks, { org: org.id, prefix: cfg.hook_registration.name_prefix, prune: opts.prune });
  return { org: org.id, service, hooks, plans, errors: [], notes };
}

const LEFT_UNSEEN = ": hooklog's own hooks of that kind no longer configured are not shown";
const kindName = (k: HookKind) => (k === 'event' ? 'event hooks' : 'inline hooks');
const isTokenRefusal = (err: unknown) => err instanceof HooklogError && err.code === 'IDP_AUTH_FAILED';

interface Listing {
  service: HookService | null;
  hooks: { event: RegisteredHook[] | null; inline: RegisteredHook[] | null };
  failed: { what: string; err: unknown } | null;
  notes: string[];
}

/** Lists the needed kinds (a failure fails the read) and the optional ones (a failure is a note). */
async function listOrg(
  org: OrgIdentity,
  needed: readonly HookKind[],
  optional: readonly HookKind[],
  opts: ReadOptions,
  waitUntilMs: number,
): Promise<Listing> {
  const out: Listing = { service: null, hooks: { event: null, inline: null }, failed: null, notes: [] };
  try {
    out.service =
      opts.service ??
      new HookService(
        await openManagement({
          org,
          scopes: scopesFor([...needed, ...optional], opts.access),
          logger: opts.logger,
          ...(opts.budgetDir ? { budgetDir: opts.budgetDir } : {}),
          ...(opts.policies ? { policies: opts.policies } : {}),
          ...(opts.announceWaits ? { announceWaits: true } : {}),
        }),
      );
    out.service.limitWaits(waitUntilMs);
    for (const kind of [...needed, ...optional]) {
      try {
        out.hooks[kind] = await out.service.list(kind, opts.signal);
      } catch (err) {
        if (needed.includes(kind)) {
          out.failed = { what: `list ${kindName(kind)}`, err };
          break;
        }
        out.notes.push(`org ${org.id}: ${kindName(kind)} not listed (${describeFailure(err)})${LEFT_UNSEEN}`);
      }
    }
  } catch (err) {
    out.failed = { what: 'connect', err };
  }
  return out;
}
