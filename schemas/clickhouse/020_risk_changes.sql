-- Users' risk level changes, from the <prefix>.risk-changes topic (the risk
-- fold in consumers/alerting/risk/ writes the records, risk/rows.ts maps
-- them; the record is schemas/risk.ts RiskChange). One row per change: the
-- entity, the level before and after, why (cause finding|expiry, the rule,
-- its alert and stated reason) and when (`at`: the finding's event time or
-- the expiry instant).
--
-- change_id is stable (the same change derived again has the same id) and
-- `at` never differs between copies, so a record the sink delivers twice
-- folds into one row (ReplacingMergeTree; read with FINAL for exact counts)
-- and a retried insert is dropped by its dedup token, as for events.
CREATE TABLE IF NOT EXISTS {db}.risk_changes
(
    at            DateTime64(3, 'UTC'),
    org           LowCardinality(String),
    entity_type   LowCardinality(String),
    entity_id     String,
    entity_login  String,
    previous      LowCardinality(String),
    current       LowCardinality(String),
    cause         LowCardinality(String),
    rule_id       LowCardinality(String),
    alert_id      String,
    reason        String,
    change_id     String,
    appended_at   DateTime64(3, 'UTC'),
    ingested_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(at)
ORDER BY (org, entity_id, at, change_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- As for events: the sink commits offsets once the insert returns,
         -- so the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
