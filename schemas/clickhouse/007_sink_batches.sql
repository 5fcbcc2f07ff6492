-- The sink's batch plans: the offset range of every batch, recorded before the
-- batch is inserted (consumers/clickhouse-sink/plans.ts). A sink restarting
-- from its committed position after a crash between insert and commit re-cuts
-- exactly these ranges, so each insert is repeated with the same rows and the
-- same insert_deduplication_token (`topic-partition-first-last`), and
-- ClickHouse drops it as a duplicate. The same role as clickhouse-kafka-connect's
-- state store.
--
-- Plain MergeTree, not Replacing: if two owners of a partition ever recorded
-- different ranges from one offset (a zombie after a rebalance), the reader
-- takes the earliest recorded, which is the one that may have been inserted first.
-- A plan matters only until its batch is committed, a second or so; the TTL
-- keeps the table small and is far beyond any outage the sink rides out.
CREATE TABLE IF NOT EXISTS {db}.sink_batches
(
    consumer_group  LowCardinality(String),
    topic           LowCardinality(String),
    partition       UInt32,
    first_offset    UInt64,
    last_offset     UInt64,
    planned_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = MergeTree
ORDER BY (consumer_group, topic, partition, first_offset)
TTL toDateTime(planned_at) + INTERVAL 30 DAY
SETTINGS fsync_after_insert = 1,
         fsync_part_directory = 1;
