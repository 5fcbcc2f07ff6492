/**
 * Sigma correlation `temporal` / `temporal_ordered`: events matching each of
 * N base rules, of one group, all within `timespan` (in rule order for
 * temporal_ordered). State per (rule, group): one time-sorted list per step.
 *
 * As for windows (windows.ts), no stored set of entries already completes
 * the correlation (a set that did fired and was removed), so a new event can
 * only complete a set it belongs to: only sets containing it are searched.
 */
import { insertSorted, pruneBefore, type Entry } from './windows.js';

/** Per group: one sorted list per step. */
export type StepLists = Entry[][];

/**
 * After `e` was inserted into step `k`: indexes (one per step) of a complete
 * set containing `e`, spanning at most `windowMs`, in step order when
 * `ordered`; or null.
 */
export function findSet(lists: StepLists, k: number, e: Entry, windowMs: number, ordered: boolean): number[] | null {
  const t = e[0];
  const starts = new Set<number>([t - windowMs]);
  for (const list of lists) for (const x of list) if (x[0] >= t - windowMs && x[0] <= t) starts.add(x[0]);
  for (const s of [...starts].sort((a, b) => a - b)) {
    const end = s + windowMs;
    const pick: number[] = [];
    let prev = s;
    let ok = true;
    for (let j = 0; j < lists.length && ok; j++) {
      if (j === k) {
        const i = lists[j]!.findIndex((x) => x[1] === e[1]);
        if (ordered && t < prev) ok = false;
        pick.push(i);
        prev = t;
        continue;
      }
      const lo = ordered ? prev : s;
      const hi = ordered && j < k ? t : end;
      const i = lists[j]!.findIndex((x) => x[0] >= lo && x[0] <= hi && x[0] >= s && x[0] <= end);
      if (i < 0) ok = false;
      else {
        pick.push(i);
        if (ordered) prev = lists[j]![i]![0];
      }
    }
    if (ok) return pick;
  }
  return null;
}

/** Adds `e` to step `k`; when it completes a set, removes the set and returns its entries in step order. */
export function addToStep(lists: StepLists, k: number, e: Entry, windowMs: number, ordered: boolean): Entry[] | null {
  if (lists[k]!.some((x) => x[1] === e[1])) return null; // a repeat of an event
  insertSorted(lists[k]!, e);
  const pick = findSet(lists, k, e, windowMs, ordered);
  if (!pick) return null;
  const taken = pick.map((i, j) => lists[j]![i]!);
  pick.forEach((i, j) => lists[j]!.splice(i, 1));
  return taken;
}

export function pruneSteps(lists: StepLists, before: number): void {
  for (const l of lists) pruneBefore(l, before);
}
