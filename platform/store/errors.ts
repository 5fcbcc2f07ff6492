import { HooklogError, errorMessage } from '../errors.js';

/**
 * ClickHouse error types (the `(TYPE)` suffix of a server exception) that say
 * "the server could not take this now": retrying the very same request later may
 * succeed. Inserts from the sink hold uncommitted offsets, so they retry these
 * forever with a capped delay rather than dropping or skipping data.
 */
const RETRIABLE_TYPES = new Set([
  'TOO_MANY_PARTS', // merges are behind; back off and the server catches up
  'TOO_MANY_SIMULTANEOUS_QUERIES',
  'TOO_MANY_SIMULTANEOUS_QUERIES_FOR_USER',
  'SERVER_OVERLOADED',
  'MEMORY_LIMIT_EXCEEDED',
  'CANNOT_ALLOCATE_MEMORY',
  'TIMEOUT_EXCEEDED',
  'SOCKET_TIMEOUT',
  'NETWORK_ERROR',
  'ALL_CONNECTION_TRIES_FAILED',
  'ALL_REPLICAS_ARE_STALE',
  'NO_ZOOKEEPER',
  'KEEPER_EXCEPTION',
  'TABLE_IS_READ_ONLY', // a replica lost its Keeper session; it comes back
  'ABORTED',
  'QUERY_WAS_CANCELLED',
  'DEADLOCK_AVOIDED',
  'UNEXPECTED_END_OF_FILE',
  'NOT_ENOUGH_SPACE', // disk full: frees up when merges or TTLs run, or an operator acts
]);

/**
 * Error types that reject the *data* of an insert: the same rows will fail the
 * same way however often they are sent. The sink bisects a batch failing with
 * one of these to isolate the bad rows (and dead-letters them) instead of
 * retrying, which would stall the partition forever.
 */
const ROW_REJECTION_TYPES = new Set([
  'TYPE_MISMATCH',
  'INCORRECT_DATA',
  'INCORRECT_NUMBER_OF_COLUMNS',
  'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
  'ARGUMENT_OUT_OF_BOUND',
  'TOO_LARGE_STRING_SIZE',
  'TOO_LARGE_ARRAY_SIZE',
  'CANNOT_CONVERT_TYPE',
  'SIZES_OF_ARRAYS_DONT_MATCH',
  'SIZES_OF_NESTED_COLUMNS_ARE_INCONSISTENT',
  'UNKNOWN_ELEMENT_IN_ENUM',
  'UNKNOWN_ELEMENT_OF_ENUM', // the name ClickHouse 26.x reports (code 691)
]);

/** Node/undici socket error codes that mean the server could not be reached or dropped us. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ESOCKETTIMEDOUT',
  'UND_ERR_SOCKET',
]);

/** The shape of `@clickhouse/client`'s `ClickHouseError`. */
interface ClickHouseErrorLike {
  message: string;
  code: string;
  type: string;
}

/**
 * Duck-typed on purpose: `@clickhouse/client` bundles its own copy of
 * `ClickHouseError`, and the chdb connection throws the one from
 * `@clickhouse/client-common`, so `instanceof` is false for half the errors.
 */
function asClickHouseError(err: unknown): ClickHouseErrorLike | null {
  if (!(err instanceof Error)) return null;
  const e = err as Error & { code?: unknown; type?: unknown };
  if (typeof e.code === 'string' && /^\d+$/.test(e.code) && typeof e.type === 'string' && e.type !== '') {
    return { message: e.message, code: e.code, type: e.type };
  }
  return null;
}

/**
 * The one place ClickHouse failures become hooklog errors.
 * - `STORE_REJECTED_ROW` (not retriable): the data cannot be parsed into the
 *   table (CANNOT_PARSE_*, TYPE_MISMATCH, INCORRECT_DATA, …);
 * - `STORE_UNAVAILABLE` (retriable): network failures, overload, memory,
 *   TOO_MANY_PARTS; `TIMEOUT` (retriable): the client's request timeout;
 * - `STORE_QUERY_FAILED` (not retriable): everything else (syntax, unknown
 *   table, access denied) — a bug or a misconfiguration, not a passing state.
 * Errors that already are HooklogErrors pass through unchanged.
 */
export function classifyClickHouseError(err: unknown): HooklogError {
  if (err instanceof HooklogError) return err;
  const ch = asClickHouseError(err);
  if (ch) {
    const what = `ClickHouse ${ch.type} (${ch.code}): ${firstLine(ch.message)}`;
    // TOO_MANY_PARTS also covers "too many partitions for single INSERT block",
    // which depends only on the batch's contents: splitting the batch fixes it,
    // waiting does not, so it is treated as a row rejection (the sink bisects).
    if (ch.type === 'TOO_MANY_PARTS' && /partitions for (a )?single insert block/i.test(ch.message)) {
      return new HooklogError('STORE_REJECTED_ROW', what, { cause: err });
    }
    if (RETRIABLE_TYPES.has(ch.type))
      return new HooklogError('STORE_UNAVAILABLE', what, { retriable: true, cause: err });
    if (ch.type.startsWith('CANNOT_PARSE') || ROW_REJECTION_TYPES.has(ch.type)) {
      return new HooklogError('STORE_REJECTED_ROW', what, { cause: err });
    }
    return new HooklogError('STORE_QUERY_FAILED', what, { cause: err });
  }
  const message = errorMessage(err);
  const code = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  if (/^Timeout error/i.test(message)) {
    return new HooklogError('TIMEOUT', `ClickHouse request timed out: ${message}`, { retriable: true, cause: err });
  }
  if (
    (typeof code === 'string' && NETWORK_CODES.has(code)) ||
    /socket hang up|connect ECONN|ECONNRESET/i.test(message)
  ) {
    return new HooklogError('STORE_UNAVAILABLE', `ClickHouse unreachable: ${message}`, { retriable: true, cause: err });
  }
  return new HooklogError('STORE_QUERY_FAILED', `ClickHouse request failed: ${firstLine(message)}`, { cause: err });
}

function firstLine(s: string): string {
  const line = s.split('\n', 1)[0] ?? '';
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}
