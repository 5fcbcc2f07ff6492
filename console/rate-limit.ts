/**
 * Sign-in attempts per client address: a fixed one-minute window each, held
 * in a bounded map (the oldest address is forgotten first), so a flood of
 * addresses costs memory no more than `maxAddresses` entries.
 */
const WINDOW_MS = 60_000;

export class AttemptLimiter {
  readonly #perMinute: number;
  readonly #max: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(perMinute: number, maxAddresses = 10_000) {
    this.#perMinute = perMinute;
    this.#max = maxAddresses;
  }

  /** Counts an attempt from `address`: true if allowed, false past the limit (then: seconds until the window ends). */
  take(address: string, now: number): { allowed: true } | { allowed: false; retryAfterS: number } {
    let w = this.#windows.get(address);
    if (!w || now - w.start >= WINDOW_MS) {
      this.#windows.delete(address);
      w = { start: now, count: 0 };
      this.#windows.set(address, w);
      if (this.#windows.size > this.#max) this.#windows.delete(this.#windows.keys().next().value!);
    }
    w.count += 1;
    if (w.count <= this.#perMinute) return { allowed: true };
    return { allowed: false, retryAfterS: Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000)) };
  }
}
