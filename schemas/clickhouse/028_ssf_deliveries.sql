-- Security Event Tokens hooklog pushed to an org, from the
-- <prefix>.ssf-deliveries topic (consumers/response/transmitter.ts writes one
-- record per SET once the receiver answered; consumers/response/rows.ts maps
-- them). result is accepted (2xx) or refused (4xx: `err` is the receiver's
-- RFC 8935 code, and the SET itself is in the dead letters). jti is stable
-- per risk change and org. Copies of a record fold (ReplacingMergeTree, FINAL)
-- and a retried insert is dropped by its dedup token.
CREATE TABLE IF NOT EXISTS {db}.ssf_deliveries
(
    at              DateTime64(3, 'UTC'),
    org             LowCardinality(String),
    jti             String,
    change_id       String,
    user_id         String,
    user_login      String,
    previous_level  LowCardinality(String),
    current_level   LowCardinality(String),
    rule_id         LowCardinality(String),
    alert_id        String,
    result          LowCardinality(String),
    status          UInt16,
    err             LowCardinality(String),
    description     String,
    attempts        UInt16,
    ingested_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(at)
ORDER BY (org, at, jti)
SETTINGS non_replicated_deduplication_window = 10000,
         fsync_after_insert = 1,
         fsync_part_directory = 1;
