/**
 * The management actions a responder uses (protocols.md §8), on a small user
 * directory: clear a user's sessions, suspend / unsuspend, expire the password,
 * reset factors, add to a group. Each request authenticates with the scope the
 * service asks for (okta.users.manage, okta.groups.manage) and spends its
 * family's bucket (`users`, `groups`); refusals carry the service's error body
 * (errorCode, errorSummary, errorCauses): an unknown user or group is 404
 * E0000007, suspending a user who is not ACTIVE (or unsuspending one who is not
 * SUSPENDED) is 400 E0000001.
 *
 * `performed` lists what took effect, in order. `beforePerform` runs first (a
 * test kills hooklog there); returning `'drop'` answers 503 without performing.
 * `faults` (faults.ts) answers status faults, queued or at a seeded random rate,
 * to authorised calls before they take effect.
 */
import { randomBytes } from 'node:crypto';
import type { Reply } from './auth.js';
import type { SimApi, SimOrg, SimRequest } from './api.js';
import { FaultPlan, takeStatusFault } from './faults.js';

export type UserStatus = 'ACTIVE' | 'SUSPENDED' | 'PASSWORD_EXPIRED';

export interface SimUser {
  readonly id: string;
  readonly login: string;
  status: UserStatus;
  sessions: number;
  factors: number;
  readonly groups: Set<string>;
}

export interface Performed {
  readonly action: string;
  readonly userId: string;
  readonly groupId?: string;
  readonly at: number;
}

const LIFECYCLE = ['suspend', 'unsuspend', 'expire_password', 'reset_factors'] as const;

export class UsersApi implements SimApi {
  readonly name = 'users';
  readonly users = new Map<string, SimUser>();
  readonly groups = new Set<string>();
  readonly performed: Performed[] = [];
  /** `client`: the request's Authorization header (tests give each hooklog instance its own token). */
  beforePerform: ((action: string, userId: string, client?: string) => Promise<'drop' | void> | 'drop' | void) | null =
    null;
  /** Status faults for authorised calls, answered without effect. */
  readonly faults = new FaultPlan();

  addUser(id: string, login: string, status: UserStatus = 'ACTIVE'): SimUser {
    const u: SimUser = { id, login, status, sessions: 2, factors: 1, groups: new Set() };
    this.users.set(id, u);
    return u;
  }

  /** Times `action` took effect for `userId`. */
  count(action: string, userId?: string): number {
    return this.performed.filter((p) => p.action === action && (userId === undefined || p.userId === userId)).length;
  }

  async handle(req: SimRequest, org: SimOrg): Promise<Reply | null> {
    const path = req.url.pathname;
    const sessions = /^\/api\/v1\/users\/([^/]+)\/sessions$/.exec(path);
    const lifecycle = /^\/api\/v1\/users\/([^/]+)\/lifecycle\/([a-z_]+)$/.exec(path);
    const member = /^\/api\/v1\/groups\/([^/]+)\/users\/([^/]+)$/.exec(path);
    let action: string;
    let userId: string;
    let groupId: string | undefined;
    let family: 'users' | 'groups';
    if (sessions && req.method === 'DELETE') [action, userId, family] = ['clear_sessions', sessions[1]!, 'users'];
    else if (lifecycle && req.method === 'POST' && (LIFECYCLE as readonly string[]).includes(lifecycle[2]!))
      [action, userId, family] = [lifecycle[2]!, lifecycle[1]!, 'users'];
    else if (member && req.method === 'PUT')
      [action, groupId, userId, family] = ['add_to_group', member[1]!, member[2]!, 'groups'];
    else return null;
    userId = decodeURIComponent(userId);
    const limit = org.admit(family);
    if (limit.refused) return limit.refused;
    const denied = await org.authorize(req, family === 'groups' ? 'okta.groups.manage' : 'okta.users.manage');
    const answer = (r: Reply): Reply => ({ ...r, headers: { ...limit.headers, ...r.headers } });
    if (denied) return answer(denied);
    const fault = takeStatusFault(this.faults, req.rec, this.name);
    if (fault) return answer(error(fault.status, fault.errorCode, 'Internal Server Error'));
    const user = this.users.get(userId);
    if (!user) return answer(error(404, 'E0000007', `Not found: Resource not found: ${userId} (User)`));
    if (groupId !== undefined && !this.groups.has(groupId))
      return answer(error(404, 'E0000007', `Not found: Resource not found: ${groupId} (UserGroup)`));
    const refusal = precondition(action, user);
    if (refusal) return answer(refusal);
    if ((await this.beforePerform?.(action, userId, req.rec.client)) === 'drop')
      return answer(error(503, 'E0000009', 'dropped'));
    apply(action, user, groupId);
    this.performed.push({ action, userId, ...(groupId ? { groupId } : {}), at: req.now });
    if (action === 'clear_sessions' || action === 'add_to_group') return answer({ status: 204, body: undefined });
    return answer({ status: 200, body: action === 'expire_password' ? { id: user.id, status: user.status } : {} });
  }
}

function precondition(action: string, u: SimUser): Reply | null {
  if (action === 'suspend' && u.status !== 'ACTIVE')
    return error(400, 'E0000001', 'Api validation failed: suspend', 'Cannot suspend a user that is not active');
  if (action === 'unsuspend' && u.status !== 'SUSPENDED')
    return error(400, 'E0000001', 'Api validation failed: unsuspend', 'Cannot unsuspend a user that is not suspended');
  if (action === 'expire_password' && u.status === 'SUSPENDED')
    return error(403, 'E0000038', "This operation is not allowed in the user's current status.");
  return null;
}

function apply(action: string, u: SimUser, groupId?: string): void {
  if (action === 'clear_sessions') u.sessions = 0;
  if (action === 'suspend') u.status = 'SUSPENDED';
  if (action === 'unsuspend') u.status = 'ACTIVE';
  if (action === 'expire_password') u.status = 'PASSWORD_EXPIRED';
  if (action === 'reset_factors') u.factors = 0;
  if (action === 'add_to_group') u.groups.add(groupId!);
}

function error(status: number, errorCode: string, errorSummary: string, cause?: string): Reply {
  return {
    status,
    body: {
      errorCode,
      errorSummary,
      errorLink: errorCode,
      errorId: `sim${randomBytes(6).toString('hex')}`,
      errorCauses: cause ? [{ errorSummary: cause }] : [],
    },
  };
}
