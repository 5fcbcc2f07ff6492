/**
 * The directory's read calls (seed 000 §4.1–4.3): users, their groups and administrator roles, and groups with
 * their members and roles — what the identity sync (ingest/identity/) reads. Every call goes through the one
 * `IdentityClient` (budget, auth, 429 until Reset plus jitter, transient retries) with the endpoint family's own
 * budget: `users` for /api/v1/users…, `groups` for /api/v1/groups…, as the service limits them.
 *
 * Lists page by the `rel="next"` Link exactly as given (never rebuilt), and only on the org's origin and the same
 * path: a next link elsewhere would hand the token to another host. Each item is validated (zod) and bounded: an
 * id, status or timestamp that is missing or over `IDENTITY_LIMITS.text` makes the item invalid (skipped, told to
 * `onInvalid` with IDP_REPLY_INVALID, never thrown: one odd user must not stop an org's sync); a login or group
 * name longer than that is cut to it.
 */
import { z } from 'zod';
import { HooklogError } from '../errors.js';
import { IDENTITY_LIMITS } from '../../schemas/identity.js';
import type { IdentityClient, Page } from './client.js';
import type { RateBudget } from './rate-limit.js';

/** Items per page asked for: the most the service gives (seed §8: 200 for the groups list). */
export const DIRECTORY_PAGE_LIMIT = 200;

/** The OAuth scopes the sync needs (an SSWS token needs an admin role that may read users, groups and roles). */
export const DIRECTORY_SCOPES = ['okta.users.read', 'okta.groups.read', 'okta.roles.read'] as const;

export interface DirectoryUser {
  readonly id: string;
  readonly status: string;
  /** ISO-8601, as the service sent it. */
  readonly lastUpdated: string;
  readonly login?: string;
}

export interface DirectoryGroup {
  readonly id: string;
  readonly name: string;
}

const max = IDENTITY_LIMITS.text;
const cut = z
  .string()
  .transform((s) => (s.length > max ? s.slice(0, max) : s))
  .optional()
  .catch(undefined);
const id = z.string().min(1).max(max);
const timestamp = z
  .string()
  .max(64)
  .refine((s) => !Number.isNaN(Date.parse(s)), 'not a timestamp');

const userItem = z.object({
  id,
  status: z.string().min(1).max(max),
  lastUpdated: timestamp,
  profile: z.object({ login: cut }).nullish(),
});
const groupItem = z.object({ id, profile: z.object({ name: cut }).nullish() });
const roleItem = z.object({ type: z.string().min(1).max(max) });

export interface DirectoryReaderOptions {
  readonly client: IdentityClient;
  /** The org's origin. */
  readonly baseUrl: string;
  readonly budgets: { readonly users: RateBudget; readonly groups: RateBudget };
  readonly signal?: AbortSignal;
  /** An item skipped because it is not what the API documents (IDP_REPLY_INVALID). */
  readonly onInvalid?: (err: HooklogError) => void;
}

const NEEDS = {
  users: 'okta.users.read (an OAuth service app) or an admin role that may read users (an API token)',
  groups: 'okta.groups.read (an OAuth service app) or an admin role that may read groups (an API token)',
  roles: 'okta.roles.read (an OAuth service app) or an admin role that may read role assignments (an API token)',
} as const;

export class DirectoryReader {
  readonly #o: DirectoryReaderOptions;
  readonly #origin: string;

  constructor(opts: DirectoryReaderOptions) {
    this.#o = opts;
    this.#origin = new URL(opts.baseUrl).origin;
  }

  /** Every user (or those whose `lastUpdated` is after `updatedAfter`), page by page. */
  users(updatedAfter?: number): AsyncGenerator<DirectoryUser[]> {
    const q: Record<string, string> = { limit: String(DIRECTORY_PAGE_LIMIT) };
    if (updatedAfter !== undefined) q.filter = `lastUpdated gt "${filterTime(updatedAfter)}"`;
    return this.#pages('/api/v1/users', q, 'users', NEEDS.users, (v) => toUser(userItem.safeParse(v)));
  }

  /** Every group, page by page. */
  groups(): AsyncGenerator<DirectoryGroup[]> {
    const q = { limit: String(DIRECTORY_PAGE_LIMIT) };
    return this.#pages('/api/v1/groups', q, 'groups', NEEDS.groups, (v) => toGroup(groupItem.safeParse(v)));
  }

  /** A group's members' ids, page by page. */
  async *groupMembers(groupId: string): AsyncGenerator<string[]> {
    const q = { limit: String(DIRECTORY_PAGE_LIMIT) };
    const path = `/api/v1/groups/${encodeURIComponent(groupId)}/users`;
    for await (const page of this.#pages(path, q, 'groups', NEEDS.groups, (v) => toUser(userItem.safeParse(v))))
      yield page.map((u) => u.id);
  }

  /** The groups a user is a member of; at most `limit` of them, and whether there were more. */
  async userGroups(userId: string, limit: number): Promise<{ groups: DirectoryGroup[]; truncated: boolean }> {
    const groups: DirectoryGroup[] = [];
    const path = `/api/v1/users/${encodeURIComponent(userId)}/groups`;
    const q = { limit: String(DIRECTORY_PAGE_LIMIT) };
    for await (const page of this.#pages(path, q, 'users', NEEDS.users, (v) => toGroup(groupItem.safeParse(v)))) {
      groups.push(...page);
      // Past the limit the rest is not read: the record says it was cut.
      if (groups.length > limit) return { groups: groups.slice(0, limit), truncated: true };
    }
    return { groups, truncated: false };
  }

  /** The role types a user holds, directly or through a group (as the service lists them). */
  userRoles(userId: string): Promise<string[]> {
    return this.#roles(`/api/v1/users/${encodeURIComponent(userId)}/roles`, 'users');
  }

  /** The role types assigned to a group (each member holds them). */
  groupRoles(groupId: string): Promise<string[]> {
    return this.#roles(`/api/v1/groups/${encodeURIComponent(groupId)}/roles`, 'groups');
  }

  async #roles(path: string, family: 'users' | 'groups'): Promise<string[]> {
    const types: string[] = [];
    for await (const page of this.#pages(path, {}, family, NEEDS.roles, (v) => {
      const r = roleItem.safeParse(v);
      return r.success ? r.data.type : r.error;
    }))
      types.push(...page);
    return types;
  }

  /** Pages of one list: the first URL from `path` and `query`, then each `next` link as given. */
  async *#pages<T>(
    path: string,
    query: Record<string, string>,
    family: 'users' | 'groups',
    needs: string,
    item: (v: unknown) => T | z.ZodError,
  ): AsyncGenerator<T[]> {
    const qs = new URLSearchParams(query).toString();
    let url: string | null = `${this.#origin}${path}${qs ? `?${qs}` : ''}`;
    while (url !== null) {
      const page: Page = await this.#o.client.getPage(url, {
        budget: this.#o.budgets[family],
        needs,
        ...(this.#o.signal ? { signal: this.#o.signal } : {}),
      });
      const out: T[] = [];
      for (const [i, v] of page.items.entries()) {
        const r = item(v);
        if (r instanceof z.ZodError) {
          this.#o.onInvalid?.(
            new HooklogError(
              'IDP_REPLY_INVALID',
              `org ${this.#o.client.org}: GET ${path}: item ${i} skipped: ${r.issues
                .slice(0, 3)
                .map((x) => `${x.path.join('.') || '(item)'}: ${x.message}`)
                .join('; ')}`,
            ),
          );
        } else out.push(r);
      }
      yield out;
      url = page.next === null ? null : this.#followable(page.next, path);
    }
  }

  /** A next link on the org's origin and the list's own path, or IDP_REQUEST_REJECTED. */
  #followable(next: string, path: string): string {
    let u: URL | null;
    try {
      u = new URL(next);
    } catch {
      u = null;
    }
    if (u === null || u.origin !== this.#origin || u.pathname !== path)
      throw new HooklogError(
        'IDP_REQUEST_REJECTED',
        `org ${this.#o.client.org}: GET ${path}: the next link leaves the org's origin or the list (${JSON.stringify(next.slice(0, 200))}); not followed`,
      );
    return next;
  }
}

function toUser(r: z.ZodSafeParseResult<z.output<typeof userItem>>): DirectoryUser | z.ZodError {
  if (!r.success) return r.error;
  const login = r.data.profile?.login;
  return {
    id: r.data.id,
    status: r.data.status,
    lastUpdated: r.data.lastUpdated,
    ...(login ? { login } : {}),
  };
}

function toGroup(r: z.ZodSafeParseResult<z.output<typeof groupItem>>): DirectoryGroup | z.ZodError {
  if (!r.success) return r.error;
  return { id: r.data.id, name: r.data.profile?.name ?? '' };
}

/** The filter's timestamp form (seed §4.2: yyyy-MM-dd'T'HH:mm:ss.SSSZ, UTC). */
export function filterTime(ms: number): string {
  return new Date(ms).toISOString();
}
