/**
 * What a ClickHouse error says about the request that got it — the sink's retry policy for the store,
 * as data. Three kinds, each with its own handling (platform/store/table-writer.ts):
 *
 * - `row`: the *data* can never be accepted as it is (parse, type, conversion, size or limit of a
 *   value, a CHECK constraint, a function over the row's values in a materialized view or the
 *   partition key). Waiting does not help; splitting does: the sink bisects the batch and
 *   dead-letters the single rows that keep failing, with their raw bytes, and the partition moves on.
 * - `transient`: the server cannot take it *now* (overload, memory, too many parts, timeouts,
 *   network, replicas or Keeper away, a replica read-only for a while). Retried with the sink's
 *   capped backoff, holding the partition's offsets: it shows as lag, never as loss.
 * - `config`: our SQL or the deployment is wrong (unknown table, database or column, access denied,
 *   syntax). Fixing it makes the very same rows succeed, so they are never dead-lettered: the batch
 *   fails as a whole and is offered again with backoff, logged as an error each time
 *   (`sink_batch_failed`) and counted (`hooklog_store_errors_total{kind="config"}`).
 *
 * Codes are ClickHouse's own (src/Common/ErrorCodes.cpp; the engine lists them all in
 * `system.errors` with `system_events_show_zero_values = 1`). The table is keyed by number, because
 * ClickHouse never reuses one and keeps the number when it renames a code; the name is there to be
 * read, and error-kinds.test.ts checks every pair against the engine hooklog embeds. A code missing
 * from the table is `unclassified`: held and retried like `config`, never dead-lettered
 * (consumers/clickhouse-sink/README.md, "Nothing dropped silently", says why).
 */
export type ClickHouseErrorKind = 'row' | 'transient' | 'config';

export const CLICKHOUSE_ERROR_KINDS = {
  row: {
    // A value that does not parse as its column's type (JSONEachRow input).
    CANNOT_PARSE_TEXT: 6,
    CANNOT_PARSE_ESCAPE_SEQUENCE: 25,
    CANNOT_PARSE_QUOTED_STRING: 26,
    CANNOT_PARSE_INPUT_ASSERTION_FAILED: 27,
    CANNOT_PARSE_DATE: 38,
    CANNOT_PARSE_DATETIME: 41,
    CANNOT_PARSE_NUMBER: 72,
    CANNOT_PARSE_UUID: 376,
    CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING: 441,
    CANNOT_PARSE_BOOL: 467,
    CANNOT_PARSE_IPV4: 675,
    CANNOT_PARSE_IPV6: 676,
    CANNOT_READ_ARRAY_FROM_TEXT: 130,
    CANNOT_READ_MAP_FROM_TEXT: 563,
    UNEXPECTED_DATA_AFTER_PARSED_VALUE: 632,
    INCORRECT_DATA: 117,
    INCORRECT_NUMBER_OF_COLUMNS: 7,
    CANNOT_CONVERT_CHARSET: 346,
    CANNOT_NORMALIZE_STRING: 621,
    UNICODE_ERROR: 760,
    // A value of the wrong type, or out of its type's range.
    TYPE_MISMATCH: 53,
    CANNOT_CONVERT_TYPE: 70,
    VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE: 321,
    DECIMAL_OVERFLOW: 407,
    ARGUMENT_OUT_OF_BOUND: 69, // also "too many digits" for a Decimal column
    UNKNOWN_ELEMENT_OF_ENUM: 691,
    CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN: 349,
    // A value too large, too deep or of the wrong shape.
    SIZE_OF_FIXED_STRING_DOESNT_MATCH: 19,
    TOO_LARGE_STRING_SIZE: 131, // a string longer than its FixedString(N)
    TOO_LARGE_ARRAY_SIZE: 128,
    SIZES_OF_ARRAYS_DONT_MATCH: 190,
    SIZES_OF_NESTED_COLUMNS_ARE_INCONSISTENT: 366,
    SIZES_OF_COLUMNS_IN_TUPLE_DOESNT_MATCH: 13,
    CANNOT_INSERT_VALUE_OF_DIFFERENT_SIZE_INTO_TUPLE: 120,
    NUMBER_OF_DIMENSIONS_MISMATCHED: 645,
    TOO_DEEP_RECURSION: 306, // nesting over the parser's depth limit
    // The table's own rules over the row's values: CHECK constraints, the partition key, functions in a
    // materialized view. Our INSERT statement and its settings are fixed, so on an insert BAD_ARGUMENTS
    // and ILLEGAL_DIVISION come from values, not from our SQL.
    VIOLATED_CONSTRAINT: 469,
    INVALID_PARTITION_VALUE: 248,
    BAD_ARGUMENTS: 36,
    ILLEGAL_DIVISION: 153,
    FUNCTION_THROW_IF_VALUE_IS_NON_ZERO: 395,
  },
  transient: {
    // Overload and resource limits that pass.
    TOO_MANY_PARTS: 252, // merges are behind; back off and the server catches up (but see MESSAGE_RULES)
    TOO_MANY_SIMULTANEOUS_QUERIES: 202,
    SERVER_OVERLOADED: 745,
    MEMORY_LIMIT_EXCEEDED: 241,
    CANNOT_ALLOCATE_MEMORY: 173,
    MEMORY_RESERVATION_KILLED: 777,
    MEMORY_RESERVATION_FAILED: 778,
    NOT_ENOUGH_SPACE: 243, // disk full: frees up when merges or TTLs run, or an operator acts
    QUOTA_EXCEEDED: 201, // the quota's interval ends
    RECEIVED_ERROR_TOO_MANY_REQUESTS: 364,
    TCP_CONNECTION_LIMIT_REACHED: 749,
    HTTP_CONNECTION_LIMIT_REACHED: 762,
    USER_SESSION_LIMIT_EXCEEDED: 700,
    NO_FREE_CONNECTION: 203,
    CANNOT_SCHEDULE_TASK: 439,
    // Time-outs, the network, a request cut short.
    TIMEOUT_EXCEEDED: 159,
    SOCKET_TIMEOUT: 209,
    NETWORK_ERROR: 210,
    DNS_ERROR: 198,
    CANNOT_READ_FROM_SOCKET: 95,
    CANNOT_WRITE_TO_SOCKET: 96,
    UNEXPECTED_END_OF_FILE: 3,
    CHECKSUM_DOESNT_MATCH: 40, // compressed data damaged on the way
    ALL_CONNECTION_TRIES_FAILED: 279,
    ABORTED: 236,
    QUERY_WAS_CANCELLED: 394,
    QUERY_WAS_CANCELLED_BY_CLIENT: 735,
    THREAD_WAS_CANCELED: 677,
    DEADLOCK_AVOIDED: 473,
    PART_IS_TEMPORARILY_LOCKED: 384,
    PART_IS_LOCKED: 738,
    SESSION_IS_LOCKED: 373,
    QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING: 216,
    // Replication and Keeper: a replica or the quorum comes back.
    TABLE_IS_READ_ONLY: 242, // a replica lost its Keeper session
    TABLE_IS_BEING_RESTARTED: 733,
    NO_ZOOKEEPER: 225,
    KEEPER_EXCEPTION: 999,
    NO_ACTIVE_REPLICAS: 254,
    NO_AVAILABLE_REPLICA: 265,
    ALL_REPLICAS_ARE_STALE: 369,
    ALL_REPLICAS_LOST: 415,
    REPLICA_STATUS_CHANGED: 416,
    TOO_FEW_LIVE_REPLICAS: 285,
    UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE: 286,
    REPLICA_IS_NOT_IN_QUORUM: 289,
    UNKNOWN_STATUS_OF_INSERT: 319, // the same insert again, same token: applied once
    NO_REMOTE_SHARD_AVAILABLE: 519,
    TOO_MANY_UNAVAILABLE_SHARDS: 904,
    DISTRIBUTED_TOO_MANY_PENDING_BYTES: 574,
  },
  config: {
    // Our SQL, or the schema it expects, does not match the server: a hooklog bug or a missed migration.
    SYNTAX_ERROR: 62,
    UNKNOWN_TABLE: 60,
    UNKNOWN_DATABASE: 81,
    THERE_IS_NO_COLUMN: 8,
    NOT_FOUND_COLUMN_IN_BLOCK: 10,
    NO_SUCH_COLUMN_IN_TABLE: 16,
    UNKNOWN_IDENTIFIER: 47,
    AMBIGUOUS_COLUMN_NAME: 352,
    AMBIGUOUS_IDENTIFIER: 207,
    UNKNOWN_FUNCTION: 46,
    UNKNOWN_AGGREGATE_FUNCTION: 63,
    UNKNOWN_TYPE: 50,
    UNKNOWN_FORMAT: 73,
    UNKNOWN_SETTING: 115,
    UNKNOWN_STORAGE: 56,
    UNKNOWN_QUERY_PARAMETER: 456,
    BAD_QUERY_PARAMETER: 457,
    ILLEGAL_TYPE_OF_ARGUMENT: 43, // decided by types, so for every row alike
    NUMBER_OF_ARGUMENTS_DOESNT_MATCH: 42,
    TOO_MANY_ARGUMENTS_FOR_FUNCTION: 34,
    TOO_FEW_ARGUMENTS_FOR_FUNCTION: 35,
    INCORRECT_QUERY: 80,
    EMPTY_QUERY: 211,
    NOT_IMPLEMENTED: 48,
    SUPPORT_IS_DISABLED: 344,
    UNSUPPORTED_METHOD: 1,
    UNSUPPORTED_PARAMETER: 2,
    DEDUPLICATION_IS_NOT_POSSIBLE: 764,
    INTERSERVER_SCHEME_DOESNT_MATCH: 564,
    // The deployment: who we are and what we may do.
    ACCESS_DENIED: 497,
    DATABASE_ACCESS_DENIED: 291,
    AUTHENTICATION_FAILED: 516,
    UNKNOWN_USER: 192,
    WRONG_PASSWORD: 193,
    REQUIRED_PASSWORD: 194,
    USER_EXPIRED: 720,
    IP_ADDRESS_NOT_ALLOWED: 195,
    READONLY: 164,
    READONLY_SETTING: 472,
    SETTING_CONSTRAINT_VIOLATION: 452,
    INVALID_SETTING_VALUE: 471,
    QUERY_IS_PROHIBITED: 392,
    FUNCTION_NOT_ALLOWED: 446,
    TABLE_IS_PERMANENTLY_READ_ONLY: 774,
  },
} as const satisfies Record<ClickHouseErrorKind, Readonly<Record<string, number>>>;

/**
 * Where the code alone is not enough and the message tells the cases apart. TOO_MANY_PARTS also
 * covers "too many partitions for single INSERT block", which depends only on the batch's contents:
 * splitting the batch fixes it, waiting does not.
 */
export const MESSAGE_RULES: ReadonlyArray<{ code: number; message: RegExp; kind: ClickHouseErrorKind }> = [
  { code: 252, message: /partitions for (a )?single insert block/i, kind: 'row' },
];

const BY_CODE: ReadonlyMap<number, { name: string; kind: ClickHouseErrorKind }> = new Map(
  (Object.entries(CLICKHOUSE_ERROR_KINDS) as Array<[ClickHouseErrorKind, Record<string, number>]>).flatMap(
    ([kind, codes]) => Object.entries(codes).map(([name, code]) => [code, { name, kind }] as const),
  ),
);

/** The kind of ClickHouse error `code` (with its message, for MESSAGE_RULES); `unclassified` if not in the table. */
export function clickHouseErrorKind(code: number, message: string): ClickHouseErrorKind | 'unclassified' {
  const rule = MESSAGE_RULES.find((r) => r.code === code && r.message.test(message));
  return rule?.kind ?? BY_CODE.get(code)?.kind ?? 'unclassified';
}
