/**
 * A bound on the pages the pollers of one process hold in memory at once: a
 * page takes a slot before its request is sent and gives it back once it is
 * stored (or dropped).
 *
 * Why: requests are capped (the p-queue), but a fetched page then waits for its
 * append, and appends on one cursor partition are one transaction after
 * another. With hundreds of orgs, pages arrive faster than they are stored
 * while the orgs catch up, and each waiting page is its reply, its parsed
 * events and its records: 1,000 orgs once held about 1,000 pages (600 MB RSS).
 * With slots, a poller that would fetch while the slots are taken waits before
 * its request, where waiting costs nothing.
 *
 * Waiters are served in arrival order, so no org is starved by the others.
 */
import { HooklogError } from '../../platform/errors.js';

/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

export class PageSlots {
  readonly size: number;
  #held = 0;
  readonly #waiters: Array<() => void> = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`page slots must be a positive integer, got ${size}`);
    this.size = size;
  }

  /** Pages held now. */
  get held(): number {
    return this.#held;
  }

  /** Pollers waiting for a slot. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /** A slot if one is free now (for a prefetch, which is skipped rather than waited for). */
  tryAcquire(): Release | undefined {
    if (this.#held >= this.size || this.#waiters.length > 0) return undefined;
    this.#held++;
    return this.#releaser();
  }

  /** A slot, waiting for one in arrival order; rejects with the signal's reason when it aborts first. */
  acquire(signal?: AbortSignal): Promise<Release> {
    const now = this.tryAcquire();
    if (now) return Promise.resolve(now);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<Release>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        // The slot was handed over by a release: #held already counts it.
        resolve(this.#releaser());
      };
      const onAbort = () => {
        const i = this.#waiters.indexOf(grant);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(abortReason(signal!));
      };
      this.#waiters.push(grant);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.#waiters.shift();
      // Handed straight to the next waiter, so a tryAcquire in between cannot jump the queue.
      if (next) next();
      else this.#held--;
    };
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new HooklogError('STREAM_CLOSED', 'poller stopping');
}
