/**
 * Who may see which org: the one decision every route that reads or changes
 * org data makes (the query API, the console's pages, its JSON API and its
 * exports). A principal is a signed-in console user (orgs and role from the
 * identity service's group claim) or an API key (orgs and role from config).
 * Anything of an org the principal may not see answers 404, exactly as if it
 * did not exist: a 403 would confirm the org (or the alert, the user) is there.
 */
import { z } from 'zod';
import { secret } from './config/secrets.js';
import { SecretMatcher } from './secret-matcher.js';

export const ROLES = ['analyst', 'viewer'] as const;
/** `analyst` may change alerts (acknowledge, assign, close); `viewer` only reads. */
export type Role = (typeof ROLES)[number];

export interface Principal {
  /** `user`: signed in through the identity service; `key`: an API key. */
  readonly kind: 'user' | 'key';
  /** Who, for the audit trail: the user's subject (and login), or the key's name. */
  readonly id: string;
  readonly name: string;
  /** The orgs it may see, or `all` (a bare API key, as before orgs were scoped). */
  readonly orgs: readonly string[] | 'all';
  readonly role: Role;
}

/** The decision: may `p` see anything of `org`? */
export function maySeeOrg(p: Principal, org: string): boolean {
  return p.orgs === 'all' || p.orgs.includes(org);
}

/** The org a query names when it means every org (`org=*`). */
export const EVERY_ORG = '*';

/**
 * May `p` read what a query names as its org: one org it may see, or `*` (every org) only when it may see
 * every org. A principal scoped to orgs never reads `*`, not even one scoped to an org named "*".
 */
export function mayReadOrgs(p: Principal, org: string): boolean {
  return org === EVERY_ORG ? p.orgs === 'all' : maySeeOrg(p, org);
}

/** May `p` change things (alert states) of `org`? Seeing it and holding the analyst role. */
export function mayChangeOrg(p: Principal, org: string): boolean {
  return maySeeOrg(p, org) && p.role === 'analyst';
}

/** The orgs of `known` that `p` may see (all of them for an unscoped principal). */
export function visibleOrgs(p: Principal, known: readonly string[]): string[] {
  return known.filter((o) => maySeeOrg(p, o));
}

const KEY_MIN = 24;

/** One entry of `api.keys`: a bare key (every org, read-only) or a key scoped to orgs with a role. */
export const apiKeySchema = z.union([
  secret(z.string().min(KEY_MIN, `API keys must be at least ${KEY_MIN} characters`)),
  z
    .strictObject({
      name: z
        .string()
        .min(1)
        .max(64)
        .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-"')
        .describe('Names the key in the audit trail and logs (never the key itself).'),
      secret: secret(
        z
          .string()
          .min(KEY_MIN, `API keys must be at least ${KEY_MIN} characters`)
          .describe('The key, sent as "Authorization: Bearer <key>" (use ${ENV_VAR}).'),
      ),
      orgs: z.array(z.string().min(1)).min(1).describe('The orgs this key may read (and, as analyst, change).'),
      role: z.enum(ROLES).default('viewer').describe('viewer: read only; analyst: may also change alert states.'),
    })
    .describe('A key scoped to orgs: anything of another org answers 404.'),
]);
export type ApiKeyEntry = z.output<typeof apiKeySchema>;

/**
 * The configured keys, matched in constant time. A bare string key keeps its
 * old meaning (every org) and reads only; a scoped key carries its orgs and role.
 */
export class ApiKeyring {
  readonly #entries: ReadonlyArray<{ readonly matcher: SecretMatcher; readonly principal: Principal }>;

  constructor(keys: readonly ApiKeyEntry[]) {
    this.#entries = keys.map((k, i) =>
      typeof k === 'string'
        ? {
            matcher: new SecretMatcher([k]),
            principal: { kind: 'key', id: `api-key-${i}`, name: `api key #${i}`, orgs: 'all', role: 'viewer' },
          }
        : {
            matcher: new SecretMatcher([k.secret]),
            principal: { kind: 'key', id: k.name, name: k.name, orgs: [...k.orgs], role: k.role },
          },
    );
  }

  get size(): number {
    return this.#entries.length;
  }

  /** The principal whose key `presented` is, or undefined. Every key is compared whatever matches. */
  principalFor(presented: string | undefined): Principal | undefined {
    let found: Principal | undefined;
    for (const e of this.#entries) if (e.matcher.matches(presented) && !found) found = e.principal;
    return found;
  }
}

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return m?.[1];
}
