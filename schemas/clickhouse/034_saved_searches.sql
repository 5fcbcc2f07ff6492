-- Saved searches, from the <prefix>.saved-searches topic (console/saved-searches.ts
-- writes and maps the records): one row per change an analyst made to an org's
-- saved search (save, rename, delete), never updated. Each row carries the
-- search's whole state (name, filter, range, columns, facets), so a saved search
-- is its latest row (by at, ties broken by change_id) unless that is a delete:
-- every instance of a fleet lists the same searches, and the rows are the audit
-- trail: who, when, what, from which request. change_id is unique per change: a
-- record the sink delivers twice folds into one row (ReplacingMergeTree; read
-- with FINAL) and a retried insert is dropped by its dedup token.
CREATE TABLE IF NOT EXISTS {db}.saved_searches
(
    at           DateTime64(3, 'UTC'),
    org          LowCardinality(String),
    search_id    String,
    change_id    String,
    action       LowCardinality(String),
    name         String CODEC(ZSTD(3)),
    filter       String CODEC(ZSTD(3)),
    -- A relative range ('7d', '24h': back from the moment it is opened), or '' for an absolute one.
    range_last   String,
    -- An absolute range, ISO-8601 (UTC), or '' for a relative one.
    range_since  String,
    range_until  String,
    fields       Array(String),
    facets       Array(String),
    actor        String,
    actor_name   String,
    actor_kind   LowCardinality(String),
    request_id   String,
    ingested_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (org, search_id, at, change_id)
SETTINGS non_replicated_deduplication_window = 10000,
         -- The sink commits offsets once the insert returns: the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
