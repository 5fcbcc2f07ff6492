/**
 * Record format versions: every record hooklog appends carries its topic's format version in the `hooklog-format`
 * header, and every reader checks it before it reads the value. This is what lets two consecutive releases run in
 * one fleet (docs/operate/upgrades.md): a release reads its own format and the previous one (a record without the
 * header is the previous release's, written before versions existed), and a record newer than it knows is never
 * misread — a consumer group dead-letters it with its raw bytes and `RECORD_FORMAT_UNKNOWN`, a reader of state
 * (latest by key, watch) leaves it out, and both log and count it.
 *
 * The rule for changing a format, as for tables (schemas/clickhouse/README.md): expand, then contract. A release
 * that adds format N+1 first only *reads* it (reads gains N+1, writes stays N); the next release writes it. So the
 * previous release, running beside this one, never meets a format it does not know. A format is only ever
 * dropped from `reads` once no release that writes it may still run (its OLDEST_COMPATIBLE, release.ts, is past),
 * and, for a compacted family (cursors, risk, checkpoints), once every key's latest record is of a newer format:
 * an idle org's cursor may be years old.
 *
 * Done once, here, by wrapping the stream (`withRecordFormats`, applied by `openStream`), so no component can
 * forget to stamp or to check. Topics outside hooklog's families (other prefixes, tests' own) pass untouched.
 */
import type { ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import { counter } from '../metrics.js';
import { Header, deadLetter } from './headers.js';
import type {
  ConsumedRecord,
  ConsumeOptions,
  RecordBatch,
  RecordListener,
  Stream,
  StreamRecord,
  TopicWrite,
  Transactor,
} from './types.js';

/** Every topic hooklog writes, by its name after `<prefix>.`; `formats.test.ts` checks each one hooklog creates. */
export const TOPIC_FAMILIES = [
  'logs',
  'legacy-events',
  'deadletter',
  'cursors',
  'token-decisions',
  'security-events',
  'alerts',
  'alerting-state',
  'alert-states',
  'console-sessions',
  'risk',
  'risk-changes',
  'actions',
  'ssf-deliveries',
  'response-sets-state',
  'response-actions-state',
  'identity',
  'saved-searches',
] as const;
export type TopicFamily = (typeof TOPIC_FAMILIES)[number];

/** 0 stands for "no header": a record of a release before 0.2.0. */
export const UNVERSIONED = 0;

export interface RecordFormat {
  /** The version this release stamps on what it appends. */
  readonly writes: number;
  /** The versions it reads: its own and the previous release's. */
  readonly reads: readonly number[];
}

/**
 * Per family. 0.2.0 names the format 0.1.0 wrote (without a header) version 1 and stamps it; every family reads
 * both. A family whose record changes gets its own entry.
 */
const V1: RecordFormat = { writes: 1, reads: [UNVERSIONED, 1] };

export const RECORD_FORMATS: Readonly<Record<TopicFamily, RecordFormat>> = {
  logs: V1,
  'legacy-events': V1,
  deadletter: V1,
  cursors: V1,
  'token-decisions': V1,
  'security-events': V1,
  alerts: V1,
  'alerting-state': V1,
  'alert-states': V1,
  'console-sessions': V1,
  risk: V1,
  'risk-changes': V1,
  actions: V1,
  'ssf-deliveries': V1,
  'response-sets-state': V1,
  'response-actions-state': V1,
  // New in 0.3.0 (no earlier release writes it); V1 like the rest, so every family reads the same versions.
  identity: V1,
  // New in 0.3.0 too: the console's saved searches (console/saved-searches.ts), compacted by org and id.
  'saved-searches': V1,
};

/** A topic's family under `prefix`, or null for a topic that is not hooklog's. */
export function familyOf(topic: string, prefix: string): TopicFamily | null {
  if (!topic.startsWith(`${prefix}.`)) return null;
  const rest = topic.slice(prefix.length + 1);
  return (TOPIC_FAMILIES as readonly string[]).includes(rest) ? (rest as TopicFamily) : null;
}

const VERSION_TEXT = /^(0|[1-9]\d{0,5})$/;

export type FormatVerdict =
  | { readonly ok: true; readonly version: number }
  | { readonly ok: false; readonly version: string; readonly code: ErrorCode; readonly reason: string };

/** Whether this release reads a record of `family` with these headers. */
export function checkFormat(family: TopicFamily, headers: Readonly<Record<string, string>>): FormatVerdict {
  const text = headers[Header.format];
  if (text === undefined) return { ok: true, version: UNVERSIONED };
  if (!VERSION_TEXT.test(text)) {
    const shown = JSON.stringify(text.slice(0, 16));
    return {
      ok: false,
      version: text.slice(0, 16),
      code: 'RECORD_FORMAT_UNKNOWN',
      reason: `RECORD_FORMAT_UNKNOWN: format header ${Header.format} ${shown} is not a version number`,
    };
  }
  const version = Number(text);
  const { reads } = RECORD_FORMATS[family];
  if (reads.includes(version)) return { ok: true, version };
  const known = reads.map((v) => (v === UNVERSIONED ? 'unversioned' : String(v))).join(', ');
  return {
    ok: false,
    version: text,
    code: 'RECORD_FORMAT_UNKNOWN',
    reason:
      version > Math.max(...reads)
        ? `RECORD_FORMAT_UNKNOWN: ${family} record of format ${version}; this hooklog reads ${known} (a newer release wrote it: upgrade this instance)`
        : `RECORD_FORMAT_UNKNOWN: ${family} record of format ${version}; this hooklog reads ${known} (a release more than one before it wrote it)`,
  };
}

const refused = counter({
  name: 'hooklog_record_format_refused_total',
  help: 'Stream records in a format this release does not read (written by a newer release, or a malformed format header), by topic family and what happened to them: deadlettered (a consumer group) or skipped (a reader of state).',
  labelNames: ['family', 'action'],
});

/**
 * The records with the family's format header added where absent. Records sharing one headers object (a poller's
 * page) share one stamped object: the embedded log encodes each distinct headers object once per frame, by identity.
 */
function stampRecords(family: TopicFamily, records: readonly StreamRecord[]): StreamRecord[] {
  const version = String(RECORD_FORMATS[family].writes);
  const stamped = new Map<Readonly<Record<string, string>>, Readonly<Record<string, string>>>();
  return records.map((r) => {
    if (r.headers[Header.format] !== undefined) return r;
    let headers = stamped.get(r.headers);
    if (!headers) stamped.set(r.headers, (headers = { ...r.headers, [Header.format]: version }));
    return { ...r, headers };
  });
}

/** Each stream withRecordFormats made, to the stream it wraps. */
const wrapped_ = new WeakMap<Stream, Stream>();

/**
 * The stream under withRecordFormats's wrapping (itself when it is not one): for what only the stream kind itself
 * offers, such as the embedded log's segments for a backup. Records appended through it are not stamped.
 */
export function unwrapRecordFormats(stream: Stream): Stream {
  return wrapped_.get(stream) ?? stream;
}

/**
 * Records that `outer`, a further wrapping of `inner` (platform/enrichment/stream.ts), unwraps to what `inner` does:
 * the one stream under both.
 */
export function wrapsRecordFormats(outer: Stream, inner: Stream): void {
  wrapped_.set(outer, unwrapRecordFormats(inner));
}

/**
 * The stream, stamping each append with its topic's format and checking each record read (see the module comment).
 * `prefix` is the configured topic prefix.
 */
export function withRecordFormats(inner: Stream, opts: { prefix: string; logger: Logger }): Stream {
  const log = opts.logger.child({ component: 'record-formats' });
  const deadletterTopic = `${opts.prefix}.deadletter`;
  const family = (topic: string) => familyOf(topic, opts.prefix);
  const stampAll = (topic: string, records: readonly StreamRecord[]) => {
    const f = family(topic);
    return f === null ? records : stampRecords(f, records);
  };
  const stampWrites = (writes: readonly TopicWrite[]): TopicWrite[] =>
    writes.map((w) => ({ topic: w.topic, records: stampAll(w.topic, w.records) }));
  const readable = (r: ConsumedRecord): boolean => {
    const f = family(r.topic);
    if (f === null) return true;
    const verdict = checkFormat(f, r.headers);
    if (verdict.ok) return true;
    refused.inc({ family: f, action: 'skipped' });
    log.warn(
      { topic: r.topic, partition: r.partition, offset: r.offset, reason: verdict.reason },
      'record_format_skipped',
    );
    return false;
  };

  const consume = (o: ConsumeOptions) => {
    const f = family(o.topic);
    // The dead-letter topic keeps whatever reached it (its readers store raw bytes): never dead-letter a dead letter.
    if (f === null || f === 'deadletter') return inner.consume(o);
    const handler = async (batch: RecordBatch): Promise<void> => {
      const keep: ConsumedRecord[] = [];
      const letters: StreamRecord[] = [];
      for (const r of batch.records) {
        const verdict = checkFormat(f, r.headers);
        if (verdict.ok) {
          keep.push(r);
          continue;
        }
        const { [Header.format]: _format, ...carried } = r.headers;
        letters.push(
          deadLetter(
            r.value,
            verdict.reason,
            `stream-formats:${o.group}`,
            {
              ...carried,
              [Header.originalTopic]: r.topic,
              [Header.originalPartition]: String(r.partition),
              [Header.originalOffset]: String(r.offset),
              [Header.originalFormat]: verdict.version,
            },
            r.key,
            verdict.code,
          ),
        );
      }
      if (letters.length > 0) {
        // Durable before the batch can commit: a crash here offers the same records again.
        await inner.append(deadletterTopic, stampAll(deadletterTopic, letters));
        refused.inc({ family: f, action: 'deadlettered' }, letters.length);
        log.warn(
          { topic: batch.topic, partition: batch.partition, group: o.group, records: letters.length },
          'record_format_deadlettered',
        );
      }
      if (keep.length === batch.records.length) return o.handler(batch);
      // The batch keeps its offsets, so a replay cuts (and a sink's dedup token names) the same range.
      if (keep.length > 0) await o.handler({ ...batch, records: keep });
    };
    return inner.consume({ ...o, handler });
  };

  const claim = async (owner: string, stillOwner?: () => boolean): Promise<Transactor> => {
    const t = await inner.claim(owner, stillOwner);
    return {
      owner: t.owner,
      appendAtomically: (writes) => t.appendAtomically(stampWrites(writes)),
      close: () => t.close(),
    };
  };

  const wrapped: Stream = {
    kind: inner.kind,
    ensureTopics: (specs) => inner.ensureTopics(specs),
    append: (topic, records) => inner.append(topic, stampAll(topic, records)),
    appendAtomically: (writes) => inner.appendAtomically(stampWrites(writes)),
    consume,
    latestOffsets: (topic) => inner.latestOffsets(topic),
    committedOffsets: (topic, group) => inner.committedOffsets(topic, group),
    claim,
    assign: (o) => inner.assign(o),
    readLatestByKey: async (topic, partitions) => {
      const latest = await inner.readLatestByKey(topic, partitions);
      if (family(topic) === null) return latest;
      for (const [key, r] of latest) if (!readable(r)) latest.delete(key);
      return latest;
    },
    follow: (topic) => inner.follow(topic),
    watch: (topic: string, listener: RecordListener) =>
      family(topic) === null ? inner.watch(topic, listener) : inner.watch(topic, (rs) => listener(rs.filter(readable))),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  wrapped_.set(wrapped, inner);
  return wrapped;
}

/** For `hooklog --version`: one line per family, `<family>  writes N, reads unversioned, 1`. */
export function describeFormats(): string[] {
  const width = Math.max(...TOPIC_FAMILIES.map((f) => f.length));
  return TOPIC_FAMILIES.map((f) => {
    const { writes, reads } = RECORD_FORMATS[f];
    const r = reads.map((v) => (v === UNVERSIONED ? 'unversioned' : String(v))).join(', ');
    return `${f.padEnd(width)}  writes ${writes}, reads ${r}`;
  });
}
