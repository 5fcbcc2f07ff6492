/**
 * Users' current risk, in memory, for the sign-in path: a lookup is two Map
 * reads and a comparison with the clock, never I/O.
 *
 * Kept current from `<prefix>.risk` (schemas/risk.ts) by `Stream.watch`: on
 * Kafka the topic's long-lived reader in this process, on the embedded log
 * each frame as it becomes durable, so every instance of a fleet has a
 * change within the reader's fetch wait (200 ms) of its append. Records of a
 * key are taken in offset order (a record older than the one held is
 * ignored, tombstones included), so a re-read from the beginning or a
 * snapshot arriving after newer records never brings back an old state.
 *
 * Expiry is decided here, at each lookup: a contribution past its
 * `expires_at` no longer counts, before the state saying so arrives (the
 * fold appends it within `expiry_check_interval_ms`), and also while the
 * stream is down (the view keeps what it had; only new findings wait).
 */
import type { Logger } from '../../platform/log.js';
import type { ConsumedRecord, Stream } from '../../platform/stream/types.js';
import { RISK_LEVELS, riskRank, riskStateSchema, type RiskLevel } from '../../schemas/risk.js';

/** A user's contributions as the lookup reads them: [rank, expires at (epoch ms)], highest rank first. */
interface Entry {
  readonly offset: number;
  readonly levels: ReadonlyArray<readonly [number, number]>;
}

export interface RiskLookup {
  /** The user's level at `nowMs` (`none` when unknown). */
  level(org: string, userId: string | undefined, nowMs: number): RiskLevel;
}

export class RiskView implements RiskLookup {
  /** org → user id → entry (tombstones kept as entries without levels, to keep their offset). */
  readonly #orgs = new Map<string, Map<string, Entry>>();
  readonly #log: Logger;
  #stop: (() => void) | null = null;
  #ignored = 0;

  constructor(logger: Logger) {
    this.#log = logger.child({ component: 'token-hook-risk' });
  }

  /** Starts watching `topic`; resolves once everything appended before the call is in. */
  async start(stream: Stream, topic: string): Promise<void> {
    this.#stop = await stream.watch(topic, (records) => this.apply(records));
    this.#log.info({ topic, users: this.size }, 'risk view current');
  }

  stop(): void {
    this.#stop?.();
    this.#stop = null;
  }

  /** Users with an entry (at any level, tombstones included). */
  get size(): number {
    let n = 0;
    for (const m of this.#orgs.values()) n += m.size;
    return n;
  }

  /** Takes records of `<prefix>.risk` (Stream.watch's listener). */
  apply(records: readonly ConsumedRecord[]): void {
    for (const r of records) {
      const key = r.key;
      if (key === null) continue;
      // `<org>/user/<id>` (riskKey): the org and id as the lookup gets them.
      const a = key.indexOf('/user/');
      if (a <= 0) continue;
      const org = key.slice(0, a);
      const id = key.slice(a + 6);
      let users = this.#orgs.get(org);
      const had = users?.get(id);
      if (had && had.offset >= r.offset) continue;
      const levels = r.value.length === 0 ? [] : this.#levels(r);
      if (levels === null) continue;
      if (!users) this.#orgs.set(org, (users = new Map()));
      users.set(id, { offset: r.offset, levels });
    }
  }

  #levels(r: ConsumedRecord): Array<readonly [number, number]> | null {
    let parsed;
    try {
      parsed = riskStateSchema.safeParse(JSON.parse(r.value.toString('utf8')));
    } catch {
      parsed = null;
    }
    if (!parsed?.success) {
      // Not ours to fix: logged once in a while, the user's previous entry stands.
      if (this.#ignored++ % 1000 === 0) this.#log.warn({ key: r.key, offset: r.offset }, 'risk record unreadable');
      return null;
    }
    return parsed.data.contributions
      .map((c) => [riskRank(c.level), Date.parse(c.expires_at)] as const)
      .sort((x, y) => y[0] - x[0]);
  }

  level(org: string, userId: string | undefined, nowMs: number): RiskLevel {
    if (userId === undefined) return 'none';
    const e = this.#orgs.get(org)?.get(userId);
    if (e === undefined) return 'none';
    for (const [rank, expires] of e.levels) if (expires > nowMs) return RISK_LEVELS[rank]!;
    return 'none';
  }
}
