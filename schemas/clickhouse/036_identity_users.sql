-- Each org's directory as the identity sync last read it, from the compacted
-- <prefix>.identity topic (ingest/identity/ writes the records, schemas/identity.ts
-- is their contract, ingest/identity/rows.ts maps them): one row per user and
-- record, the latest kept by `version` (the record's offset: every record of a
-- key is on one partition, in order). A tombstone (the user deleted in the
-- identity service) is a row with deleted = 1, which FINAL leaves out, so
-- `SELECT … FROM identity_users FINAL` is the directory now. A record the sink
-- delivers twice has the same version and folds into one row; a retried insert
-- is dropped by its dedup token. Every text came from the identity service and
-- may have been chosen by an attacker: readers bound and show it as text.
CREATE TABLE IF NOT EXISTS {db}.identity_users
(
    org           LowCardinality(String),
    user_id       String,
    login         String,
    status        LowCardinality(String),
    group_ids     Array(String),
    group_names   Array(String),
    admin_roles   Array(LowCardinality(String)),
    truncated     Bool,
    last_updated  Nullable(DateTime64(3, 'UTC')),
    synced_at     DateTime64(3, 'UTC'),
    deleted       UInt8,
    version       UInt64,
    ingested_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(version, deleted)
ORDER BY (org, user_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- As for events: the sink commits offsets once the insert returns, so the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
