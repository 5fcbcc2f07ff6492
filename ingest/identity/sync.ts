/**
 * One org's identity sync: its directory (users with status, groups and administrator roles) onto the compacted
 * `<prefix>.identity`, one record per user (schemas/identity.ts), run by the process that owns the org's
 * `identity:<org>` position (ingest/index.ts: the pollers' ownership).
 *
 * - **Full pass** (first, then every `full_interval_ms`): every group with its roles and members, then every user
 *   with their own roles; a user listed by none of it whose record is live gets a tombstone. It is the only pass that
 *   sees what moves no user's `lastUpdated`: a role assigned or removed (to a user or a group), a group's roles, and
 *   deletions. So `full_interval_ms` bounds how stale those can be.
 * - **Incremental pass** (every `interval_ms` in between): users whose `lastUpdated` is after the high-water mark
 *   (position.ts), each with their groups and roles read again (group roles from the last full pass). A status or
 *   profile change shows within one interval; a membership change shows once the user changes, else at the next full
 *   pass. A user whose `lastUpdated` is what this process last wrote is not read again.
 *
 * A record is appended only when the user's state differs from what this process last wrote (a new owner writes
 * every user once at its first pass: the tables fold the repeats). The position moves in the append of the pass's
 * last records: a pass cut short is run again, never skipped.
 *
 * Requests: one at a time, through the org's client (every request of the process shares its p-queue: one slot at
 * most for this org's sync), within `rate_limit_share` of the `users` and `groups` buckets (budgets shared with
 * every process of the host through their ledgers, and with response actions): the System Log's bucket is another.
 */
import type { Logger } from '../../platform/log.js';
import { HooklogError } from '../../platform/errors.js';
import { counter } from '../../platform/metrics.js';
import { backoffDelay, retry, sleep, type RetryPolicy } from '../../platform/retry.js';
import type { IdentityClient } from '../../platform/identity/client.js';
import { DirectoryReader, type DirectoryGroup, type DirectoryUser } from '../../platform/identity/directory.js';
import { IdpReplyError } from '../../platform/identity/errors.js';
import type { RateBudget } from '../../platform/identity/rate-limit.js';
import type { StreamRecord, Transactor } from '../../platform/stream/types.js';
import { IDENTITY_LIMITS, type IdentityUser } from '../../schemas/identity.js';
import { positionRecord, type IdentityPosition } from './position.js';
import { digestOf, identityUser, tombstone, userRecord } from './records.js';

/** An incremental pass lists again the users changed this long before the previous pass started (clock skew, lists
 * read while users change). */
export const LISTING_MARGIN_MS = 60_000;
/** Tombstones per append. */
const TOMBSTONES_PER_APPEND = 500;

const passes = counter({
  name: 'hooklog_identity_sync_passes_total',
  help: 'Identity sync passes by org, kind (full, incremental) and outcome (ok, failed).',
  labelNames: ['org', 'kind', 'outcome'],
});
const written = counter({
  name: 'hooklog_identity_records_total',
  help: 'Identity records the sync appended by org and kind (user: a changed user; tombstone: a user deleted).',
  labelNames: ['org', 'kind'],
});
const invalidItems = counter({
  name: 'hooklog_identity_invalid_items_total',
  help: "Directory items the identity sync skipped because they are not what the API documents (IDP_REPLY_INVALID); the user's last record stays.",
  labelNames: ['org'],
});

export interface IdentitySyncSettings {
  readonly intervalMs: number;
  readonly fullIntervalMs: number;
}

export interface IdentitySyncOptions {
  readonly org: string;
  readonly baseUrl: string;
  readonly client: IdentityClient;
  readonly budgets: { readonly users: RateBudget; readonly groups: RateBudget };
  readonly stream: Transactor;
  readonly identityTopic: string;
  readonly cursorsTopic: string;
  readonly settings: IdentitySyncSettings;
  readonly position: IdentityPosition | null;
  /** The org's users with a live record (read from the identity topic once, before the first full pass). */
  readonly known: () => Promise<Iterable<string>>;
  readonly logger: Logger;
  /** After a failed pass: how long before the next (an error retrying the same request cannot fix). */
  readonly blocked: RetryPolicy;
  /** Retries of an append the stream refused. */
  readonly append: RetryPolicy;
  /** The stream says another owner took the org over. */
  readonly onFenced?: () => void;
  readonly now?: () => number;
}

export class IdentitySync {
  readonly #o: IdentitySyncOptions;
  readonly #abort = new AbortController();
  readonly #reader: DirectoryReader;
  readonly #log: Logger;
  readonly #now: () => number;
  #position: IdentityPosition | null;
  #known: Set<string> | null = null;
  /** What this process last wrote per user: its lastUpdated and digest. */
  readonly #last = new Map<string, { lastUpdated: string; digest: string }>();
  /** Group id → its role types, from the last full pass (an unknown group is asked on first use). */
  #groupRoles = new Map<string, string[]>();
  #done: Promise<void> | null = null;
  /** Passes completed, by kind (tests). */
  readonly completed = { full: 0, incremental: 0 };

  constructor(opts: IdentitySyncOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
    this.#position = opts.position;
    this.#log = opts.logger.child({ component: 'identity-sync', org: opts.org });
    this.#reader = new DirectoryReader({
      client: opts.client,
      baseUrl: opts.baseUrl,
      budgets: opts.budgets,
      signal: this.#abort.signal,
      onInvalid: (err) => {
        invalidItems.inc({ org: opts.org });
        this.#log.warn({ code: err.code }, err.message);
      },
    });
  }

  get position(): IdentityPosition | null {
    return this.#position;
  }

  start(): void {
    this.#done ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#abort.abort(new HooklogError('STREAM_CLOSED', 'identity sync stopping'));
    await this.#done;
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    let streak = 0;
    this.#log.info({ resumed: this.#position !== null }, 'identity_sync_started');
    while (!signal.aborted) {
      const p = this.#position;
      const kind =
        p === null ||
        p.fullAt === null ||
        p.highWater === null ||
        this.#now() - p.fullAt >= this.#o.settings.fullIntervalMs
          ? 'full'
          : 'incremental';
      try {
        if (kind === 'full') await this.#full();
        else await this.#incremental(p!.highWater!);
        passes.inc({ org: this.#o.org, kind, outcome: 'ok' });
        this.completed[kind]++;
        streak = 0;
        await sleep(this.#o.settings.intervalMs, signal);
      } catch (err) {
        if (signal.aborted) break;
        passes.inc({ org: this.#o.org, kind, outcome: 'failed' });
        if (err instanceof HooklogError && err.code === 'STREAM_FENCED') {
          this.#log.warn({ err }, 'identity_sync_fenced');
          this.#o.onFenced?.();
          break;
        }
        const delay = backoffDelay(this.#o.blocked, ++streak);
        this.#log.error(
          { err, kind, streak, delay_ms: delay },
          `org ${this.#o.org}: identity sync ${kind} pass failed`,
        );
        await sleep(delay, signal);
      }
    }
  }

  /** Every group (roles, members), then every user; tombstones for the live records no user was listed for. */
  async #full(): Promise<void> {
    const started = this.#now();
    this.#known ??= new Set(await this.#o.known());
    const groupRoles = new Map<string, string[]>();
    const memberOf = new Map<string, DirectoryGroup[]>();
    const cut = new Set<string>();
    for await (const page of this.#reader.groups()) {
      for (const g of page) {
        groupRoles.set(g.id, (await this.#orGone(this.#reader.groupRoles(g.id))) ?? []);
        try {
          for await (const ids of this.#reader.groupMembers(g.id)) {
            for (const id of ids) {
              const list = memberOf.get(id) ?? [];
              if (list.length < IDENTITY_LIMITS.groups) list.push(g);
              else cut.add(id);
              memberOf.set(id, list);
            }
          }
        } catch (err) {
          // Deleted while we read it: its members are in no group of it.
          if (!isGone(err)) throw err;
        }
      }
    }
    this.#groupRoles = groupRoles;
    const seen = new Set<string>();
    let newest: number | null = null;
    for await (const page of this.#reader.users()) {
      const records: StreamRecord[] = [];
      for (const u of page) {
        const groups = memberOf.get(u.id) ?? [];
        const rec = await this.#userState(u, groups, cut.has(u.id));
        if (rec === null) continue;
        seen.add(u.id);
        newest = Math.max(newest ?? 0, Date.parse(u.lastUpdated));
        if (this.#changed(rec)) records.push(userRecord(rec));
      }
      if (records.length > 0) await this.#append(records, null);
    }
    const gone = [...this.#known].filter((id) => !seen.has(id));
    const position = { highWater: nextHighWater(this.#position?.highWater ?? null, newest, started), fullAt: started };
    for (let i = 0; i < gone.length || i === 0; i += TOMBSTONES_PER_APPEND) {
      const chunk = gone.slice(i, i + TOMBSTONES_PER_APPEND);
      const last = i + TOMBSTONES_PER_APPEND >= gone.length;
      await this.#append(
        chunk.map((id) => tombstone(this.#o.org, id, this.#now())),
        last ? position : null,
      );
      for (const id of chunk) {
        this.#known.delete(id);
        this.#last.delete(id);
      }
      if (chunk.length > 0) written.inc({ org: this.#o.org, kind: 'tombstone' }, chunk.length);
    }
    this.#log.info({ users: seen.size, groups: groupRoles.size, deleted: gone.length }, 'identity_sync_full_pass');
  }

  /** The users changed since `highWater`, each with their groups and roles read again. */
  async #incremental(highWater: number): Promise<void> {
    const started = this.#now();
    let newest: number | null = null;
    let changed = 0;
    for await (const page of this.#reader.users(highWater)) {
      const records: StreamRecord[] = [];
      for (const u of page) {
        newest = Math.max(newest ?? 0, Date.parse(u.lastUpdated));
        if (this.#last.get(u.id)?.lastUpdated === u.lastUpdated) continue;
        const listed = await this.#orGone(this.#reader.userGroups(u.id, IDENTITY_LIMITS.groups));
        if (listed === null) continue;
        const rec = await this.#userState(u, listed.groups, listed.truncated);
        if (rec !== null && this.#changed(rec)) records.push(userRecord(rec));
      }
      changed += records.length;
      if (records.length > 0) await this.#append(records, null);
    }
    const next = nextHighWater(highWater, newest, started);
    if (next !== highWater) await this.#append([], { highWater: next, fullAt: this.#position!.fullAt });
    this.#log.debug({ changed }, 'identity_sync_incremental_pass');
  }

  /** The user's record, or null when the user was deleted while we read them (the next full pass tombstones them). */
  async #userState(u: DirectoryUser, groups: readonly DirectoryGroup[], cut: boolean): Promise<IdentityUser | null> {
    const direct = await this.#orGone(this.#reader.userRoles(u.id));
    if (direct === null) return null;
    const roles = new Set(direct);
    for (const g of groups) {
      let r = this.#groupRoles.get(g.id);
      if (r === undefined) {
        r = (await this.#orGone(this.#reader.groupRoles(g.id))) ?? [];
        this.#groupRoles.set(g.id, r);
      }
      for (const t of r) roles.add(t);
    }
    return identityUser(this.#o.org, u, groups, cut, roles, this.#now());
  }

  /** True (and remembered) when `rec` says something other than what this process last wrote for the user. */
  #changed(rec: IdentityUser): boolean {
    const digest = digestOf(rec);
    const prev = this.#last.get(rec.user_id);
    this.#last.set(rec.user_id, { lastUpdated: rec.last_updated, digest });
    this.#known?.add(rec.user_id);
    if (prev?.digest === digest) return false;
    written.inc({ org: this.#o.org, kind: 'user' });
    return true;
  }

  async #orGone<T>(p: Promise<T>): Promise<T | null> {
    try {
      return await p;
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }

  /** The records, and the position when given, in one atomic append (retried while the stream says it may succeed). */
  async #append(records: StreamRecord[], position: IdentityPosition | null): Promise<void> {
    const writes = [
      ...(records.length > 0 ? [{ topic: this.#o.identityTopic, records }] : []),
      ...(position
        ? [{ topic: this.#o.cursorsTopic, records: [positionRecord(this.#o.org, position, this.#now())] }]
        : []),
    ];
    if (writes.length === 0) return;
    await retry(() => this.#o.stream.appendAtomically(writes), {
      policy: this.#o.append,
      retriable: (err) => err instanceof HooklogError && err.retriable && err.code !== 'STREAM_FENCED',
      signal: this.#abort.signal,
    });
    if (position) this.#position = position;
  }
}

/** A 404: the user or group was deleted between being listed and being read. */
function isGone(err: unknown): boolean {
  return err instanceof IdpReplyError && err.status === 404;
}

/**
 * The next high-water mark: the newest `lastUpdated` listed, but never past the pass's start less the margin (a
 * user changed while the pass ran is listed again next time), and never back.
 */
export function nextHighWater(prev: number | null, newest: number | null, startedMs: number): number {
  const cap = startedMs - LISTING_MARGIN_MS;
  const hw = newest === null ? cap : Math.min(newest, cap);
  return prev === null ? hw : Math.max(prev, hw);
}
