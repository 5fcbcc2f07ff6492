/**
 * The embedded Stream: hooklog's zero-setup default when no Kafka is
 * configured. One append-only, fsynced, segmented log under
 * `<dataDir>/stream/` holds every topic, committed offsets and topic metadata.
 * It is a durable buffer between receivers and the store, not an archive:
 * segments are deleted after `retentionHours` (or sooner over `maxBytes`),
 * and ClickHouse keeps history — but never before every consumer group that
 * has committed in the topic (or reads it now) has committed past them: a
 * stalled sink makes the log grow, up to `maxBytes`, and then new records are
 * refused (hooks answer 503, pollers wait) rather than old ones lost.
 * Kafka is the path to scale and to more than one process.
 */
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { HooklogError } from '../../errors.js';
import { silentLogger, type Logger } from '../../log.js';
import type {
  Assignment,
  AssignmentOptions,
  Transactor,
  ConsumeOptions,
  ConsumedRecord,
  Consumer,
  RecordListener,
  Stream,
  StreamRecord,
  TopicSpec,
  TopicWrite,
} from '../types.js';
import { gauge } from '../../metrics.js';
import { watchLag } from '../lag.js';
import { EmbeddedConsumer } from './consumer.js';
import type { LogRecord, SectionInput } from './frame.js';
import { lockDir, type DirLock } from './lock.js';
import { EmbeddedLog } from './log.js';
import { PartitionReader } from './reader.js';
import { syncDir } from './segments.js';
import { partitionFor } from './partitioner.js';
import { StreamState, checkTopicName } from './state.js';

export interface EmbeddedStreamOptions {
  /** hooklog's data directory; the log lives in `<dataDir>/stream/`. */
  readonly dataDir: string;
  /** Size at which a new segment file starts. Default 64 MiB; at least 1024. */
  readonly segmentBytes?: number;
  /** Whole segments last written longer ago are deleted. Default 168 (a week). Not an archive: ClickHouse is. */
  readonly retentionHours?: number;
  /**
   * Disk cap over all segments. Beyond it, appends to `cappedTopics` are refused
   * with a retriable OVERLOADED until consumers commit and retention frees
   * segments. Default: none. At least 4 segments.
   */
  readonly maxBytes?: number;
  /** Topics the cap refuses (what comes in from outside). Default: every topic. */
  readonly cappedTopics?: readonly string[];
  /** Told when the log goes over its cap or back under it (metrics). */
  readonly onCapChange?: (over: boolean, bytes: number) => void;
  /** Default: silent. */
  readonly logger?: Logger;
  /**
   * How long to wait for a live owner of the directory's lock to exit (a
   * previous process still shutting down or being killed) before failing with
   * STREAM_UNAVAILABLE. Default 30 000.
   */
  readonly lockWaitMs?: number;
}

/** Opens (creating if needed) the embedded stream, recovering the log after any crash. */
export async function openEmbeddedStream(opts: EmbeddedStreamOptions): Promise<EmbeddedStream> {
  const segmentBytes = opts.segmentBytes ?? 64 * 1024 * 1024;
  const retentionHours = opts.retentionHours ?? 168;
  if (!Number.isInteger(segmentBytes) || segmentBytes < 1024) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `embedded stream: segmentBytes must be an integer >= 1024, got ${segmentBytes}`,
    );
  }
  if (!(retentionHours > 0) || !Number.isFinite(retentionHours)) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `embedded stream: retentionHours must be a positive number, got ${retentionHours}`,
    );
  }
  const maxBytes = opts.maxBytes ?? Infinity;
  if (maxBytes !== Infinity && !(maxBytes >= 4 * segmentBytes)) {
    throw new HooklogError(
      'CONFIG_INVALID',
      `embedded stream: maxBytes (${maxBytes}) must be at least 4 segments (${4 * segmentBytes} bytes)`,
    );
  }
  const logger = (opts.logger ?? silentLogger()).child({ component: 'stream-embedded' });
  const dir = resolve(opts.dataDir, 'stream');
  // Directories just created must themselves be durable before anything in them is acknowledged.
  const created = await mkdir(dir, { recursive: true });
  for (let d = dir; created !== undefined; d = dirname(d)) {
    await syncDir(dirname(d));
    if (d === created) break;
  }
  const lock = await lockDir(dir, logger, opts.lockWaitMs);
  try {
    const state = new StreamState();
    const live = new Set<string>();
    const cappedTopics = opts.cappedTopics ? new Set(opts.cappedTopics) : null;
    // The latest record per key of each compacted topic, which every new segment restates. Read from
    // disk at the first roll (from the newest snapshot on: about a segment, its CRCs checked), then kept
    // current from durable frames: reading the whole last segment again at every roll cost tens of ms of
    // CPU per 64 MiB on the thread that serves hooks and polls. Only compacted topics' values are kept:
    // a cursor or an alert state per key, copied out (never a view that would hold a page's reply).
    let compacted: Map<string, Map<string, ConsumedRecord>> | null = null;
    // Stream.watch listeners per topic, told of each section as it becomes durable.
    const watchers = new Map<string, Set<RecordListener>>();
    const log = await EmbeddedLog.open({
      maxBytes,
      capped: (topic) => !topic.startsWith('__') && (cappedTopics === null || cappedTopics.has(topic)),
      retainFrom: (topic, partition) => retainFrom(state, live, topic, partition),
      ...(opts.onCapChange ? { onCapChange: opts.onCapChange } : {}),
      dir,
      segmentBytes,
      retentionMs: retentionHours * 3_600_000,
      logger,
      onInternal: (section) => state.apply(section),
      snapshot: async (l) => {
        const out = state.snapshot();
        if (compacted === null) {
          const read = new Map<string, Map<string, ConsumedRecord>>();
          for (const spec of state.topics()) if (spec.compacted) read.set(spec.name, await readLatest(l, spec));
          compacted = read;
        }
        for (const latest of compacted.values())
          for (const r of latest.values()) out.push({ topic: r.topic, partition: r.partition, records: [r] });
        return out;
      },
      onDurable: (section) => {
        const listening = watchers.get(section.topic);
        if (listening?.size) tellWatchers(listening, section, logger);
        if (compacted === null || !state.topic(section.topic)?.compacted) return;
        let latest = compacted.get(section.topic);
        if (!latest) compacted.set(section.topic, (latest = new Map()));
        section.records.forEach((r, i) => {
          if (r.key === null) return;
          latest.set(r.key, {
            key: r.key,
            value: Buffer.from(r.value),
            headers: { ...r.headers },
            timestamp: r.timestamp,
            topic: section.topic,
            partition: section.partition,
            offset: section.baseOffset + i,
          });
        });
      },
    });
    return new EmbeddedStream(log, state, lock, logger, live, watchers, maxBytes);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

/** Hands a durable section's keyed records, copied (never views of a frame), to the topic's watchers. */
function tellWatchers(
  listening: ReadonlySet<RecordListener>,
  section: { topic: string; partition: number; baseOffset: number; records: readonly LogRecord[] },
  logger: Logger,
): void {
  const out: ConsumedRecord[] = [];
  section.records.forEach((r, i) => {
    if (r.key === null) return;
    out.push({
      key: r.key,
      value: Buffer.from(r.value),
      headers: { ...r.headers },
      timestamp: r.timestamp,
      topic: section.topic,
      partition: section.partition,
      offset: section.baseOffset + i,
    });
  });
  if (out.length === 0) return;
  for (const l of listening) {
    try {
      l(out);
    } catch (err) {
      logger.error({ err, topic: section.topic }, 'a watcher of the topic threw; it keeps getting records');
    }
  }
}

/** Open embedded streams, read at scrape time (one per process in production; tests may open several). */
const openStreams = new Set<EmbeddedStream>();
const sum = (f: (s: EmbeddedStream) => number) => [...openStreams].reduce((n, s) => n + f(s), 0);
gauge({
  name: 'hooklog_stream_embedded_bytes',
  help: "Bytes of the embedded log's retained segments.",
  collect() {
    this.set(sum((s) => s.bytes));
  },
});
gauge({
  name: 'hooklog_stream_embedded_max_bytes',
  help: "The embedded log's disk cap (stream.embedded.max_bytes); +Inf without one.",
  collect() {
    this.set(sum((s) => s.maxBytes));
  },
});
gauge({
  name: 'hooklog_stream_embedded_over_cap',
  help: '1 while the embedded log refuses new records at its disk cap (hooks get 503, pollers wait).',
  collect() {
    this.set([...openStreams].some((s) => s.overCap) ? 1 : 0);
  },
});

/**
 * The smallest offset of a partition that a consumer group still needs: the
 * lowest committed position over every group with one in the topic, and 0 for
 * a group reading it now that has committed nothing yet.
 */
function retainFrom(
  state: StreamState,
  live: ReadonlySet<string>,
  topic: string,
  partition: number,
): number | undefined {
  let min: number | undefined;
  const groups = new Set<string>();
  for (const [group, committed] of state.groupsOf(topic)) {
    groups.add(group);
    const at = committed.get(partition) ?? 0;
    min = min === undefined ? at : Math.min(min, at);
  }
  for (const key of live) {
    const [group, t] = JSON.parse(key) as [string, string];
    if (t === topic && !groups.has(group)) min = 0;
  }
  return min;
}

/**
 * Latest record per key of `spec`. A compacted topic is read from the newest
 * snapshot on (it restates every key); any other from the oldest retained record.
 */
async function readLatest(
  log: EmbeddedLog,
  spec: TopicSpec,
  only?: readonly number[],
): Promise<Map<string, ConsumedRecord>> {
  const latest = new Map<string, ConsumedRecord>();
  for (let p = 0; p < spec.partitions; p++) {
    if (only && !only.includes(p)) continue;
    const reader = new PartitionReader(log, spec.name, p, spec.compacted ? log.compactedStart(spec.name, p) : 0);
    try {
      await reader.readToEnd((records) => {
        for (const r of records) if (r.key !== null) latest.set(r.key, r);
      });
    } finally {
      await reader.close();
    }
  }
  return latest;
}

export class EmbeddedStream implements Stream {
  readonly kind = 'embedded' as const;
  readonly #log: EmbeddedLog;
  readonly #state: StreamState;
  readonly #lock: DirLock;
  readonly #logger: Logger;
  readonly #consumers = new Map<string, EmbeddedConsumer>();
  /** Keys of #consumers, shared with retention (a live group holds its records). */
  readonly #live: Set<string>;
  /** Stream.watch listeners per topic (told by the log's onDurable). */
  readonly #watchers: Map<string, Set<RecordListener>>;
  readonly #roundRobin = new Map<string, number>();
  #topicChanges: Promise<void> = Promise.resolve();
  #closed = false;

  /** The disk cap (Infinity without one). */
  readonly maxBytes: number;

  constructor(
    log: EmbeddedLog,
    state: StreamState,
    lock: DirLock,
    logger: Logger,
    live: Set<string>,
    watchers: Map<string, Set<RecordListener>>,
    maxBytes = Infinity,
  ) {
    this.#watchers = watchers;
    this.maxBytes = maxBytes;
    openStreams.add(this);
    this.#live = live;
    this.#log = log;
    this.#state = state;
    this.#lock = lock;
    this.#logger = logger;
  }

  async ensureTopics(specs: readonly TopicSpec[]): Promise<void> {
    this.#checkOpen();
    for (const s of specs) {
      checkTopicName(s.name);
      if (!Number.isInteger(s.partitions) || s.partitions < 1 || s.partitions > 10_000) {
        throw new HooklogError(
          'RECORD_INVALID',
          `topic ${s.name}: partitions must be an integer in 1..10000, got ${s.partitions}`,
        );
      }
    }
    // One change at a time, so two callers cannot both create the same topic differently.
    const run = this.#topicChanges.then(async () => {
      const missing = new Map<string, TopicSpec>();
      for (const s of specs) if (!this.#state.topic(s.name) && !missing.has(s.name)) missing.set(s.name, s);
      if (missing.size > 0) await this.#log.append([...missing.values()].map((s) => StreamState.topicWrite(s)));
    });
    this.#topicChanges = run.catch(() => undefined);
    await run;
  }

  append(topic: string, records: readonly StreamRecord[]): Promise<void> {
    return this.appendAtomically([{ topic, records }]);
  }

  /** All writes go into one frame: on disk together or not at all. */
  async appendAtomically(writes: readonly TopicWrite[]): Promise<void> {
    this.#checkOpen();
    const now = Date.now();
    const sections: SectionInput[] = [];
    for (const w of writes) {
      const spec = this.#state.topic(w.topic);
      if (!spec)
        throw new HooklogError('STREAM_APPEND_FAILED', `unknown topic ${w.topic}: create it with ensureTopics first`);
      const byPartition = new Map<number, LogRecord[]>();
      // A poller's page is a thousand records sharing one key and one headers object: each is checked
      // and hashed once per write, not once per record.
      let checkedHeaders: StreamRecord['headers'] | null = null;
      let hashedKey: string | null = null;
      let hashedPartition = 0;
      for (const r of w.records) {
        if (!Buffer.isBuffer(r.value) || (r.key !== null && typeof r.key !== 'string')) {
          throw new HooklogError(
            'RECORD_INVALID',
            `record for ${w.topic}: value must be a Buffer and key a string or null`,
          );
        }
        if (r.headers !== checkedHeaders) {
          for (const v of Object.values(r.headers)) {
            if (typeof v !== 'string')
              throw new HooklogError('RECORD_INVALID', `record for ${w.topic}: header values must be strings`);
          }
          checkedHeaders = r.headers;
        }
        let partition: number;
        if (r.key === null) partition = this.#nextRoundRobin(spec);
        else if (r.key === hashedKey) partition = hashedPartition;
        else partition = hashedPartition = partitionFor((hashedKey = r.key), spec.partitions);
        let list = byPartition.get(partition);
        if (!list) byPartition.set(partition, (list = []));
        list.push({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp ?? now });
      }
      for (const [partition, records] of byPartition) sections.push({ topic: w.topic, partition, records });
    }
    if (sections.length > 0) await this.#log.append(sections);
  }

  #nextRoundRobin(spec: TopicSpec): number {
    const n = this.#roundRobin.get(spec.name) ?? 0;
    this.#roundRobin.set(spec.name, n + 1);
    return n % spec.partitions;
  }

  /**
   * The group is this process: one live consumer per (group, topic) owns all
   * partitions. A second one would read the same records and commit over the
   * first one's positions, so it is refused.
   */
  async consume(opts: ConsumeOptions): Promise<Consumer> {
    this.#checkOpen();
    const spec = this.#state.topic(opts.topic);
    if (!spec)
      throw new HooklogError('STREAM_UNAVAILABLE', `unknown topic ${opts.topic}: create it with ensureTopics first`);
    const key = JSON.stringify([opts.group, opts.topic]);
    if (this.#consumers.has(key)) {
      throw new HooklogError(
        'STREAM_UNAVAILABLE',
        `group ${opts.group} already has a live consumer of ${opts.topic}; the embedded stream allows one per group and topic (stop it first)`,
      );
    }
    const lag = watchLag(this, opts.topic, opts.group);
    const consumer = new EmbeddedConsumer({
      lag,
      log: this.#log,
      spec,
      opts,
      committed: this.#state.committed(opts.topic, opts.group),
      commit: async (partition, next) => {
        await this.#log.append([StreamState.offsetWrite(opts.group, opts.topic, partition, next)]);
        // Over the cap, each commit may free a segment: do not wait for the periodic run.
        if (this.#log.overCap)
          void this.#log
            .enforceRetention()
            .catch((err: unknown) => this.#logger.error({ err }, 'embedded log: retention failed'));
      },
      logger: this.#logger,
      onStopped: () => {
        lag.close();
        this.#consumers.delete(key);
        this.#live.delete(key);
      },
    });
    this.#consumers.set(key, consumer);
    this.#live.add(key);
    return consumer;
  }

  async latestOffsets(topic: string): Promise<Map<number, number>> {
    return this.endOffsets(topic);
  }

  async committedOffsets(topic: string, group: string): Promise<Map<number, number>> {
    return this.#state.committed(topic, group);
  }

  /** The log is local: every read sees what was appended, nothing to keep current. */
  async follow(_topic: string): Promise<void> {
    this.#checkOpen();
  }

  /**
   * The listener is registered first, then given the latest record per key read from the log: a record made
   * durable meanwhile may come twice, and before the snapshot; the highest offset per key is the current one.
   */
  async watch(topic: string, listener: RecordListener): Promise<() => void> {
    this.#checkOpen();
    let listening = this.#watchers.get(topic);
    if (!listening) this.#watchers.set(topic, (listening = new Set()));
    listening.add(listener);
    const stop = () => void listening.delete(listener);
    const spec = this.#state.topic(topic);
    try {
      const latest = spec ? await readLatest(this.#log, spec) : new Map<string, ConsumedRecord>();
      if (latest.size > 0) listener([...latest.values()]);
    } catch (err) {
      stop();
      throw err;
    }
    return stop;
  }

  /** Unknown topics have no records: an empty map. */
  async readLatestByKey(topic: string, partitions?: readonly number[]): Promise<Map<string, ConsumedRecord>> {
    this.#checkOpen();
    const spec = this.#state.topic(topic);
    return spec ? readLatest(this.#log, spec, partitions) : new Map();
  }

  /**
   * One process owns the directory (its LOCK), so there is no earlier holder to
   * fence: the claim only refuses appends after it was closed.
   */
  async claim(owner: string, _stillOwner?: () => boolean): Promise<Transactor> {
    this.#checkOpen();
    let closed = false;
    return {
      owner,
      appendAtomically: (writes) => {
        if (closed) return Promise.reject(new HooklogError('STREAM_FENCED', `claim ${owner} was closed`));
        return this.appendAtomically(writes);
      },
      close: async () => void (closed = true),
    };
  }

  /** The group is this process: it owns every partition from the start, until stopped. */
  async assign(opts: AssignmentOptions): Promise<Assignment> {
    this.#checkOpen();
    const spec = this.#state.topic(opts.topic);
    if (!spec)
      throw new HooklogError('STREAM_UNAVAILABLE', `unknown topic ${opts.topic}: create it with ensureTopics first`);
    const all = Array.from({ length: spec.partitions }, (_, p) => p);
    let stopping: Promise<void> | null = null;
    const assignment: Assignment = {
      partitions: spec.partitions,
      partitionOf: (key) => partitionFor(key, spec.partitions),
      current: () => !this.#closed && stopping === null,
      release: () => undefined, // nobody else can claim: never fenced
      stop: () => (stopping ??= opts.onRevoked(all).catch((err) => opts.onError?.(err))),
    };
    await opts.onAssigned(all, assignment).catch((err) => opts.onError?.(err));
    return assignment;
  }

  async ping(): Promise<void> {
    this.#checkOpen();
    const failure = this.#log.failure;
    if (failure) throw failure;
  }

  /** Stops live consumers (they commit what they finished), flushes, closes files, releases the lock. */
  /** The log's segment files and their durable lengths now, retention paused until `release` (a backup's copy). */
  holdSegments(): { segments: Array<{ path: string; size: number }>; release: () => void } {
    return this.#log.holdSegments();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    openStreams.delete(this);
    await Promise.all([...this.#consumers.values()].map((c) => c.stop()));
    await this.#log.close();
    await this.#lock.release();
  }

  /** Frames synced so far (group commit makes this far smaller than the number of appends). */
  get fsyncCount(): number {
    return this.#log.fsyncCount;
  }

  /** Next offset per partition of `topic` (what a fully caught-up consumer would commit). */
  endOffsets(topic: string): Map<number, number> {
    const spec = this.#state.topic(topic);
    const out = new Map<number, number>();
    for (let p = 0; p < (spec?.partitions ?? 0); p++) out.set(p, this.#log.nextOffset(topic, p));
    return out;
  }

  /**
   * Forgets a group's positions in `topic`, so it no longer holds retention
   * back (a group that will never read again). Refused while it has a live consumer.
   */
  async forgetGroup(group: string, topic: string): Promise<void> {
    this.#checkOpen();
    const spec = this.#state.topic(topic);
    if (!spec) return;
    if (this.#consumers.has(JSON.stringify([group, topic]))) {
      throw new HooklogError('STREAM_UNAVAILABLE', `group ${group} has a live consumer of ${topic}: stop it first`);
    }
    await this.#log.append([StreamState.forgetWrites(group, topic, spec.partitions)]);
  }

  /** Bytes of all retained segments, against `maxBytes`. */
  get bytes(): number {
    return this.#log.bytes;
  }

  /** True while appends to capped topics are refused (the disk cap is reached). */
  get overCap(): boolean {
    return this.#log.overCap;
  }

  /** Runs retention now (it also runs on open and periodically); returns the segments deleted. */
  enforceRetention(now = Date.now()): Promise<number> {
    return this.#log.enforceRetention(now);
  }

  #checkOpen(): void {
    if (this.#closed) throw new HooklogError('STREAM_CLOSED', 'embedded stream is closed');
  }
}
