/**
 * Consumer lag, for both stream kinds, in the process's one registry: every
 * `consume()` registers its group here, so the sink, alerting and any later
 * consumer show up without wiring of their own.
 *
 * - `hooklog_consumer_lag_records{group,topic,partition}`: the partition's
 *   end offset minus the group's committed offset, read from the stream at
 *   scrape time (Kafka: one admin round trip per watched topic and group).
 * - `hooklog_consumer_lag_seconds{…}`: now minus the append time of the oldest
 *   record the group has fetched but not committed (0 when nothing is pending).
 *   Records are fetched in offset order from the committed position, so that
 *   is the oldest uncommitted record there is; a stalled consumer's grows.
 */
import { gauge } from '../metrics.js';

/** What lag is computed from; both streams have it. */
export interface LagSource {
  latestOffsets(topic: string): Promise<Map<number, number>>;
  committedOffsets(topic: string, group: string): Promise<Map<number, number>>;
}

/** A partition's worker as lag sees it. */
export interface PendingView {
  /** Append time (epoch ms) of the oldest record handed over or buffered and not yet committed; null when none. */
  readonly oldestPendingTimestamp: number | null;
}

export class LagWatch {
  readonly workers = new Map<number, PendingView>();
  constructor(
    readonly source: LagSource,
    readonly topic: string,
    readonly group: string,
  ) {}

  setWorker(partition: number, worker: PendingView): void {
    this.workers.set(partition, worker);
  }

  dropWorker(partition: number, worker: PendingView): void {
    if (this.workers.get(partition) === worker) this.workers.delete(partition);
  }

  close(): void {
    watches.delete(this);
    for (const g of [lagRecords, lagSeconds]) {
      for (const partition of partitionsSeen.get(this) ?? [])
        g.remove({ group: this.group, topic: this.topic, partition: String(partition) });
    }
    partitionsSeen.delete(this);
  }
}

const watches = new Set<LagWatch>();
const partitionsSeen = new WeakMap<LagWatch, Set<number>>();

function seen(w: LagWatch, partition: number): string {
  let s = partitionsSeen.get(w);
  if (!s) partitionsSeen.set(w, (s = new Set()));
  s.add(partition);
  return String(partition);
}

/** Starts watching a group's lag on a topic; `close()` when the consumer stops. */
export function watchLag(source: LagSource, topic: string, group: string): LagWatch {
  const w = new LagWatch(source, topic, group);
  watches.add(w);
  return w;
}

const lagRecords = gauge({
  name: 'hooklog_consumer_lag_records',
  help: 'Records appended to the partition that the consumer group has not committed yet.',
  labelNames: ['group', 'topic', 'partition'],
  async collect() {
    await Promise.all(
      [...watches].map(async (w) => {
        try {
          const [ends, committed] = await Promise.all([
            w.source.latestOffsets(w.topic),
            w.source.committedOffsets(w.topic, w.group),
          ]);
          for (const [partition, end] of ends) {
            this.set(
              { group: w.group, topic: w.topic, partition: seen(w, partition) },
              Math.max(0, end - (committed.get(partition) ?? 0)),
            );
          }
        } catch {
          // The stream cannot answer now (broker down): keep the last values rather than fail the scrape.
        }
      }),
    );
  },
});

const lagSeconds = gauge({
  name: 'hooklog_consumer_lag_seconds',
  help: 'Age of the oldest record the consumer group has fetched and not yet committed (0 when none is pending).',
  labelNames: ['group', 'topic', 'partition'],
  collect() {
    const now = Date.now();
    for (const w of watches) {
      for (const [partition, worker] of w.workers) {
        const ts = worker.oldestPendingTimestamp;
        this.set(
          { group: w.group, topic: w.topic, partition: seen(w, partition) },
          ts === null ? 0 : Math.max(0, (now - ts) / 1000),
        );
      }
    }
  },
});
