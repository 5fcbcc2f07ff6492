/**
 * hooklog's typed errors. Every error we raise carries a code from one closed
 * list, a `retriable` flag that retry loops trust, and the underlying `cause`.
 * Classification of upstream failures (ClickHouse, Kafka, HTTP) into these
 * codes lives in one function per upstream, next to the client that calls it.
 */
export const ErrorCodes = [
  'CONFIG_INVALID',
  'CONFIG_NOT_FOUND',
  'STREAM_UNAVAILABLE',
  'STREAM_APPEND_FAILED',
  'STREAM_CORRUPT',
  'STREAM_CLOSED',
  // Another holder claimed the same owned work (a newer owner of a partition): this one must stop, not retry.
  'STREAM_FENCED',
  'STORE_UNAVAILABLE',
  'STORE_QUERY_FAILED',
  'STORE_REJECTED_ROW',
  'MIGRATION_FAILED',
  // A named query (analytics/) asked for with an unknown name or a wrong parameter.
  'QUERY_INVALID',
  'RECORD_INVALID',
  // A stream record in a format newer than this release reads (platform/stream/formats.ts): dead-lettered whole.
  'RECORD_FORMAT_UNKNOWN',
  // A data directory or database used by a release that needs a newer hooklog than this one (platform/release/).
  'RELEASE_REFUSED',
  'TIMEOUT',
  'OVERLOADED',
  // The identity service's APIs (ingest/client classifies its replies into these).
  'IDP_REQUEST_REJECTED',
  'IDP_UNAVAILABLE',
  'IDP_RATE_LIMITED',
  'IDP_AUTH_FAILED',
  'IDP_API_NOT_ENABLED',
  // A 2xx reply whose items are not what the API documents (platform/identity/directory.ts): skipped, counted.
  'IDP_REPLY_INVALID',
  // hooklog backup / restore (platform/backup/): a precondition unmet (a non-empty target, a server store), a
  // backup that is incomplete or changed, one written in a format this hooklog does not read.
  'BACKUP_REFUSED',
  'BACKUP_INVALID',
  'BACKUP_FORMAT_UNSUPPORTED',
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ErrorCodes)[number];

export class HooklogError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HooklogError';
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** True when `err` says retrying the same operation may succeed. Unknown errors are not retriable. */
export function isRetriable(err: unknown): boolean {
  return err instanceof HooklogError ? err.retriable : false;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
