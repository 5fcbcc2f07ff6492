-- Token hook decisions, from the <prefix>.token-decisions topic: one row per
-- answer the token inline hook gave (receivers/token-hook/audit.ts writes the
-- records, receivers/token-hook/decision-row.ts maps them).
--
-- `outcome` is commands | deny | none | error_allow | error_deny; `commands`
-- is the JSON of the commands answered (they may carry claim values: this
-- table is as sensitive as the tokens); `rules_matched` the rules in order.
--
-- decision_id is unique per decision, and decided_at never changes between
-- copies of one, so a record the sink delivers twice folds into one row
-- (ReplacingMergeTree; read with FINAL for exact counts) and a retried insert
-- is dropped by its dedup token, as for events.
CREATE TABLE IF NOT EXISTS {db}.token_decisions
(
    decided_at     DateTime64(3, 'UTC'),
    org            LowCardinality(String),
    hook_id        LowCardinality(String),
    decision_id    String,
    event_id       String,
    request_id     String,
    user_id        String,
    client_id      String,
    grant_type     LowCardinality(String),
    outcome        LowCardinality(String),
    rules_matched  Array(LowCardinality(String)),
    commands       String CODEC(ZSTD(3)),
    error_summary  String,
    error_kind     LowCardinality(String),
    latency_us     UInt32,
    received_at    DateTime64(3, 'UTC'),
    ingested_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(decided_at)
ORDER BY (org, hook_id, decided_at, decision_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- As for events: the sink commits offsets once the insert returns,
         -- so the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
