/**
 * Window state for one (rule, group): pure functions over arrays sorted by
 * event time, so out-of-order arrivals are inserted where they belong and a
 * finding depends on the events, not on the order they were read in.
 *
 * Invariant: no stored run of entries already satisfies the rule (a run that
 * did fired and was removed), so a new entry can only complete a window that
 * contains it — that is the only place we look.
 */

/** [event time ms, event id, distinct value or ''] */
export type Entry = [number, string, string];

/** Inserts keeping time order (stable: equal times keep arrival order). */
export function insertSorted(list: Entry[], e: Entry): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]![0] <= e[0]) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, e);
  return lo;
}

/**
 * After inserting at `at`: the earliest run [i..j] containing `at`, spanning at
 * most `windowMs`, with ≥ `threshold` entries (or distinct values when
 * `distinct`). Returns the run's bounds or null.
 */
export function findRun(
  list: readonly Entry[],
  at: number,
  windowMs: number,
  threshold: number,
  distinct: boolean,
): [number, number] | null {
  const t = list[at]![0];
  let i = at;
  while (i > 0 && list[i - 1]![0] >= t - windowMs) i--;
  for (; i <= at; i++) {
    const end = list[i]![0] + windowMs;
    let j = at;
    while (j + 1 < list.length && list[j + 1]![0] <= end) j++;
    const n = distinct ? new Set(list.slice(i, j + 1).map((e) => e[2])).size : j - i + 1;
    if (n >= threshold) return [i, j];
  }
  return null;
}

/** Drops entries older than `before` (they can no longer share a window with an on-time event). */
export function pruneBefore(list: Entry[], before: number): void {
  let n = 0;
  while (n < list.length && list[n]![0] < before) n++;
  if (n) list.splice(0, n);
}

/** Sequence steps for one group: first-step and second-step events waiting for a partner. */
export interface SeqState {
  a: Entry[];
  b: Entry[];
}

/**
 * Finds a partner for `e` among `others`: for an ordered sequence the first
 * step must not come after the second; for `any` (Sigma near) either may.
 * Returns the partner's index (the earliest eligible one) or -1.
 */
export function findPartner(
  others: readonly Entry[],
  e: Entry,
  eIsFirst: boolean,
  windowMs: number,
  order: 'ordered' | 'any',
): number {
  for (let i = 0; i < others.length; i++) {
    const d = others[i]![0] - e[0];
    const ok =
      order === 'any' ? Math.abs(d) <= windowMs : eIsFirst ? d >= 0 && d <= windowMs : d <= 0 && -d <= windowMs;
    if (ok) return i;
  }
  return -1;
}
