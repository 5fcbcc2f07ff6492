-- System Log events (LogEvent), one row per (org, uuid) once merged.
--
-- Dedupe, twice over:
-- * ReplacingMergeTree keyed by ORDER BY (org, uuid) folds the duplicates the
--   identity service itself sends (a hook redelivered, an event both pushed and
--   polled). Read with FINAL (or GROUP BY org, uuid) for exact counts; merges
--   fold them on disk eventually. Folding happens within a partition, which is
--   safe because an event's `published` never changes between copies.
-- * non_replicated_deduplication_window makes ClickHouse remember the last
--   10 000 insert blocks' tokens (it is 0, off, by default on non-replicated
--   tables). The sink sends insert_deduplication_token =
--   <topic>-<partition>-<first offset>-<last offset>, so an insert retried
--   after a timeout whose first attempt did land is dropped, not doubled.
--
-- Every typed column is a convenience copy; `raw` is the event as it came off
-- the stream, byte for byte, so fields unknown today are never lost.
CREATE TABLE IF NOT EXISTS {db}.events
(
    org                 LowCardinality(String),
    uuid                String,
    published           DateTime64(3, 'UTC'),
    event_type          LowCardinality(String),
    version             LowCardinality(String),
    severity            LowCardinality(String),
    display_message     String,
    legacy_event_type   LowCardinality(String),

    actor_id            String,
    actor_type          LowCardinality(String),
    actor_alternate_id  String,
    actor_display_name  String,

    -- String for now: real feeds carry redacted or malformed addresses; v2 makes it IPv6.
    client_ip           String,
    client_user_agent   String,
    client_zone         String,
    client_device       LowCardinality(String),
    geo_country         LowCardinality(String),
    geo_state           String,
    geo_city            String,
    geo_postal_code     String,
    geo_lat             Nullable(Float64),
    geo_lon             Nullable(Float64),

    outcome_result      LowCardinality(String),
    outcome_reason      String,

    -- target[]: parallel arrays, one element per target (ARRAY JOIN them together).
    target_id           Array(String),
    target_type         Array(LowCardinality(String)),
    target_alternate_id Array(String),
    target_display_name Array(String),

    transaction_id      String,
    transaction_type    LowCardinality(String),
    -- authenticationContext.externalSessionId / rootSessionId
    external_session_id String,
    root_session_id     String,

    raw                 String CODEC(ZSTD(3)),

    -- hooklog's metadata (stream headers)
    source              LowCardinality(String),
    hook_id             String,
    delivery_id         String,
    received_at         DateTime64(3, 'UTC'),
    ingested_at         DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(published)
ORDER BY (org, uuid)
SETTINGS non_replicated_deduplication_window = 10000,
         -- The sink commits stream offsets once an insert returns, so the insert
         -- must be on disk by then: a part lost to a power cut after the commit
         -- would be an acknowledged event lost.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
