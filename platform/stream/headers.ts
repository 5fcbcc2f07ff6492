/**
 * Header names for hooklog's metadata on stream records. Public contract: any
 * Kafka consumer of our topics reads these, so names never change meaning.
 */
import type { ErrorCode } from '../errors.js';

export const Header = {
  org: 'hooklog-org',
  /** hook | system-log | legacy-events | backfill | token-hook | ssf */
  source: 'hooklog-source',
  hookId: 'hooklog-hook-id',
  deliveryId: 'hooklog-delivery-id',
  /** ISO-8601 time hooklog received the record. */
  receivedAt: 'hooklog-received-at',
  /** For dead letters: why the record was rejected, and which component rejected it. */
  reason: 'hooklog-reason',
  origin: 'hooklog-origin',
  /** For dead letters: the error code (platform/errors.ts) of why, e.g. RECORD_INVALID, STORE_REJECTED_ROW. */
  errorCode: 'hooklog-error-code',
  /** For dead letters re-routed from a topic: where the bytes were read. */
  originalTopic: 'hooklog-original-topic',
  originalPartition: 'hooklog-original-partition',
  originalOffset: 'hooklog-original-offset',
  /**
   * The record's format version on its topic (formats.ts): an integer, stamped on every append. A record without it
   * was written by a release before 0.2.0, which wrote what is now format 1.
   */
  format: 'hooklog-format',
  /** For dead letters refused for their format: the format version the record carried. */
  originalFormat: 'hooklog-original-format',
  /** For dead letters too large to store whole: the value's full size in bytes (the value is its first 64 KiB). */
  truncatedFromBytes: 'hooklog-truncated-from-bytes',
  /**
   * On `<prefix>.logs` records: hooklog's GeoIP answer for the event's address, JSON, looked up once on append
   * (platform/enrichment/). A reader that does not know it reads the record as before.
   */
  enrichment: 'hooklog-enrichment',
} as const;

export type EventSource = 'hook' | 'system-log' | 'legacy-events' | 'backfill' | 'ssf';

export interface Topics {
  readonly logs: string;
  readonly legacyEvents: string;
  readonly deadletter: string;
  readonly cursors: string;
  /** The token hook's audit trail: one record per answer (receivers/token-hook/audit.ts). */
  readonly tokenDecisions: string;
  /** Shared Signals SETs the orgs pushed, verified (receivers/ssf/set-record.ts). */
  readonly securityEvents: string;
}

export function topicNames(prefix: string): Topics {
  return {
    logs: `${prefix}.logs`,
    legacyEvents: `${prefix}.legacy-events`,
    deadletter: `${prefix}.deadletter`,
    cursors: `${prefix}.cursors`,
    tokenDecisions: `${prefix}.token-decisions`,
    securityEvents: `${prefix}.security-events`,
  };
}

/** A dead-letter record: the raw bytes as received, with the reason, its error code and origin beside them. */
export function deadLetter(
  raw: Buffer,
  reason: string,
  origin: string,
  extra: Record<string, string> = {},
  key: string | null = null,
  code: ErrorCode = 'RECORD_INVALID',
) {
  return {
    key,
    value: raw,
    headers: { ...extra, [Header.reason]: reason.slice(0, 1000), [Header.origin]: origin, [Header.errorCode]: code },
  };
}
