/**
 * Polls `probe` until it returns a truthy value (or, with `until`, a value `until` accepts) or the deadline
 * passes. Tests synchronise on conditions, never on sleeps: a slow machine only makes them slower.
 *
 * A wait that times out says what it last saw, so a failure in a long run can be read without running it
 * again: the value `until` refused (a query's rows, a count), or what `seen` returns (the counts a boolean
 * probe compares), or the probe's last error. A probe that answers only true or false cannot say more than
 * that: give it `until` (the probe returns what it looked at) or `seen`.
 */
export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  what?: string;
  /** What the probe looks at (counts, rows), named in the time-out's message: for probes that return a boolean. */
  seen?: () => unknown;
}

export function waitFor<T, U extends T>(
  probe: () => T | Promise<T>,
  opts: WaitOptions & { until: (value: T) => value is U },
): Promise<U>;
export function waitFor<T>(
  probe: () => T | Promise<T>,
  opts: WaitOptions & { until: (value: T) => boolean },
): Promise<T>;
export function waitFor<T>(probe: () => T | Promise<T>, opts?: WaitOptions): Promise<NonNullable<T>>;
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  opts: WaitOptions & { until?: (value: T) => boolean } = {},
): Promise<T> {
  const started = Date.now();
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const accept = opts.until ?? ((v: T) => Boolean(v));
  let last: { value: T } | { error: unknown };
  let polls = 0;
  for (;;) {
    polls++;
    try {
      const v = await probe();
      if (accept(v)) return v;
      last = { value: v };
    } catch (err) {
      last = { error: err };
    }
    if (Date.now() - started > timeoutMs) {
      const saw =
        'error' in last
          ? `the probe failed: ${errorText(last.error)}`
          : opts.until || !opts.seen
            ? describeSeen(last.value)
            : null;
      const seen = opts.seen ? seenNow(opts.seen) : null;
      throw new Error(
        `timed out after ${((Date.now() - started) / 1000).toFixed(1)} s (${polls} polls) waiting for ` +
          `${opts.what ?? 'condition'}; last saw ${[saw, seen].filter((s) => s !== null).join('; ')}`,
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 25));
  }
}

const SEEN_CHARS = 800;

/** A value as a failure message shows it: bounded, arrays and maps with their size first. */
export function describeSeen(v: unknown): string {
  if (v instanceof Error) return errorText(v);
  if (v === undefined) return 'undefined (the probe returns nothing it looked at: give it `until` or `seen`)';
  if (typeof v === 'boolean') return `${v} (the probe returns only a boolean: give it \`until\` or \`seen\`)`;
  if (Array.isArray(v)) return `${v.length} ${v.length === 1 ? 'item' : 'items'}: ${bounded(v)}`;
  if (v instanceof Map || v instanceof Set) return `${v.size} entries: ${bounded([...v])}`;
  return bounded(v);
}

function seenNow(seen: () => unknown): string {
  try {
    return describeSeen(seen());
  } catch (err) {
    return `(seen failed: ${errorText(err)})`;
  }
}

function bounded(v: unknown): string {
  // Whatever a test holds (a simulated org, a process handle) shows without failing: cycles cut, buffers sized.
  const within = new WeakSet<object>();
  let text: string;
  try {
    text =
      typeof v === 'string'
        ? JSON.stringify(v)
        : (JSON.stringify(v, function (this: Record<string, unknown>, k: string, x: unknown) {
            // A Buffer reaches the replacer already turned to JSON: its size is read from the holder.
            const raw = this[k];
            if (Buffer.isBuffer(raw)) return `<${raw.length} bytes>`;
            if (typeof x === 'bigint') return x.toString();
            if (typeof x === 'object' && x !== null) {
              if (within.has(x)) return '<repeated>';
              within.add(x);
            }
            return x;
          }) ?? String(v));
  } catch {
    text = String(v);
  }
  return text.length > SEEN_CHARS ? `${text.slice(0, SEEN_CHARS)}… (${text.length} chars)` : text;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
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
