/**
 * Each responding org's management client, opened once per process on first
 * use and shared by the transmitter and the executor, so SETs and actions of
 * one org spend one set of budgets (`orgs[].management.rate_limit_share` of
 * each family's bucket, in the host-wide ledger under `<data_dir>/rate-budget`).
 * The OAuth token asks for the scopes of the org's allowed actions only.
 */
import { HooklogError } from '../../platform/errors.js';
import type { OrgIdentity } from '../../platform/identity/config.js';
import { openManagement, type Management } from '../../platform/identity/management.js';
import type { IdpPolicies } from '../../platform/identity/policies.js';
import type { Logger } from '../../platform/log.js';
import type { ResponseOrgConfig } from './config.js';
import { scopesFor } from './perform.js';

export interface OrgManagement {
  open(org: string): Promise<Management>;
  /** The org's base_url (SET audience and iss_sub issuer). */
  baseUrl(org: string): string;
}

export function orgManagement(opts: {
  readonly identities: ReadonlyMap<string, OrgIdentity>;
  readonly orgs: ReadonlyMap<string, ResponseOrgConfig>;
  readonly logger: Logger;
  readonly budgetDir?: string;
  readonly policies?: IdpPolicies;
}): OrgManagement {
  const opened = new Map<string, Promise<Management>>();
  const identity = (org: string): OrgIdentity => {
    const id = opts.identities.get(org);
    if (!id) throw new HooklogError('CONFIG_INVALID', `response.orgs: org "${org}" is not in orgs`);
    return id;
  };
  return {
    baseUrl: (org) => identity(org).base_url,
    open(org) {
      let m = opened.get(org);
      if (!m) {
        const allowed = opts.orgs.get(org)?.actions.allow ?? [];
        m = openManagement({
          org: identity(org),
          scopes: scopesFor(allowed),
          logger: opts.logger,
          ...(opts.budgetDir ? { budgetDir: opts.budgetDir } : {}),
          ...(opts.policies ? { policies: opts.policies } : {}),
        });
        // A failure (a key that cannot be read) is not cached: the next record tries again.
        m.catch(() => opened.delete(org));
        opened.set(org, m);
      }
      return m;
    },
  };
}
