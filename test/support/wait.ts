/**
 * Polls `probe` until it returns a truthy value or the deadline passes. Tests
 * synchronise on conditions, never on sleeps: a slow machine only makes them slower.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v as NonNullable<T>;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${opts.what ?? 'condition'}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}

export function randomName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Polls a count until it reaches `target`. Fails when the count has not moved for `stallMs` (something is stuck)
 * or, at the latest, after `timeoutMs`; either error says how far it got. A probe that throws counts as no move
 * (as in `waitFor`, a transient error is polled past). For work whose length depends on the
 * machine's load (a drain of thousands of small inserts on a busy 2-core machine), where a fixed deadline cannot
 * tell a slow run from a stalled one.
 */
export async function waitForCount(
  probe: () => number | Promise<number>,
  target: number,
  opts: { stallMs: number; timeoutMs: number; intervalMs?: number; what: string },
): Promise<void> {
  const started = Date.now();
  let last = Number.NaN;
  let movedAt = started;
  let failed: unknown;
  for (;;) {
    let n = last;
    try {
      n = await probe();
      failed = undefined;
    } catch (err) {
      failed = err;
    }
    if (n === target) return;
    const now = Date.now();
    if (!Object.is(n, last)) {
      last = n;
      movedAt = now;
    }
    const stalled = now - movedAt > opts.stallMs;
    if (stalled || now - started > opts.timeoutMs) {
      throw new Error(
        `${stalled ? `stalled for ${opts.stallMs} ms` : `timed out after ${opts.timeoutMs} ms`} waiting for ` +
          `${opts.what}: at ${n} of ${target} after ${now - started} ms` +
          (failed === undefined
            ? ''
            : `; last probe failed: ${failed instanceof Error ? failed.message : String(failed)}`),
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}
