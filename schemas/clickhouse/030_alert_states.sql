-- Alert triage, from the <prefix>.alert-states topic (console/alert-states.ts
-- writes and maps the records): one row per change an analyst made to an
-- alert (acknowledge, close with a resolution, reopen, assign, comment), never
-- updated. An alert's current state is the fold of its rows (the latest status
-- and assignee, ties broken by change_id), so every instance of a fleet reads
-- the same state, and the rows are the audit trail: who, when, what, from which
-- request. change_id is unique per change: a record the sink delivers twice
-- folds into one row (ReplacingMergeTree; read with FINAL) and a retried
-- insert is dropped by its dedup token.
CREATE TABLE IF NOT EXISTS {db}.alert_states
(
    at           DateTime64(3, 'UTC'),
    org          LowCardinality(String),
    alert_id     String,
    change_id    String,
    action       LowCardinality(String),
    status       LowCardinality(String),
    resolution   LowCardinality(String),
    -- NULL: the change did not touch the assignee; '' unassigns.
    assignee     Nullable(String),
    note         String CODEC(ZSTD(3)),
    actor        String,
    actor_name   String,
    actor_kind   LowCardinality(String),
    request_id   String,
    ingested_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (org, alert_id, at, change_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- The sink commits offsets once the insert returns: the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
