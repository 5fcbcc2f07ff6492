/**
 * The identity records in memory, for the rules: the latest record of each user on the compacted
 * `<prefix>.identity` (schemas/identity.ts), kept current by `Stream.watch` as the token hook keeps
 * `<prefix>.risk` (receivers/token-hook/risk-view.ts). A lookup is one Map read, never I/O.
 *
 * - Current before the first event: `start` resolves once every record appended before it is in (Kafka: the
 *   topic's reader has reached the end offsets it read at the call; embedded: the durable frames), and the
 *   alerting engine starts only then. So a restart never evaluates events against an empty view as if no
 *   user had a role; when the stream cannot be read, alerting does not start.
 * - Records of a key are taken in offset order (an older one, tombstones included, is ignored), so a re-read
 *   from the beginning never brings back an old state. A tombstone (user deleted) removes the user.
 * - A record that does not parse as the contract, or whose key is not its own user's, changes nothing (the
 *   user's previous record stands) and is counted (hooklog_alerting_identity_records_ignored_total) and logged
 *   once in a while: the sync's problem, not one
 *   alerting can fix, and no reason to stop evaluating.
 *
 * Every value came from the identity service and may be an attacker's (a group named by someone who can
 * name groups): held and handed to the rules as data, bounded by the contract's limits.
 */
import type { Logger } from '../../../platform/log.js';
import { counter } from '../../../platform/metrics.js';
import type { ConsumedRecord, Stream } from '../../../platform/stream/types.js';
import { identityKey, identityUserSchema } from '../../../schemas/identity.js';
import type { ActorContext, ActorContextLookup } from './context.js';

const ignoredTotal = counter({
  name: 'hooklog_alerting_identity_records_ignored_total',
  help: "Records of <prefix>.identity the rules' identity view left out (the user's previous record stands), by reason: unreadable (not the contract), misskeyed (keyed as another user).",
  labelNames: ['reason'] as const,
});

interface Entry {
  readonly offset: number;
  /** Null: the user was deleted (a tombstone, kept for its offset). */
  readonly ctx: ActorContext | null;
}

export class IdentityView implements ActorContextLookup {
  /** identityKey(org, userId) → the latest record's context. */
  readonly #users = new Map<string, Entry>();
  readonly #log: Logger | undefined;
  #stop: (() => void) | null = null;
  #ignored = 0;

  constructor(logger?: Logger) {
    this.#log = logger?.child({ component: 'alerting-identity' });
  }

  /** Starts watching `topic`; resolves once everything appended before the call is in. */
  async start(stream: Stream, topic: string): Promise<void> {
    this.#stop = await stream.watch(topic, (records) => this.apply(records));
    this.#log?.info({ topic, users: this.size }, 'identity view current');
  }

  stop(): void {
    this.#stop?.();
    this.#stop = null;
  }

  /** Users with a record (deleted ones not counted). */
  get size(): number {
    let n = 0;
    for (const e of this.#users.values()) if (e.ctx) n++;
    return n;
  }

  /** Records that changed nothing because they did not parse or were keyed as another user. */
  get ignored(): number {
    return this.#ignored;
  }

  /** Takes records of `<prefix>.identity` (Stream.watch's listener). */
  apply(records: readonly ConsumedRecord[]): void {
    for (const r of records) {
      const key = r.key;
      if (key === null) continue;
      const had = this.#users.get(key);
      if (had && had.offset >= r.offset) continue;
      if (r.value.length === 0) {
        this.#users.set(key, { offset: r.offset, ctx: null });
        continue;
      }
      const ctx = this.#contextOf(r, key);
      if (ctx) this.#users.set(key, { offset: r.offset, ctx });
    }
  }

  #contextOf(r: ConsumedRecord, key: string): ActorContext | null {
    let parsed;
    try {
      parsed = identityUserSchema.safeParse(JSON.parse(r.value.toString('utf8')));
    } catch {
      parsed = null;
    }
    if (!parsed?.success || identityKey(parsed.data.org, parsed.data.user_id) !== key) {
      const reason = parsed?.success ? 'misskeyed' : 'unreadable';
      ignoredTotal.inc({ reason });
      if (this.#ignored++ % 1000 === 0)
        this.#log?.warn({ key, offset: r.offset, reason, ignored: this.#ignored }, 'identity record left out');
      return null;
    }
    const u = parsed.data;
    return {
      groups: u.groups.map((g) => g.name),
      groupIds: u.groups.map((g) => g.id),
      adminRoles: u.admin_roles,
      status: u.status,
    };
  }

  actor(org: string, userId: string): ActorContext | undefined {
    return this.#users.get(identityKey(org, userId))?.ctx ?? undefined;
  }
}
