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
    this.#adjust(1, bytes);
    return new Slot(bytes, this.#adjust);
  }

  /** Every change of the counts, made once here so the gauges hear it (one function for all permits). */
  readonly #adjust = (deliveryDelta: number, byteDelta: number): void => {
    this.#deliveries += deliveryDelta;
    this.#bytes += byteDelta;
    this.#onChange(deliveryDelta, byteDelta);
  };
}

/** A taken slot: an object with its own state rather than closures, as one is taken per delivery. */
class Slot implements Permit {
  #held: number;
  #released = false;
  #waiting = false;
  readonly #adjust: (deliveryDelta: number, byteDelta: number) => void;

  constructor(bytes: number, adjust: (deliveryDelta: number, byteDelta: number) => void) {
    this.#held = bytes;
    this.#adjust = adjust;
  }

  shrink(to: number): void {
    if (this.#released || to >= this.#held) return;
    this.#adjust(0, to - this.#held);
    this.#held = to;
  }

  holdUntil(work: Promise<unknown>): void {
    this.#waiting = true;
    work.then(
      () => this.#free(),
      () => this.#free(),
    );
  }

  release(): void {
    if (!this.#waiting) this.#free();
  }

  #free(): void {
    if (this.#released) return;
    this.#released = true;
    this.#adjust(-1, -this.#held);
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
