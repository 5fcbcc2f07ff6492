/**
 * The directory's read API (seed 000 §4.1–4.3, §7, §8) over `Directory`: what hooklog's identity sync reads.
 *
 *   GET /api/v1/users                 after, limit, filter | search | q     users      okta.users.read
 *   GET /api/v1/users/{id}/groups     after, limit                          users      okta.users.read
 *   GET /api/v1/users/{id}/roles      (none)                                users      okta.roles.read
 *   GET /api/v1/groups                after, limit, filter | search | q     groups     okta.groups.read
 *   GET /api/v1/groups/{id}/users     after, limit                          groups     okta.groups.read
 *   GET /api/v1/groups/{id}/roles     (none)                                groups     okta.roles.read
 *
 * Lists come in id order, `limit` per page (default 200, 1–200: seed §8 gives 200 as the groups list's maximum),
 * with `Link: <…>; rel="self"` and, while more remain, `<…>; rel="next"` whose `after` is opaque and accepted only as
 * issued (seed §4.2: "the after cursor is taken from the next link relation only"). Filters follow §4.2's grammar
 * (`field eq|gt|lt "value"`, `and`, `or`, parentheses; timestamps exactly yyyy-MM-dd'T'HH:mm:ss.SSSZ), on the
 * fields §4.2 names for groups and on `id`, `status`, `lastUpdated` and `profile.login` for users (the users list is
 * "not shown" in the seeds: the same grammar, as the real service's users list takes). A user's roles include those
 * held through a group (`assignmentType: GROUP`, §2.3).
 *
 * Strict: an unknown query parameter, a limit out of range, a malformed filter, a cursor never issued or `q` with
 * paging is 400 E0000001 and a violation; an unknown id is 404 E0000007; an empty family bucket is 429 E0000047 (a
 * violation). `faults` answers status faults and 429s (the org's other clients spent the bucket) first.
 */
import { randomBytes } from 'node:crypto';
import type { SimApi, SimOrg, SimRequest } from './api.js';
import { oktaError, type Reply } from './auth.js';
import { cmp, type DirGroup, type DirUser, type Directory, type RoleType } from './directory.js';
import { FaultPlan, rateLimitFaultHeaders } from './faults.js';

const MAX_LIMIT = 200;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type Family = 'users' | 'groups';

interface Route {
  readonly family: Family;
  readonly scope: string;
  /** The query parameters this endpoint takes. */
  readonly params: readonly string[];
  readonly answer: (q: URLSearchParams, url: URL) => Reply;
}

/** A reply with a Link header (the org sends it as is). */
type PagedReply = Reply & { readonly headers: Record<string, string> };

export class DirectoryApi implements SimApi {
  readonly name = 'directory';
  readonly faults = new FaultPlan();
  readonly #dir: Directory;
  /** `after` cursor → the last id of the page it follows (per list, so a cursor of one list is refused by another). */
  readonly #cursors = new Map<string, { list: string; lastId: string }>();

  constructor(dir: Directory) {
    this.#dir = dir;
  }

  get directory(): Directory {
    return this.#dir;
  }

  async handle(req: SimRequest, org: SimOrg): Promise<Reply | null> {
    if (req.method !== 'GET') return null;
    const route = this.#route(req.url, org.url);
    if (!route) return null;
    const fault = this.faults.take();
    if (fault) req.rec.fault = fault.kind;
    const limit = org.admit(route.family, req.now);
    if (fault?.kind === '429')
      return oktaError(429, 'E0000047', 'API call exceeded rate limit due to too many requests.', {
        headers: rateLimitFaultHeaders(fault, limit.headers, req.now),
      });
    if (limit.refused) return limit.refused;
    const answer = (r: Reply): Reply => ({ ...r, headers: { ...limit.headers, ...r.headers } });
    const denied = await org.authorize(req, route.scope);
    if (denied) return answer(denied);
    if (fault?.kind === 'status')
      return answer(oktaError(fault.status, fault.errorCode ?? 'E0000009', 'Internal Server Error'));
    if (fault) throw new Error(`the directory module injects status faults and 429s only, not ${fault.kind}`);
    const unknown = [...req.url.searchParams.keys()].filter((k) => !route.params.includes(k));
    if (unknown.length > 0) return answer(invalid(`unknown query parameter ${unknown.join(', ')}`));
    const repeated = [...new Set(req.url.searchParams.keys())].filter((k) => req.url.searchParams.getAll(k).length > 1);
    if (repeated.length > 0) return answer(invalid(`query parameter ${repeated.join(', ')} given more than once`));
    return answer(route.answer(req.url.searchParams, req.url));
  }

  #route(url: URL, origin: string): Route | null {
    const path = url.pathname;
    const dir = this.#dir;
    const sub = /^\/api\/v1\/(users|groups)\/([^/]+)\/(groups|users|roles)$/.exec(path);
    if (path === '/api/v1/users' || path === '/api/v1/groups') {
      const family: Family = path === '/api/v1/users' ? 'users' : 'groups';
      return {
        family,
        scope: `okta.${family}.read`,
        params: ['after', 'limit', 'filter', 'search', 'q'],
        answer: (q, u) =>
          family === 'users'
            ? this.#list(u, origin, q, 'users', [...dir.users.values()], USER_FIELDS, (x) => x.login, userJson)
            : this.#list(u, origin, q, 'groups', [...dir.groups.values()], GROUP_FIELDS, (x) => x.name, groupJson),
      };
    }
    if (!sub) return null;
    const [, kind, rawId, what] = sub as unknown as [string, Family, string, string];
    const id = decodeURIComponent(rawId);
    if (kind === 'users' && what === 'users') return null;
    if (kind === 'groups' && what === 'groups') return null;
    const family = kind;
    const notFound = () =>
      oktaError(404, 'E0000007', `Not found: Resource not found: ${id} (${kind === 'users' ? 'User' : 'UserGroup'})`);
    if (what === 'roles') {
      return {
        family,
        scope: 'okta.roles.read',
        params: [],
        answer: () => {
          if (kind === 'users') {
            const u = dir.users.get(id);
            if (!u) return notFound();
            const roles = [
              ...[...u.roles].map((t) => roleJson(origin, t, 'USER', u.id)),
              ...dir.groupsOf(u.id).flatMap((g) => [...g.roles].map((t) => roleJson(origin, t, 'GROUP', g.id))),
            ];
            return { status: 200, body: roles };
          }
          const g = dir.groups.get(id);
          if (!g) return notFound();
          return { status: 200, body: [...g.roles].map((t) => roleJson(origin, t, 'GROUP', g.id)) };
        },
      };
    }
    return {
      family,
      scope: `okta.${family}.read`,
      params: ['after', 'limit'],
      answer: (q, u) => {
        if (kind === 'users') {
          if (!dir.users.has(id)) return notFound();
          return this.#list(u, origin, q, `user-groups:${id}`, dir.groupsOf(id), {}, (g) => g.name, groupJson);
        }
        const g = dir.groups.get(id);
        if (!g) return notFound();
        const members = [...g.members].map((m) => dir.users.get(m)).filter((m): m is DirUser => m !== undefined);
        return this.#list(u, origin, q, `group-users:${id}`, members, {}, (m) => m.login, userJson);
      },
    };
  }

  /** One page of `all` (sorted by id) after the request's cursor, filtered; the Link header with self and next. */
  #list<T extends { readonly id: string }>(
    url: URL,
    origin: string,
    q: URLSearchParams,
    list: string,
    all: T[],
    fields: Readonly<Record<string, Field<T>>>,
    name: (t: T) => string,
    json: (origin: string, t: T) => unknown,
  ): Reply {
    const limitText = q.get('limit');
    const limit = limitText === null ? MAX_LIMIT : Number(limitText);
    if (!/^\d{1,4}$/.test(limitText ?? '1') || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
      return invalid(`limit must be a whole number from 1 to ${MAX_LIMIT}`);
    const after = q.get('after');
    const query = q.get('q');
    if (query !== null && (after !== null || limitText !== null)) return invalid('q and paging are mutually exclusive');
    if (q.has('filter') && q.has('search')) return invalid('filter and search are mutually exclusive');
    const expr = q.get('filter') ?? q.get('search');
    let keep: (t: T) => boolean = () => true;
    if (expr !== null) {
      const parsed = parseFilter(expr, fields);
      if (typeof parsed === 'string') return invalid(`filter: ${parsed}`);
      keep = parsed;
    }
    if (query !== null)
      keep = (
        (k) => (t: T) =>
          k(t) && name(t).startsWith(query)
      )(keep);
    let lastId: string | null = null;
    if (after !== null) {
      const c = this.#cursors.get(after);
      if (!c || c.list !== list) return invalid('after is not a cursor this list issued');
      lastId = c.lastId;
    }
    const rows = all
      .filter((t) => (lastId === null || cmp(t.id, lastId) > 0) && keep(t))
      .sort((a, b) => cmp(a.id, b.id));
    const page = rows.slice(0, limit);
    const links = [`<${url.toString()}>; rel="self"`];
    if (rows.length > page.length && query === null) {
      const token = randomBytes(9).toString('base64url');
      this.#cursors.set(token, { list, lastId: page[page.length - 1]!.id });
      const next = new URL(url.pathname, origin);
      for (const [k, v] of q) if (k !== 'after') next.searchParams.set(k, v);
      next.searchParams.set('after', token);
      links.push(`<${next.toString()}>; rel="next"`);
    }
    const reply: PagedReply = {
      status: 200,
      body: page.map((t) => json(origin, t)),
      headers: { link: links.join(', ') },
    };
    return reply;
  }
}

function invalid(cause: string): Reply {
  return {
    status: 400,
    body: {
      errorCode: 'E0000001',
      errorSummary: 'Api validation failed: query',
      errorLink: 'E0000001',
      errorId: `sim${randomBytes(6).toString('hex')}`,
      errorCauses: [{ errorSummary: cause }],
    },
    violation: cause,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

function userJson(origin: string, u: DirUser): unknown {
  const [first, last] = [u.firstName, 'Sim'];
  return {
    id: u.id,
    status: u.status,
    created: iso(u.created),
    activated: u.status === 'ACTIVE' ? iso(u.created) : null,
    statusChanged: null,
    lastLogin: null,
    lastUpdated: iso(u.lastUpdated),
    passwordChanged: null,
    profile: { firstName: first, lastName: last, email: u.login, login: u.login, mobilePhone: null },
    credentials: { provider: { type: 'VENDOR', name: 'VENDOR' } },
    _links: { self: { href: `${origin}/api/v1/users/${encodeURIComponent(u.id)}` } },
  };
}

function groupJson(origin: string, g: DirGroup): unknown {
  const self = `${origin}/api/v1/groups/${encodeURIComponent(g.id)}`;
  return {
    id: g.id,
    created: iso(g.created),
    lastUpdated: iso(g.lastUpdated),
    lastMembershipUpdated: iso(g.lastMembershipUpdated),
    objectClass: ['vendor:user_group'],
    type: g.type,
    profile: { name: g.name, description: '' },
    _links: { users: { href: `${self}/users` }, apps: { href: `${self}/apps` } },
  };
}

const LABELS: Record<RoleType, string> = {
  APP_ADMIN: 'Application Administrator',
  HELP_DESK_ADMIN: 'Help Desk Administrator',
  ORG_ADMIN: 'Organizational Administrator',
  API_ACCESS_MANAGEMENT_ADMIN: 'API Access Management Administrator',
  SUPER_ADMIN: 'Super Organization Administrator',
  USER_ADMIN: 'Group Administrator',
  READ_ONLY_ADMIN: 'Read Only Administrator',
};

function roleJson(origin: string, type: RoleType, assignmentType: 'USER' | 'GROUP', assignee: string): unknown {
  return {
    id: `ra${Buffer.from(`${assignee}/${type}`).toString('hex').slice(0, 16)}`,
    label: LABELS[type],
    type,
    status: 'ACTIVE',
    created: '2026-01-01T00:00:00.000Z',
    lastUpdated: '2026-01-01T00:00:00.000Z',
    assignmentType,
    _links: {
      assignee: { href: `${origin}/api/v1/${assignmentType === 'USER' ? 'users' : 'groups'}/${assignee}` },
    },
  };
}

/** A filterable field: the operators it takes and the value it compares (a timestamp as epoch ms). */
interface Field<T> {
  readonly ops: readonly ('eq' | 'gt' | 'lt')[];
  readonly time?: boolean;
  /** The allowed values of an enumerated field. */
  readonly values?: readonly string[];
  readonly get: (t: T) => string | number;
}

const USER_FIELDS: Record<string, Field<DirUser>> = {
  id: { ops: ['eq'], get: (u) => u.id },
  status: {
    ops: ['eq'],
    values: [
      'STAGED',
      'PROVISIONED',
      'ACTIVE',
      'RECOVERY',
      'LOCKED_OUT',
      'SUSPENDED',
      'DEPROVISIONED',
      'PASSWORD_EXPIRED',
    ],
    get: (u) => u.status,
  },
  lastUpdated: { ops: ['eq', 'gt', 'lt'], time: true, get: (u) => u.lastUpdated },
  'profile.login': { ops: ['eq'], get: (u) => u.login },
};

const GROUP_FIELDS: Record<string, Field<DirGroup>> = {
  id: { ops: ['eq'], get: (g) => g.id },
  lastMembershipUpdated: { ops: ['eq', 'gt', 'lt'], time: true, get: (g) => g.lastMembershipUpdated },
  lastUpdated: { ops: ['eq', 'gt', 'lt'], time: true, get: (g) => g.lastUpdated },
  // OKTA_GROUP is VENDOR_GROUP's wire form in this filter (seed §4.2).
  type: {
    ops: ['eq'],
    values: ['APP_GROUP', 'BUILT_IN', 'OKTA_GROUP'],
    get: (g) => (g.type === 'VENDOR_GROUP' ? 'OKTA_GROUP' : g.type),
  },
};

/**
 * Parses `expr` (§4.2: comparisons joined by `and` / `or`, with parentheses; `and` binds tighter) into a
 * predicate, or says what is wrong with it.
 */
export function parseFilter<T>(expr: string, fields: Readonly<Record<string, Field<T>>>): ((t: T) => boolean) | string {
  const tokens = expr.match(/\(|\)|"[^"]*"|[^\s()"]+/g) ?? [];
  if (tokens.join('').length !== expr.replace(/\s+/g, '').length) return 'unbalanced quotes';
  let i = 0;
  const fail = (why: string): never => {
    throw new FilterError(why);
  };
  const term = (): ((t: T) => boolean) => {
    if (tokens[i] === '(') {
      i++;
      const inner = or();
      if (tokens[i++] !== ')') fail('missing )');
      return inner;
    }
    const [name, op, value] = [tokens[i], tokens[i + 1], tokens[i + 2]];
    i += 3;
    if (name === undefined || op === undefined || value === undefined) return fail('incomplete comparison');
    const f = Object.hasOwn(fields, name) ? fields[name]! : fail(`unknown field ${name}`);
    if (!(f.ops as readonly string[]).includes(op)) fail(`${name} does not take ${op}`);
    if (!/^"[^"]*"$/.test(value)) fail(`${name} ${op}: the value must be quoted`);
    const v = value.slice(1, -1);
    if (f.values && !f.values.includes(v)) fail(`${name}: unknown value ${v}`);
    let target: string | number = v;
    if (f.time) {
      if (!TIMESTAMP.test(v)) fail(`${name}: timestamps are yyyy-MM-ddTHH:mm:ss.SSSZ`);
      target = Date.parse(v);
    }
    return (t) => {
      const x = f.get(t);
      return op === 'eq' ? x === target : op === 'gt' ? x > target : x < target;
    };
  };
  const and = (): ((t: T) => boolean) => {
    let left = term();
    while (tokens[i] === 'and') {
      i++;
      const l = left;
      const r = term();
      left = (t) => l(t) && r(t);
    }
    return left;
  };
  const or = (): ((t: T) => boolean) => {
    let left = and();
    while (tokens[i] === 'or') {
      i++;
      const l = left;
      const r = and();
      left = (t) => l(t) || r(t);
    }
    return left;
  };
  try {
    const p = or();
    if (i !== tokens.length) return `unexpected ${tokens[i]}`;
    return p;
  } catch (err) {
    if (err instanceof FilterError) return err.message;
    throw err;
  }
}

class FilterError extends Error {}
