/**
 * Group commit: appends that arrive while a write+fsync is in flight wait and
 * then share the next one. One fsync costs the same for one record or a
 * thousand, so under concurrency the log does far fewer fsyncs than appends,
 * and no caller is acknowledged before the fsync that covers it.
 */
interface Pending<T> {
  readonly item: T;
  readonly bytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class GroupCommit<T> {
  readonly #flush: (items: T[]) => Promise<void>;
  readonly #maxBytes: number;
  #pending: Array<Pending<T>> = [];
  #running: Promise<void> = Promise.resolve();
  /** Cleared by the loop itself in the same tick it sees the queue empty, so no submit is stranded. */
  #active = false;

  /**
   * @param flush writes and syncs `items` as one unit; called one at a time.
   * @param maxBytes soft cap on one group; a single larger item still goes alone, whole.
   */
  constructor(flush: (items: T[]) => Promise<void>, maxBytes: number) {
    this.#flush = flush;
    this.#maxBytes = maxBytes;
  }

  /** Resolves once the group holding `item` was flushed; rejects with the flush's error. */
  submit(item: T, bytes: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, bytes, resolve, reject });
      if (!this.#active) {
        this.#active = true;
        this.#running = this.#loop();
      }
    });
  }

  /** Resolves when nothing is pending or in flight. */
  async drain(): Promise<void> {
    while (this.#active) await this.#running;
  }

  async #loop(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        let bytes = 0;
        let n = 0;
        while (n < this.#pending.length && (n === 0 || bytes + this.#pending[n]!.bytes <= this.#maxBytes)) {
          bytes += this.#pending[n]!.bytes;
          n++;
        }
        const group = this.#pending.splice(0, n);
        try {
          await this.#flush(group.map((p) => p.item));
          for (const p of group) p.resolve();
        } catch (err) {
          for (const p of group) p.reject(err);
        }
      }
    } finally {
      // Same tick as the empty check above: a submit after this starts a new loop.
      this.#active = false;
    }
  }
}
