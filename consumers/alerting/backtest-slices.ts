/**
 * Which parts of a backtest's range to read. The range is cut into event-time
 * slices; one GROUP BY tells how many events each slice holds, so reads walk
 * only the slices that hold events, several at once while their events stay
 * under a bound. A long, sparse range (three years, twelve events) is one
 * read, not one query per slice; a dense one is read slice by slice as
 * before, which keeps each read's FINAL merge and sort small. Pure functions.
 */

/** A slice (its index from `since`, sliceMs long) and the events it holds. */
export interface SliceCount {
  readonly slice: number;
  readonly events: number;
}

/** One read: [since, until) in event time, covering whole slices. */
export interface Read {
  readonly since: number;
  readonly until: number;
  readonly events: number;
}

/**
 * Groups the non-empty slices (in slice order) into reads of at most
 * `maxEvents` events each (a slice holding more is a read of its own), and
 * clips the last to `until`. Empty slices between those of one read cost nothing:
 * the read's range covers them, and they hold no rows.
 */
export function planReads(
  counts: readonly SliceCount[],
  since: number,
  until: number,
  sliceMs: number,
  maxEvents: number,
): Read[] {
  const reads: Read[] = [];
  let open: { first: number; last: number; events: number } | null = null;
  const close = () => {
    if (!open) return;
    reads.push({
      since: since + open.first * sliceMs,
      until: Math.min(until, since + (open.last + 1) * sliceMs),
      events: open.events,
    });
    open = null;
  };
  for (const c of counts) {
    if (c.events <= 0) continue;
    if (open && open.events + c.events > maxEvents) close();
    if (!open) open = { first: c.slice, last: c.slice, events: 0 };
    open.last = c.slice;
    open.events += c.events;
  }
  close();
  return reads;
}

/** Whether [from, to) overlaps a slice holding events (so a scheduled run over it may find rows). */
export function holdsEvents(
  counts: readonly SliceCount[],
  since: number,
  sliceMs: number,
  from: number,
  to: number,
): boolean {
  const first = Math.floor((from - since) / sliceMs);
  const last = Math.ceil((to - since) / sliceMs) - 1;
  // counts are sorted by slice: a binary search for the first slice at or after `first`.
  let lo = 0;
  let hi = counts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (counts[mid]!.slice < first) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < counts.length && counts[i]!.slice <= last; i++) if (counts[i]!.events > 0) return true;
  return false;
}
