/**
 * The stream seam: everything above it (receivers, pollers, consumers) sees only
 * this interface, never Kafka or the embedded log. Small on purpose.
 *
 * Record shape (decided once): the value is the payload's own bytes, unchanged
 * (for events: the event's JSON), so any consumer can read it; hooklog's
 * metadata rides beside it in headers (see `headers.ts`). The key is the org,
 * so one org's records stay in order within one partition.
 */
export interface StreamRecord {
  readonly key: string | null;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  /** Epoch milliseconds; the stream stamps the append time when absent. */
  readonly timestamp?: number;
}

export interface ConsumedRecord {
  readonly topic: string;
  readonly partition: number;
  /** Position within the partition. Numbers are exact far beyond any offset we will reach (2^53). */
  readonly offset: number;
  readonly key: string | null;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  readonly timestamp: number;
}

/** A contiguous run of one partition's records, in offset order. */
export interface RecordBatch {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly ConsumedRecord[];
  readonly firstOffset: number;
  readonly lastOffset: number;
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  /** Keep only the latest record per key (cursors). */
  readonly compacted?: boolean;
}

export interface TopicWrite {
  readonly topic: string;
  readonly records: readonly StreamRecord[];
}

/** An inclusive offset range of one partition: the records one handler call was (or will be) given. */
export interface BatchRange {
  readonly first: number;
  readonly last: number;
}

/**
 * Where a consumer keeps the batch boundaries it cut, so that a replay after a
 * crash cuts the same batches again (see PartitionWorker). Bound to one group
 * and topic by whoever creates it; the store behind it must be durable.
 */
export interface BatchPlans {
  /** Ranges recorded for `partition` whose last offset is >= `fromOffset`, in offset order. */
  load(partition: number, fromOffset: number): Promise<BatchRange[]>;
  /** Durably records a batch's range; resolves before the batch is handed to the handler. */
  record(partition: number, range: BatchRange): Promise<void>;
}

export interface ConsumeOptions {
  readonly topic: string;
  readonly group: string;
  /**
   * Called with one partition's batch at a time, in offset order per partition;
   * partitions run concurrently. Resolving commits the batch (offset after its
   * last record). Throwing means "not processed": the same records are offered
   * again after a capped backoff; nothing after them is committed meanwhile.
   */
  readonly handler: (batch: RecordBatch) => Promise<void>;
  /** Largest batch handed to the handler. Default 1000. */
  readonly maxBatchRecords?: number;
  /** A partial batch is handed over at most this long after its first record arrived. Default 1000. */
  readonly maxBatchWaitMs?: number;
  /** Records buffered per partition before fetching pauses (back-pressure). Default 10 000. */
  readonly maxBufferedRecords?: number;
  /** Called when the handler threw, before the retry; for logging and metrics. */
  readonly onHandlerError?: (err: unknown, batch: RecordBatch, attempt: number) => void;
  /**
   * Deterministic batches: every batch's range is recorded here before the
   * handler sees it, and a replay from the committed position re-cuts exactly
   * the recorded ranges (ignoring size and time) before cutting new ones.
   * Without it, batches are cut by size and time alone and a replay may cut differently.
   */
  readonly batchPlans?: BatchPlans;
}

export interface Consumer {
  /** Stops fetching, waits for the in-flight handler calls, commits what they finished. */
  stop(): Promise<void>;
}

export interface Stream {
  readonly kind: 'kafka' | 'embedded';
  /** Creates missing topics; existing ones are left as they are. */
  ensureTopics(specs: readonly TopicSpec[]): Promise<void>;
  /** Resolves only once every record is durable (Kafka acks=all; embedded fsync). */
  append(topic: string, records: readonly StreamRecord[]): Promise<void>;
  /** All writes become visible together or not at all (Kafka transaction; embedded: one fsynced frame). */
  appendAtomically(writes: readonly TopicWrite[]): Promise<void>;
  consume(opts: ConsumeOptions): Promise<Consumer>;
  /** Each partition's end: the offset the next appended record gets (what a caught-up group has committed). */
  latestOffsets(topic: string): Promise<Map<number, number>>;
  /** The group's committed position (next offset to read) per partition. */
  committedOffsets(topic: string, group: string): Promise<Map<number, number>>;
  /** Latest record per key of a (compacted) topic, read from the beginning; for cursors on start-up. */
  readLatestByKey(topic: string): Promise<Map<string, ConsumedRecord>>;
  /** Throws when the stream cannot take appends (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
