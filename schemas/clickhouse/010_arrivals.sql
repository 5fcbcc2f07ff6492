-- Arrivals: for every event, which paths delivered it and when each first did.
--
-- `events_v2` folds every copy of an event into one row per (org, uuid), so it
-- cannot say whether the hook, the System Log poller or a backfill brought it,
-- nor how late the hook was. The sink writes one row here per record it
-- inserts into events_v2, in the same batch, before the offsets are committed
-- (consumers/clickhouse-sink: the arrivals insert carries the events insert's
-- dedup token plus `-arrivals`, so a redelivered batch is dropped here too).
--
-- Every copy of (org, uuid, path) folds into one row whatever happens: the
-- aggregate keeps the first receipt (min) and the number of copies seen, and
-- min is idempotent, so even a copy inserted twice leaves the first receipt
-- exact. Read with `FINAL` or group by (org, uuid, path).
--
-- path: hook | system-log | backfill (the record's hooklog-source header).
-- event_type and published are the event's own (identical on every copy) and
-- sit in the sorting key so coverage queries prune by org, type and time like
-- events_v2.
CREATE TABLE IF NOT EXISTS {db}.arrivals
(
    org              LowCardinality(String),
    event_type       LowCardinality(String),
    published        DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    uuid             String,
    path             LowCardinality(String),
    first_received   SimpleAggregateFunction(min, DateTime64(3, 'UTC')),
    copies           SimpleAggregateFunction(sum, UInt64),
    hook_id          SimpleAggregateFunction(any, LowCardinality(String))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(published)
ORDER BY (org, event_type, published, uuid, path)
SETTINGS non_replicated_deduplication_window = 10000,
         fsync_after_insert = 1,
         fsync_part_directory = 1;
