/**
 * A drain seen as a timeline: rows visible (and this process's CPU time) at each poll, split into its
 * start-up and its steady state, so a one-off cost that one side pays and the other does not (a consumer
 * group's join, held back by the broker's group.initial.rebalance.delay.ms; the first fetch; the first
 * flush interval) shows as start-up and cannot move the steady-state figure. Pure: no I/O.
 */

/** One poll: performance.now(), rows visible, and CPU microseconds of the process since the drain began. */
export interface Sample {
  readonly t: number;
  readonly rows: number;
  readonly cpuUs: number;
}

export interface Phases {
  /** From the start (sink start, view creation) to the first rows visible. */
  readonly startupMs: number;
  /**
   * Rows per second over the steady window: between the polls that first saw `from` and `to` of N. NaN
   * when the drain crossed the window in one step (an engine flushing everything at once): it had no
   * steady state to measure at this N.
   */
  readonly steadyRate: number;
  /** Rows per CPU-second of the process over the same window. */
  readonly steadyPerCpuSecond: number;
  /** The window, as fractions of N actually used (the first polls at or past the thresholds). */
  readonly window: readonly [number, number];
}

/**
 * Splits a drain of `n` rows started at `t0`. The steady window runs from the first poll that saw at
 * least `from`·n rows to the first that saw at least `to`·n: it leaves out the start-up (nothing visible
 * yet, then the first insert's step) and the tail (the last partial batches, cut by time). Throws when
 * no row was ever visible; the steady figures are NaN when the window holds fewer than two distinct
 * polls (N too small for the batch size).
 */
export function phases(t0: number, n: number, samples: readonly Sample[], from = 0.1, to = 0.9): Phases {
  const first = samples.find((s) => s.rows > 0);
  if (!first) throw new Error('no rows were ever visible');
  const a = samples.find((s) => s.rows >= from * n);
  const b = samples.find((s) => s.rows >= to * n);
  if (!a || !b || b.t <= a.t || b.rows <= a.rows)
    return { startupMs: first.t - t0, steadyRate: NaN, steadyPerCpuSecond: NaN, window: [NaN, NaN] };
  const rows = b.rows - a.rows;
  return {
    startupMs: first.t - t0,
    steadyRate: rows / ((b.t - a.t) / 1000),
    steadyPerCpuSecond: rows / ((b.cpuUs - a.cpuUs) / 1e6),
    window: [a.rows / n, b.rows / n],
  };
}
