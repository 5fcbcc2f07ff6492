-- Records nobody could process, from the <prefix>.deadletter topic: the raw
-- bytes as received, why they were rejected and by whom. `topic`, `partition`
-- and `offset` say where the bytes were originally read, when a consumer
-- rejected them (empty/0 for records a receiver refused before they reached a
-- topic); `dl_partition`/`dl_offset` are the dead letter's own position in the
-- deadletter topic, which (with its received_at, in case the topic is ever
-- recreated) identifies it, so a redelivered dead letter folds into one row
-- (ReplacingMergeTree) and a retried insert is dropped (dedup token).
CREATE TABLE IF NOT EXISTS {db}.deadletter
(
    received_at   DateTime64(3, 'UTC'),
    origin        LowCardinality(String),
    reason        String,
    topic         LowCardinality(String),
    partition     UInt32,
    offset        UInt64,
    org           LowCardinality(String),
    raw           String CODEC(ZSTD(3)),
    dl_partition  UInt32,
    dl_offset     UInt64,
    ingested_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(received_at)
ORDER BY (dl_partition, dl_offset, received_at)
SETTINGS non_replicated_deduplication_window = 10000,
         -- The sink commits stream offsets once an insert returns, so the insert
         -- must be on disk by then: a part lost to a power cut after the commit
         -- would be an acknowledged event lost.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
