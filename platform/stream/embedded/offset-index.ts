/**
 * What the log knows about each topic-partition, rebuilt from the frames on
 * open and kept current on append: the next offset to assign, and a sparse
 * index from offsets to frame positions so a reader can start near its
 * committed offset instead of at the beginning of the log.
 */

/** A place in the log: a segment (named by its first frame's seq) and a byte position in it. */
export interface Position {
  readonly segment: number;
  readonly pos: number;
}

interface Entry extends Position {
  /** Offset of the first record of this partition in the frame at this position. */
  readonly offset: number;
}

/** Index a partition's frame when it is at least this far from the partition's previous entry. */
const DEFAULT_INTERVAL_BYTES = 64 * 1024;

export const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

export class OffsetIndex {
  readonly #next = new Map<string, number>();
  readonly #entries = new Map<string, Entry[]>();
  readonly #intervalBytes: number;

  constructor(intervalBytes = DEFAULT_INTERVAL_BYTES) {
    this.#intervalBytes = intervalBytes;
  }

  /**
   * Records a section found at `at`, in log order. Offsets must continue exactly
   * where the partition's previous section ended: anything else means frames are
   * missing or duplicated, and the caller reports the log corrupt.
   */
  note(topic: string, partition: number, baseOffset: number, count: number, at: Position): void {
    const key = tpKey(topic, partition);
    const next = this.#next.get(key);
    if (next !== undefined && next !== baseOffset) {
      throw new Error(`${topic}[${partition}] continues at offset ${baseOffset}, expected ${next}`);
    }
    this.#next.set(key, baseOffset + count);
    if (count === 0) return;
    let entries = this.#entries.get(key);
    if (!entries) this.#entries.set(key, (entries = []));
    const last = entries[entries.length - 1];
    // Every segment gets its own first entry, so dropping segments keeps the rest usable.
    if (!last || last.segment !== at.segment || at.pos - last.pos >= this.#intervalBytes) {
      entries.push({ segment: at.segment, pos: at.pos, offset: baseOffset });
    }
  }

  /** Next offset to assign in the partition (0 for one never written). */
  nextOffset(topic: string, partition: number): number {
    return this.#next.get(tpKey(topic, partition)) ?? 0;
  }

  /** Every partition the log has seen, with its next offset. */
  *partitions(): Iterable<{ topic: string; partition: number; next: number }> {
    for (const [key, next] of this.#next) {
      const sep = key.lastIndexOf('\u0000');
      yield { topic: key.slice(0, sep), partition: Number(key.slice(sep + 1)), next };
    }
  }

  /**
   * Where to start reading to find `offset`: every frame before the returned
   * position holds only smaller offsets of this partition. `undefined` when no
   * retained frame holds a record of the partition (start at the log's end).
   */
  seek(topic: string, partition: number, offset: number): Position | undefined {
    const entries = this.#entries.get(tpKey(topic, partition));
    if (!entries || entries.length === 0) return undefined;
    let lo = 0;
    let hi = entries.length - 1;
    // Last entry with entry.offset <= offset; the first entry when all are larger.
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (entries[mid]!.offset <= offset) lo = mid;
      else hi = mid - 1;
    }
    const e = entries[lo]!;
    return { segment: e.segment, pos: e.pos };
  }

  /**
   * The first offset of the partition stored in `segment` or a later one
   * (`exact`: in `segment` itself); undefined when there is none.
   */
  firstOffsetFrom(topic: string, partition: number, segment: number, exact = false): number | undefined {
    const e = this.#entries.get(tpKey(topic, partition))?.find((x) => x.segment >= segment);
    return e && (!exact || e.segment === segment) ? e.offset : undefined;
  }

  /** The index entries that point into `segment`, for its sidecar (segments.ts). */
  entriesIn(segment: number): Array<[topic: string, partition: number, offset: number, pos: number]> {
    const out: Array<[string, number, number, number]> = [];
    for (const [key, entries] of this.#entries) {
      const sep = key.lastIndexOf('\u0000');
      for (const e of entries)
        if (e.segment === segment) out.push([key.slice(0, sep), Number(key.slice(sep + 1)), e.offset, e.pos]);
    }
    return out;
  }

  /**
   * Restores what a sealed segment's sidecar says instead of replaying its
   * frames: its entries, and each partition's next offset at its end. Segments
   * are restored in log order, before any frame is noted.
   */
  restore(
    segment: number,
    entries: ReadonlyArray<readonly [string, number, number, number]>,
    next: ReadonlyArray<readonly [string, number, number]>,
  ): void {
    for (const [topic, partition, offset, pos] of entries) {
      const key = tpKey(topic, partition);
      let list = this.#entries.get(key);
      if (!list) this.#entries.set(key, (list = []));
      list.push({ segment, pos, offset });
    }
    for (const [topic, partition, n] of next) this.#next.set(tpKey(topic, partition), n);
  }

  /** Forgets positions in segments before `segment` (deleted by retention). Next offsets stay. */
  dropBefore(segment: number): void {
    for (const [key, entries] of this.#entries) {
      const keep = entries.findIndex((e) => e.segment >= segment);
      if (keep === -1) this.#entries.delete(key);
      else if (keep > 0) entries.splice(0, keep);
    }
  }
}
