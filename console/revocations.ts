/**
 * Sessions that end before their `exp`: a sign-out, `hooklog console revoke
 * --user`, or a grant the identity service no longer gives is one record on
 * `<prefix>.console-sessions`, as a change of an alert is one record on
 * `<prefix>.alert-states`. The session cookie stays stateless; what every
 * instance of a fleet consults on every request is its in-memory view of this
 * topic, kept current by `Stream.watch` (as the token hook keeps its risk view:
 * on Kafka the topic's long-lived reader, whose fetch wait is 200 ms, so a
 * revocation holds on every instance well within a second of its append).
 *
 * Bounded and retained: the topic is compacted, so an instance that starts
 * later reads every revocation still in force, and a revocation is only
 * needed until the sessions it ends would have expired anyway (`expires_at`).
 * Past that the view forgets it and an instance appends its tombstone, so
 * compaction drops it: the topic holds at most the revocations of one session
 * lifetime. Each key is written once (a session id, or a user revocation's own
 * time), so a tombstone can never erase a newer revocation of the same key.
 */
import { z } from 'zod';
import type { Logger } from '../platform/log.js';
import type { ConsumedRecord, Stream, StreamRecord } from '../platform/stream/types.js';
import type { Session } from './session.js';

export function consoleSessionsTopic(prefix: string): string {
  return `${prefix}.console-sessions`;
}

export const REVOCATION_REASONS = ['signed_out', 'revoked', 'grant_removed'] as const;
export type RevocationReason = (typeof REVOCATION_REASONS)[number];

/** One revocation as on the topic (format version 1; fields never change meaning). */
const revocationSchema = z.discriminatedUnion('kind', [
  z.object({
    v: z.literal(1),
    /** One session, by its id. */
    kind: z.literal('session'),
    sid: z.string().min(1).max(64),
    user: z.string().max(256),
    at: z.iso.datetime(),
    /** The session's own expiry: past it the record is no longer needed. */
    expires_at: z.iso.datetime(),
    by: z.string().max(256),
    reason: z.enum(REVOCATION_REASONS),
  }),
  z.object({
    v: z.literal(1),
    /** Every session of a user (by login or subject) begun at or before `at`. */
    kind: z.literal('user'),
    user: z.string().min(1).max(256),
    at: z.iso.datetime(),
    /** `at` plus the session lifetime: every session it ends has expired by then. */
    expires_at: z.iso.datetime(),
    by: z.string().max(256),
    reason: z.enum(REVOCATION_REASONS),
  }),
]);
export type Revocation = z.output<typeof revocationSchema>;

/** The record's key: its own, never reused (see the module comment on tombstones). */
export function revocationKey(r: Revocation): string {
  return r.kind === 'session' ? `session/${r.sid}` : `user/${r.user}/${Date.parse(r.at)}`;
}

export function revocationRecord(r: Revocation): StreamRecord {
  return { key: revocationKey(r), value: Buffer.from(JSON.stringify(r)), headers: {} };
}

/** The revocation of one session (sign-out, or a grant removed at the identity service). */
export function sessionRevocation(
  s: Session,
  reason: RevocationReason,
  by: string,
  nowMs: number,
): Revocation & { kind: 'session' } {
  return {
    v: 1,
    kind: 'session',
    sid: s.sid,
    user: s.principal.id,
    at: new Date(nowMs).toISOString(),
    expires_at: new Date(s.expiresAt * 1000).toISOString(),
    by,
    reason,
  };
}

/** The revocation of every session `user` (login or subject) began up to now. */
export function userRevocation(user: string, by: string, sessionTtlMinutes: number, nowMs: number): Revocation {
  return {
    v: 1,
    kind: 'user',
    user,
    at: new Date(nowMs).toISOString(),
    expires_at: new Date(nowMs + sessionTtlMinutes * 60_000).toISOString(),
    by,
    reason: 'revoked',
  };
}

interface Held {
  readonly offset: number;
  readonly partition: number;
  readonly r: Revocation;
}

const SWEEP_INTERVAL_MS = 10 * 60_000;

/** This process's view of the revocations in force; `revokedBy` is two map reads, never I/O. */
export class RevocationView {
  readonly #held = new Map<string, Held>();
  /** The user revocations among them (each request looks at these, not at every sign-out). */
  readonly #users = new Map<string, Revocation & { kind: 'user' }>();
  readonly #log: Logger;
  #stop: (() => void) | null = null;
  #sweeper: NodeJS.Timeout | undefined;
  #unreadable = 0;
  #current = false;

  constructor(logger: Logger) {
    this.#log = logger;
  }

  /**
   * Starts watching `topic`; resolves once every revocation appended before the call is in. Every
   * SWEEP_INTERVAL_MS it tombstones the revocations past their expiry (any instance may: the same tombstone
   * twice is harmless).
   */
  async start(stream: Stream, topic: string, now: () => number): Promise<void> {
    this.#stop = await stream.watch(topic, (records) => this.apply(records));
    this.#current = true;
    const sweep = () =>
      void this.sweep(stream, topic, now()).catch((err: unknown) =>
        this.#log.warn({ err }, 'console_revocations_sweep_failed'),
      );
    sweep();
    this.#sweeper = setInterval(sweep, SWEEP_INTERVAL_MS);
    this.#sweeper.unref();
    this.#log.info({ topic, revocations: this.size }, 'console_revocations_current');
  }

  stop(): void {
    clearInterval(this.#sweeper);
    this.#stop?.();
    this.#stop = null;
  }

  /** True once every revocation appended before start is in (sessions are refused until then). */
  get current(): boolean {
    return this.#current;
  }

  get size(): number {
    return this.#held.size;
  }

  /**
   * Takes records of the topic (Stream.watch's listener): per key, the highest offset wins. A tombstone
   * forgets its key; should a re-read bring the older record back, it is past its expiry and ends nothing
   * that has not ended anyway.
   */
  apply(records: readonly ConsumedRecord[]): void {
    for (const rec of records) {
      if (rec.key === null) continue;
      const had = this.#held.get(rec.key);
      if (had && had.offset >= rec.offset) continue;
      if (rec.value.length === 0) {
        this.#held.delete(rec.key);
        this.#users.delete(rec.key);
        continue;
      }
      const r = this.#parse(rec);
      if (r === undefined) continue;
      this.#held.set(rec.key, { offset: rec.offset, partition: rec.partition, r });
      if (r.kind === 'user') this.#users.set(rec.key, r);
    }
  }

  /**
   * Holds a revocation this process has just appended (durably) before its record comes back through the
   * watch: on Kafka that is up to the reader's fetch wait, in which the same instance must not take the
   * session either. The record, when read, replaces it (any offset is above -1).
   */
  add(r: Revocation): void {
    const key = revocationKey(r);
    if (this.#held.has(key)) return;
    this.#held.set(key, { offset: -1, partition: -1, r });
    if (r.kind === 'user') this.#users.set(key, r);
  }

  #parse(rec: ConsumedRecord): Revocation | undefined {
    try {
      const parsed = revocationSchema.safeParse(JSON.parse(rec.value.toString('utf8')));
      if (parsed.success) return parsed.data;
    } catch {
      // below
    }
    if (this.#unreadable++ % 1000 === 0)
      this.#log.warn({ key: rec.key?.slice(0, 100), offset: rec.offset }, 'console_revocation_unreadable');
    return undefined;
  }

  /** Why `s` no longer holds (the revocation's reason), or undefined while it does. */
  revokedBy(s: Session, nowMs: number): RevocationReason | undefined {
    const own = this.#held.get(`session/${s.sid}`)?.r;
    if (own) return own.reason;
    const began = s.signedInAtMs;
    for (const r of this.#users.values()) {
      if (Date.parse(r.expires_at) <= nowMs) continue;
      if ((r.user === s.principal.name || r.user === s.principal.id) && began <= Date.parse(r.at)) return r.reason;
    }
    return undefined;
  }

  /** Appends tombstones for revocations past their expiry (the view forgets them as it reads them back). */
  async sweep(stream: Stream, topic: string, nowMs: number): Promise<number> {
    const done: string[] = [];
    for (const [key, { r }] of this.#held) if (Date.parse(r.expires_at) <= nowMs) done.push(key);
    if (done.length === 0) return 0;
    await stream.append(
      topic,
      done.map((key) => ({ key, value: Buffer.alloc(0), headers: {} })),
    );
    return done.length;
  }
}
