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
  /**
   * A partial batch is handed over once this long has passed since the partition's previous batch was cut:
   * at most one partial batch per interval, and the first records after a quiet spell go at once. Default 1000.
   */
  readonly maxBatchWaitMs?: number;
  /** Records buffered per partition before fetching pauses (back-pressure). Default 10 000. */
  readonly maxBufferedRecords?: number;
  /**
   * Kafka: the most one fetch brings per partition, in (compressed) bytes. Default kafkajs's 1 MiB. A
   * consumer whose batches are large (the sink) fills them in fewer round trips with more. The embedded
   * stream reads its own files and ignores it.
   */
  readonly fetchMaxBytesPerPartition?: number;
  /** Called when the handler threw, before the retry; for logging and metrics. */
  readonly onHandlerError?: (err: unknown, batch: RecordBatch, attempt: number) => void;
  /**
   * Deterministic batches: every batch's range is recorded here before the
   * handler sees it, and a replay from the committed position re-cuts exactly
   * the recorded ranges (ignoring size and time) before cutting new ones.
   * Without it, batches are cut by size and time alone and a replay may cut differently.
   */
  readonly batchPlans?: BatchPlans;
  /**
   * Told which partitions this member reads from now on (after each rebalance; embedded: every partition, at
   * start), for work a partition's reader does besides its batches (timers, such as risk expiry). Advisory:
   * whatever must not happen twice still needs a claim, which fences a member that learns of a revocation late.
   */
  readonly onAssigned?: (partitions: readonly number[]) => void;
  /** Told which partitions this member no longer reads (a rebalance starting, a crash, stop). */
  readonly onRevoked?: (partitions: readonly number[]) => void;
}

/** Gets a topic's records as this process reads them (Stream.watch); must not throw or block. */
export type RecordListener = (records: readonly ConsumedRecord[]) => void;

export interface Consumer {
  /** Stops fetching, waits for the in-flight handler calls, commits what they finished. */
  stop(): Promise<void>;
}

/**
 * The right to append atomically on behalf of one piece of owned work (for
 * example "the pollers of cursors partition 3"), not on behalf of a process.
 * Claiming it fences every earlier holder of the same name: once a newer
 * holder has claimed, an older one can neither start nor commit an append
 * (Kafka: one transactional id per owned partition, as Kafka Streams does).
 */
export interface Transactor {
  readonly owner: string;
  /**
   * Like Stream.appendAtomically. Throws STREAM_FENCED (not retriable) once a
   * newer holder claimed the same owner; the holder must stop the work, and
   * claim again only if it owns the work again.
   */
  appendAtomically(writes: readonly TopicWrite[]): Promise<void>;
  close(): Promise<void>;
}

export interface AssignmentOptions {
  /** The topic whose partitions are the units of ownership. */
  readonly topic: string;
  /** The group sharing them out among live processes. */
  readonly group: string;
  /**
   * This process now owns these partitions (in addition to any it kept). Called
   * one at a time with onRevoked, never concurrently; the next rebalance waits for it.
   */
  readonly onAssigned: (partitions: readonly number[], assignment: Assignment) => Promise<void>;
  /** This process may no longer own these partitions: stop their work before resolving. */
  readonly onRevoked: (partitions: readonly number[]) => Promise<void>;
  /** Told about failures of the assigned/revoked callbacks. */
  readonly onError?: (err: unknown) => void;
}

/** A live share of a topic's partitions (see Stream.assign). */
export interface Assignment {
  /** Partitions of the topic (fixed for the assignment's life). */
  readonly partitions: number;
  /** The partition a key belongs to: the same one the stream appends that key to. */
  partitionOf(key: string): number;
  /**
   * False when this process cannot be sure it still owns what it was assigned
   * (no heartbeat answered within the session time-out: paused, cut off). Work
   * must not start new requests while false.
   */
  current(): boolean;
  /**
   * Forget these partitions (their work was fenced: another process claimed it,
   * so the group has moved them); if they are assigned to us again, onAssigned
   * runs for them afresh.
   */
  release(partitions: readonly number[]): void;
  /** Revokes everything (onRevoked), then leaves the group so others take over at once. */
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
  /**
   * Claims `owner` for atomic appends, fencing its earlier holders (see
   * Transactor). `stillOwner` is asked before the claim is ever re-initialised
   * after a failure; false turns the failure into STREAM_FENCED.
   */
  claim(owner: string, stillOwner?: () => boolean): Promise<Transactor>;
  /**
   * Joins `group` for a share of `topic`'s partitions, without reading its
   * records: ownership of work (Kafka: the group's assignment; embedded: this
   * process owns every partition). Resolves once joined and the first
   * assignment's onAssigned has run.
   */
  assign(opts: AssignmentOptions): Promise<Assignment>;
  /**
   * Latest record per key of a (compacted) topic (of the given partitions only, when given), read from the beginning.
   * A key whose latest record is a tombstone (an empty value) may be missing from the map instead, as after
   * compaction (Kafka's reader drops it: platform/stream/kafka/table.ts): readers treat the two alike.
   */
  readLatestByKey(topic: string, partitions?: readonly number[]): Promise<Map<string, ConsumedRecord>>;
  /**
   * Keeps `topic`'s latest record per key current in this process from now on, so that a later
   * readLatestByKey (a hand-over) only waits for what was appended since. Kafka: one long-lived reader
   * per topic, joined here once (a broker delays a new group's first join by
   * group.initial.rebalance.delay.ms); embedded: nothing to do, the log is local.
   */
  follow(topic: string): Promise<void>;
  /**
   * Hands `listener` the latest record per key of `topic` that this process knows, then every record appended
   * after, as it is read, until the returned function is called: an in-memory view kept current without a
   * consumer group or commits (the token hook's risk view). Resolves once the listener has had everything
   * appended before the call. A key's records may come again or out of order around the start (and, on Kafka,
   * after the reader rejoins): keep the one with the highest offset. An empty value is a tombstone.
   * Kafka: through the topic's long-lived reader (as `follow`); embedded: as frames become durable.
   */
  watch(topic: string, listener: RecordListener): Promise<() => void>;
  /** Throws when the stream cannot take appends (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
