/**
 * A non-blocking semaphore over deliveries and bytes. `tryAcquire` never
 * waits: a receiver that queued deliveries beyond its means would only answer
 * them after the service's 3 s had run out, so it answers 503 + Retry-After at
 * once instead and the service's retry finds room later.
 */
export class InFlightLimit {
  readonly #maxDeliveries: number;
  readonly #maxBytes: number;
  readonly #onChange: (deliveryDelta: number, byteDelta: number) => void;
  #deliveries = 0;
  #bytes = 0;

  /** `onChange` hears every change (for the in-flight gauges). */
  constructor(opts: {
    maxDeliveries: number;
    maxBytes: number;
    onChange?: (deliveryDelta: number, byteDelta: number) => void;
  }) {
    this.#maxDeliveries = opts.maxDeliveries;
    this.#maxBytes = opts.maxBytes;
    this.#onChange = opts.onChange ?? (() => undefined);
  }

  get deliveries(): number {
    return this.#deliveries;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Takes one delivery slot and `bytes`, or returns undefined when either
   * limit would be passed. A single delivery larger than the byte limit is
   * still admitted when nothing else is in flight, so a limit set below the
   * body limit cannot refuse a delivery for ever.
   */
  tryAcquire(bytes: number): Permit | undefined {
    if (this.#deliveries >= this.#maxDeliveries) return undefined;
    if (this.#deliveries > 0 && this.#bytes + bytes > this.#maxBytes) return undefined;
    this.#deliveries++;
    this.#bytes += bytes;
    this.#onChange(1, bytes);
    let held = bytes;
    let released = false;
    let waiting = false;
    const free = (): void => {
      if (released) return;
      released = true;
      this.#deliveries--;
      this.#bytes -= held;
      this.#onChange(-1, -held);
    };
    return {
      shrink: (to: number) => {
        if (released || to >= held) return;
        this.#bytes -= held - to;
        this.#onChange(0, to - held);
        held = to;
      },
      holdUntil: (work: Promise<unknown>) => {
        waiting = true;
        work.then(free, free);
      },
      release: () => {
        if (!waiting) free();
      },
    };
  }
}

export interface Permit {
  /** Gives back bytes reserved beyond what the delivery turned out to need. */
  shrink(bytes: number): void;
  /**
   * Keeps the slot until `work` settles, whatever `release` says before then: a delivery answered 503
   * while its append goes on still holds its slot, so a stalled stream fills the slots.
   */
  holdUntil(work: Promise<unknown>): void;
  /** Idempotent; does nothing once `holdUntil` took over. */
  release(): void;
}
