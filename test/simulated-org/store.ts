/**
 * The simulated org's event store: events in persistence order (the order
 * both APIs page in), each with a `published` time that may be earlier than
 * its neighbours' — the service persists events out of published order, which
 * is why a cursor rebuilt from `published` skips or repeats events.
 */

export interface StoredEvent {
  /** Persistence sequence: strictly increasing. */
  readonly seq: number;
  readonly persistedAt: number;
  readonly published: number;
  /** The event's id: uuid (System Log) or eventId (legacy). */
  readonly id: string;
  /** Serialized once, served many times. */
  readonly json: string;
  /** Fields the legacy filter grammar tests. */
  readonly objectType: string;
  readonly targetTypes: readonly string[];
  readonly targetIds: readonly string[];
}

export interface NewEvent {
  readonly event: Record<string, unknown>;
  readonly published: number;
  /** Default: now. Must not be earlier than the last stored event's. */
  readonly persistedAt?: number;
}

export class EventLog {
  readonly #events: StoredEvent[] = [];
  readonly #bySeq = new Map<string, number>();
  #seq = 0;
  readonly #idField: 'uuid' | 'eventId';

  constructor(idField: 'uuid' | 'eventId') {
    this.#idField = idField;
  }

  get length(): number {
    return this.#events.length;
  }

  at(i: number): StoredEvent | undefined {
    return this.#events[i];
  }

  /** Every stored event (tests compute expectations from it). */
  all(): readonly StoredEvent[] {
    return this.#events;
  }

  /** Appends events in persistence order; `published` is written into the event as ISO-8601. */
  add(items: readonly NewEvent[], now: number): StoredEvent[] {
    const out: StoredEvent[] = [];
    for (const item of items) {
      const persistedAt = item.persistedAt ?? now;
      const last = this.#events[this.#events.length - 1];
      if (last && persistedAt < last.persistedAt) throw new Error('events must be added in persistence order');
      const event: Record<string, unknown> = { ...item.event, published: new Date(item.published).toISOString() };
      const id = String(event[this.#idField]);
      const action = (event.action ?? {}) as { objectType?: unknown };
      const targets = Array.isArray(event.targets)
        ? (event.targets as Array<{ objectType?: unknown; id?: unknown }>)
        : [];
      const stored: StoredEvent = {
        seq: ++this.#seq,
        persistedAt,
        published: item.published,
        id,
        json: JSON.stringify(event),
        objectType: String(action.objectType ?? ''),
        targetTypes: targets.map((t) => String(t?.objectType ?? '')),
        targetIds: targets.map((t) => String(t?.id ?? '')),
      };
      this.#events.push(stored);
      this.#bySeq.set(id, this.#events.length - 1);
      out.push(stored);
    }
    return out;
  }

  /** Index of the event with this id (legacy `after` tokens are event ids). */
  indexOfId(id: string): number | undefined {
    return this.#bySeq.get(id);
  }

  /** First index whose seq is greater than `seq`. */
  indexAfterSeq(seq: number): number {
    return this.#lowerBound((e) => e.seq > seq);
  }

  /** First index persisted at or after `t`. */
  indexPersistedFrom(t: number): number {
    return this.#lowerBound((e) => e.persistedAt >= t);
  }

  /** Number of events visible at `now` (persisted by then). */
  visibleCount(now: number): number {
    return this.#lowerBound((e) => e.persistedAt > now);
  }

  #lowerBound(pred: (e: StoredEvent) => boolean): number {
    let lo = 0;
    let hi = this.#events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (pred(this.#events[mid]!)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

export interface Scan {
  readonly items: StoredEvent[];
  /** Index just past the last event considered (the position the next link encodes). */
  readonly end: number;
}

/**
 * Pages forward from `start`: up to `limit` visible events passing `keep`.
 * Events past retention are skipped silently (the query still succeeds).
 */
export function scanForward(
  log: EventLog,
  start: number,
  limit: number,
  now: number,
  retentionMs: number,
  keep: (e: StoredEvent) => boolean,
): Scan {
  const items: StoredEvent[] = [];
  const visible = log.visibleCount(now);
  let i = start;
  while (i < visible && items.length < limit) {
    const e = log.at(i)!;
    i++;
    if (e.published < now - retentionMs) continue;
    if (keep(e)) items.push(e);
  }
  return { items, end: i };
}
