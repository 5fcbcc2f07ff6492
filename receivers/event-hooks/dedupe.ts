/**
 * Recently seen deliveries, by hook and envelope eventId: bounded (least
 * recently used forgotten first) and time-limited.
 *
 * The service retries a delivery once on a 5xx or a time-out, and a delivery
 * can succeed on our side after the service stopped waiting for it. Knowing
 * the eventId lets the retry be acknowledged without appending its events a
 * second time, or join the append still in flight. This is an optimisation
 * only: forgetting an id (capacity, TTL, restart) costs a duplicate append,
 * which ClickHouse folds by (org, uuid), the ground truth.
 */
export type Seen =
  | { readonly state: 'done' }
  /** An append for this delivery is in flight; resolves true when it became durable, false when it failed. */
  | { readonly state: 'pending'; readonly settled: Promise<boolean> };

type Entry = { state: 'done'; expiresAt: number } | { state: 'pending'; settled: Promise<boolean> };

export class RecentDeliveries {
  readonly #capacity: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Map iteration order is insertion order: re-inserting on use makes the first key the least recently used. */
  readonly #entries = new Map<string, Entry>();

  constructor(opts: { capacity: number; ttlMs: number; now?: () => number }) {
    this.#capacity = opts.capacity;
    this.#ttlMs = opts.ttlMs;
    this.#now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  lookup(key: string): Seen | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.state === 'done' && entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    this.#touch(key, entry);
    return entry.state === 'done' ? { state: 'done' } : { state: 'pending', settled: entry.settled };
  }

  /**
   * Tracks the append of delivery `key`: remembered as done (for the TTL,
   * counted from now) once `work` resolves, forgotten if it rejects so that a
   * retry appends again.
   */
  track(key: string, work: Promise<unknown>): void {
    if (this.#capacity === 0) return;
    const settled = work.then(
      () => {
        if (this.#entries.get(key) === entry) this.#touch(key, { state: 'done', expiresAt: this.#now() + this.#ttlMs });
        return true;
      },
      () => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
        return false;
      },
    );
    const entry: Entry = { state: 'pending', settled };
    this.#touch(key, entry);
  }

  #touch(key: string, entry: Entry): void {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }
}

/** The dedupe key of a delivery: hook ids cannot contain a newline, so the pair is unambiguous. */
export function deliveryKey(hookId: string, deliveryId: string): string {
  return `${hookId}\n${deliveryId}`;
}
