-- Response actions, from the <prefix>.actions topic (consumers/response writes
-- the records, consumers/response/rows.ts maps them): one row per step of an
-- action — requested, awaiting_approval, dry_run, not_allowed, approved,
-- started, done, failed, uncertain, cancelled. An action's state is its latest
-- row: argMax(state, at). action_id is stable per (org, alert, cause, action),
-- so the same decision made twice is one action.
--
-- A step's record carries the whole action, and its `at` never changes between
-- copies, so a record the sink delivers twice folds into one row
-- (ReplacingMergeTree; read with FINAL for exact counts) and a retried insert
-- is dropped by its dedup token. `error` is what the service said about a
-- failed call (errorCode: summary (causes)).
CREATE TABLE IF NOT EXISTS {db}.actions
(
    at           DateTime64(3, 'UTC'),
    org          LowCardinality(String),
    action_id    String,
    state        LowCardinality(String),
    action       LowCardinality(String),
    group_id     String,
    user_id      String,
    user_login   String,
    rule_id      LowCardinality(String),
    alert_id     String,
    change_id    String,
    attempt      UInt16,
    actor        String,
    status       UInt16,
    error_code   LowCardinality(String),
    error        String,
    note         String,
    ingested_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(at)
ORDER BY (org, action_id, at, state)
SETTINGS non_replicated_deduplication_window = 10000,
         -- The sink commits offsets once the insert returns: the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
