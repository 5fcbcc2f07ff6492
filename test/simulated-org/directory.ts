/**
 * The simulated org's directory: users (status, profile, `lastUpdated`), groups (name, members,
 * `lastMembershipUpdated`) and administrator roles assigned to users or to groups, as seed 000 §2.1–2.3 describe
 * them. Tests change it through the methods below, which move the timestamps the service moves: a profile or status
 * change moves the user's `lastUpdated`; a membership change moves the group's `lastMembershipUpdated` and not the
 * user's `lastUpdated`; a role assignment moves neither (so an incremental sync by `lastUpdated` misses it, and only
 * a full pass finds it — what the sync's design must bound). `directory-api.ts` serves it.
 */

export type DirUserStatus =
  'STAGED' | 'PROVISIONED' | 'ACTIVE' | 'RECOVERY' | 'LOCKED_OUT' | 'SUSPENDED' | 'DEPROVISIONED' | 'PASSWORD_EXPIRED';

/** The role types of seed 000 §2.3, and the read-only administrator the real service has beside them. */
export type RoleType =
  | 'APP_ADMIN'
  | 'HELP_DESK_ADMIN'
  | 'ORG_ADMIN'
  | 'API_ACCESS_MANAGEMENT_ADMIN'
  | 'SUPER_ADMIN'
  | 'USER_ADMIN'
  | 'READ_ONLY_ADMIN';

export interface DirUser {
  readonly id: string;
  login: string;
  firstName: string;
  status: DirUserStatus;
  readonly created: number;
  lastUpdated: number;
  /** Role types assigned to the user directly. */
  readonly roles: Set<RoleType>;
}

export interface DirGroup {
  readonly id: string;
  name: string;
  readonly type: 'VENDOR_GROUP' | 'APP_GROUP' | 'BUILT_IN';
  readonly created: number;
  lastUpdated: number;
  lastMembershipUpdated: number;
  readonly members: Set<string>;
  /** Role types assigned to the group (every member holds them, with assignmentType GROUP). */
  readonly roles: Set<RoleType>;
}

export class Directory {
  readonly users = new Map<string, DirUser>();
  readonly groups = new Map<string, DirGroup>();
  readonly #now: () => number;
  #last = 0;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Strictly increasing times, so two changes in one millisecond still order (and a `gt` filter tells them apart). */
  #tick(): number {
    this.#last = Math.max(this.#now(), this.#last + 1);
    return this.#last;
  }

  addUser(
    id: string,
    login: string,
    opts: { status?: DirUserStatus; roles?: readonly RoleType[]; firstName?: string } = {},
  ): DirUser {
    const t = this.#tick();
    const u: DirUser = {
      id,
      login,
      firstName: opts.firstName ?? login.split('@')[0]!,
      status: opts.status ?? 'ACTIVE',
      created: t,
      lastUpdated: t,
      roles: new Set(opts.roles ?? []),
    };
    this.users.set(id, u);
    return u;
  }

  addGroup(id: string, name: string, opts: { roles?: readonly RoleType[] } = {}): DirGroup {
    const t = this.#tick();
    const g: DirGroup = {
      id,
      name,
      type: 'VENDOR_GROUP',
      created: t,
      lastUpdated: t,
      lastMembershipUpdated: t,
      members: new Set(),
      roles: new Set(opts.roles ?? []),
    };
    this.groups.set(id, g);
    return g;
  }

  /** A profile or status change: the user's `lastUpdated` moves. */
  updateUser(id: string, patch: { login?: string; firstName?: string; status?: DirUserStatus }): DirUser {
    const u = this.#user(id);
    if (patch.login !== undefined) u.login = patch.login;
    if (patch.firstName !== undefined) u.firstName = patch.firstName;
    if (patch.status !== undefined) u.status = patch.status;
    u.lastUpdated = this.#tick();
    return u;
  }

  addMember(groupId: string, userId: string): void {
    this.#user(userId);
    const g = this.#group(groupId);
    g.members.add(userId);
    g.lastMembershipUpdated = this.#tick();
  }

  removeMember(groupId: string, userId: string): void {
    const g = this.#group(groupId);
    g.members.delete(userId);
    g.lastMembershipUpdated = this.#tick();
  }

  assignUserRole(userId: string, role: RoleType): void {
    this.#user(userId).roles.add(role);
  }

  assignGroupRole(groupId: string, role: RoleType): void {
    this.#group(groupId).roles.add(role);
  }

  /** Deleted for good (seed 000 §3.1: DELETE of a DEPROVISIONED user): gone from every list and group. */
  deleteUser(id: string): void {
    this.users.delete(id);
    for (const g of this.groups.values()) {
      if (g.members.delete(id)) g.lastMembershipUpdated = this.#tick();
    }
  }

  /** The groups `userId` is a member of, in id order. */
  groupsOf(userId: string): DirGroup[] {
    return [...this.groups.values()].filter((g) => g.members.has(userId)).sort((a, b) => cmp(a.id, b.id));
  }

  #user(id: string): DirUser {
    const u = this.users.get(id);
    if (!u) throw new Error(`no user ${id} in the simulated directory`);
    return u;
  }

  #group(id: string): DirGroup {
    const g = this.groups.get(id);
    if (!g) throw new Error(`no group ${id} in the simulated directory`);
    return g;
  }
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
