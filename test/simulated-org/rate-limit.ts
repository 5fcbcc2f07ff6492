/**
 * The simulated org's rate-limit buckets: one per API, fixed windows aligned
 * to the epoch, `X-Rate-Limit-*` headers on every reply, 429 E0000047 once a
 * window's requests are used up. A window in which Remaining reached 0 counts
 * as a "violation" — the real service e-mails the org's admins then. Other
 * clients of the org can be simulated with `foreignPerWindow`.
 */

export interface BucketOptions {
  readonly limit: number;
  /** Whole seconds: Reset is sent in epoch seconds. */
  readonly windowMs: number;
  /** Requests other clients make at the start of each window. */
  readonly foreignPerWindow?: number;
}

export interface Admission {
  readonly allowed: boolean;
  readonly headers: Record<string, string>;
}

export class Bucket {
  readonly #o: BucketOptions;
  #windowStart = -1;
  #used = 0;
  /** Requests of ours per window start (tests compute budget use). */
  readonly usedPerWindow = new Map<number, number>();
  /** Windows where Remaining reached 0. */
  exhaustedWindows = 0;
  /** 429s served because the bucket was empty (not injected ones). */
  served429 = 0;

  constructor(opts: BucketOptions) {
    if (opts.windowMs < 1000 || opts.windowMs % 1000 !== 0)
      throw new Error('windowMs must be a positive multiple of 1000');
    this.#o = opts;
  }

  get options(): BucketOptions {
    return this.#o;
  }

  #roll(now: number): void {
    const start = Math.floor(now / this.#o.windowMs) * this.#o.windowMs;
    if (start !== this.#windowStart) {
      this.#windowStart = start;
      this.#used = Math.min(this.#o.limit, this.#o.foreignPerWindow ?? 0);
    }
  }

  /** Headers describing the bucket now, without taking from it. */
  peek(now: number): Record<string, string> {
    this.#roll(now);
    return this.#headers();
  }

  /** Takes one request from the bucket, or refuses it. */
  admit(now: number): Admission {
    this.#roll(now);
    if (this.#used >= this.#o.limit) {
      this.served429++;
      return { allowed: false, headers: this.#headers() };
    }
    this.#used++;
    this.usedPerWindow.set(this.#windowStart, (this.usedPerWindow.get(this.#windowStart) ?? 0) + 1);
    if (this.#used === this.#o.limit) this.exhaustedWindows++;
    return { allowed: true, headers: this.#headers() };
  }

  #headers(): Record<string, string> {
    return {
      'x-rate-limit-limit': String(this.#o.limit),
      'x-rate-limit-remaining': String(Math.max(0, this.#o.limit - this.#used)),
      'x-rate-limit-reset': String(Math.ceil((this.#windowStart + this.#o.windowMs) / 1000)),
    };
  }
}
