/**
 * Hook registration: the config's event and token hooks registered with the
 * identity service through its management API (`hooklog hooks plan | apply |
 * status`, cli/hooks-command.ts), and watched while hooklog runs (watch.ts).
 * This file reads one org: its management client, its hooks, the plan.
 */
import type { Logger } from '../../platform/log.js';
import type { OrgIdentity } from '../../platform/identity/config.js';
import { openManagement } from '../../platform/identity/management.js';
import { IdpRetryPolicies, type IdpPolicies } from '../../platform/identity/policies.js';
import { failureLine } from './apply.js';
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
  /** One line per configured hook when the org's hooks could not be read. */
  readonly errors: readonly string[];
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
}

/** The orgs that manage a configured hook, each with its hooks (config order). */
export function hooksByOrg(cfg: RegistrationInput): Map<string, DesiredHook[]> {
  const by = new Map<string, DesiredHook[]>();
  for (const d of desiredHooks(cfg)) by.set(d.org, [...(by.get(d.org) ?? []), d]);
  return by;
}

/** Reads one org's hooks and plans what apply would do there. Never throws: a failure is a line per hook. */
export async function readOrg(
  cfg: RegistrationInput,
  org: OrgIdentity,
  desired: readonly DesiredHook[],
  opts: ReadOptions,
): Promise<OrgState> {
  const kinds = new Set<HookKind>(opts.prune ? ['event', 'inline'] : desired.map((d) => d.kind));
  const hooks: { event: RegisteredHook[] | null; inline: RegisteredHook[] | null } = { event: null, inline: null };
  let service: HookService | null = null;
  let failed: { what: string; err: unknown } | null = null;
  // The command's (or the watch pass's) bound on waiting for rate limits starts now; apply's calls share it.
  const waitUntilMs = Date.now() + (opts.policies ?? IdpRetryPolicies).commandWait.maxMs;
  try {
    service =
      opts.service ??
      new HookService(
        await openManagement({
          org,
          scopes: scopesFor(kinds, opts.access),
          logger: opts.logger,
          ...(opts.budgetDir ? { budgetDir: opts.budgetDir } : {}),
          ...(opts.policies ? { policies: opts.policies } : {}),
          ...(opts.announceWaits ? { announceWaits: true } : {}),
        }),
      );
    service.limitWaits(waitUntilMs);
    for (const kind of kinds) {
      try {
        hooks[kind] = await service.list(kind);
      } catch (err) {
        failed = { what: `list ${kind === 'event' ? 'event' : 'inline'} hooks`, err };
        break;
      }
    }
  } catch (err) {
    failed = { what: 'connect', err };
  }
  if (failed) {
    const f = failed;
    return { org: org.id, service, hooks, plans: [], errors: desired.map((d) => failureLine(d, f.what, f.err)) };
  }
  const plans = planOrg(desired, hooks, { org: org.id, prefix: cfg.hook_registration.name_prefix, prune: opts.prune });
  return { org: org.id, service, hooks, plans, errors: [] };
}
