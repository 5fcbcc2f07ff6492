-- Legacy Events API events (/api/v1/events), one row per (org, event_id) once
-- merged. Their own table: legacy event ids (tev…) do not map to System Log
-- uuids, so the two feeds never fold into each other.
--
-- Dedupe as for events (001): a ReplacingMergeTree keyed by (org, event_id)
-- folds the copies a restart re-reads (read with FINAL for exact counts), and
-- the sink's insert_deduplication_token drops an insert retried after an
-- ambiguous failure. `raw` keeps the event exactly as it came off the stream.
CREATE TABLE IF NOT EXISTS {db}.legacy_events
(
    org                 LowCardinality(String),
    event_id            String,
    published           DateTime64(3, 'UTC'),
    action_object_type  LowCardinality(String),
    action_message      String,
    action_categories   Array(LowCardinality(String)),
    action_request_uri  String,
    session_id          String,
    request_id          String,

    -- actors[] / targets[]: parallel arrays, one element per entry (ARRAY JOIN them together).
    actor_id            Array(String),
    actor_object_type   Array(LowCardinality(String)),
    actor_display_name  Array(String),
    actor_login         Array(String),
    -- ipAddress of the actor whose objectType is Client.
    client_ip           String,
    target_id           Array(String),
    target_object_type  Array(LowCardinality(String)),
    target_display_name Array(String),
    target_login        Array(String),

    raw                 String CODEC(ZSTD(3)),

    -- hooklog's metadata (stream headers)
    source              LowCardinality(String),
    received_at         DateTime64(3, 'UTC'),
    ingested_at         DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(published)
ORDER BY (org, event_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- As for events: the sink commits offsets once the insert returns,
         -- so the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
