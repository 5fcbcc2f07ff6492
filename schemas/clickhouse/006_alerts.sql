-- Alerts, from the <prefix>.alerts topic (consumers/alerting writes the
-- records; consumers/alerting/outputs/clickhouse.ts maps them). One row per
-- finding: alert_id is a hash of what the finding is (rule, org, group key,
-- the events behind it), so the same finding re-derived after a restart has
-- the same id and folds into one row (ReplacingMergeTree; read with FINAL for
-- exact counts), and a retried insert is dropped by its dedup token.
CREATE TABLE IF NOT EXISTS {db}.alerts
(
    event_time        DateTime64(3, 'UTC'),
    first_event_time  DateTime64(3, 'UTC'),
    alert_id          String,
    rule_id           LowCardinality(String),
    rule_title        String,
    severity          LowCardinality(String),
    kind              LowCardinality(String),
    org               LowCardinality(String),
    group_key         String,
    event_count       UInt32,
    event_ids         Array(String),
    ingested_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(event_time)
ORDER BY (org, rule_id, event_time, alert_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- The output commits offsets once the insert returns: the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
