-- Events v4: events_v3 with one partition per day of `published`, so that a closed day becomes one part,
-- which queries over every org read under FINAL without merging.
--
-- Why: FINAL merges, row by row, every part whose sorting-key ranges intersect, reading the whole
-- sorting key (uuid included) and every column a query names for every row before any filter on a
-- value column may run (a filter on outcome_result or client_ip cannot move before the fold: another
-- copy may carry the value). Over one org that is a few thousand rows; over every org it is the whole
-- range. A part made by a merge (level > 0) holds no two rows with the same sorting key, and ClickHouse
-- reads such a part whose ranges intersect no other part's as a plain table, in parallel, unmerged.
-- Monthly partitions rarely reach one part (every part of the live month spans every org, so nearly
-- every range intersects); a day stops receiving events soon after it ends, and
-- min_age_to_force_merge_seconds then merges it whole (on_partition_only: the entire partition at
-- once) an hour after its last write. Copies of an event share `published`, so they are always in one
-- partition and never fold across partitions.
--
-- Unchanged: columns, codecs, sorting key, engine, dedup window, fsync, the event-type set index (013),
-- the sink's way in (a Null table and its view, made here for v4 as 013 made them for v3). A sink batch
-- writes one part per day it holds, as it wrote one per month: events arrive within minutes of
-- `published`, so a batch holds one day (two around midnight). A backfill batch holds at most the
-- identity service's 90 days of System Log, within ClickHouse's 100 partitions per insert block.
--
-- Carried over: every event of events_v3 as v3 folds it, read with FINAL (copied row by row, copies from
-- several parts would land in one block in no set order, and anyLast would then keep another copy's value).
-- Safe to run twice: a second copy of an event folds into the same values. events_v3 stays as it was (drop
-- it by hand once satisfied); stop hooklog versions that write v3 before upgrading: rows they write after
-- the copy stay in v3.
CREATE TABLE IF NOT EXISTS {db}.events_v4
(
    org                 LowCardinality(String),
    uuid                String,
    published           DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    event_type          LowCardinality(String),
    version             SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    severity            SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    display_message     SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    legacy_event_type   SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),

    actor_id            SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),
    actor_type          SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    actor_alternate_id  SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),
    actor_display_name  SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),

    client_ip           SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),
    client_user_agent   SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    client_browser      SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    client_os           SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    client_zone         SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    client_device       SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    geo_country         SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    geo_state           SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    geo_city            SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    geo_postal_code     SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    geo_lat             SimpleAggregateFunction(anyLast, Nullable(Float64)),
    geo_lon             SimpleAggregateFunction(anyLast, Nullable(Float64)),
    as_number           SimpleAggregateFunction(anyLast, Nullable(UInt32)),
    as_org              SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    is_proxy            SimpleAggregateFunction(anyLast, Nullable(Bool)),

    outcome_result      SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    outcome_reason      SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),

    target_id           SimpleAggregateFunction(max, Array(String)) CODEC(ZSTD(3)),
    target_type         SimpleAggregateFunction(max, Array(String)) CODEC(ZSTD(3)),
    target_alternate_id SimpleAggregateFunction(max, Array(String)) CODEC(ZSTD(3)),
    target_display_name SimpleAggregateFunction(max, Array(String)) CODEC(ZSTD(3)),

    transaction_id      SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),
    transaction_type    SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    external_session_id SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),
    root_session_id     SimpleAggregateFunction(anyLast, Nullable(String)) CODEC(ZSTD(3)),

    raw                 SimpleAggregateFunction(any, String) CODEC(ZSTD(6)),

    source              SimpleAggregateFunction(any, LowCardinality(String)),
    hook_id             SimpleAggregateFunction(max, LowCardinality(String)),
    delivery_id         SimpleAggregateFunction(max, String) CODEC(ZSTD(3)),
    received_at         SimpleAggregateFunction(min, DateTime64(3, 'UTC')) CODEC(Delta, ZSTD(1)),
    ingested_at         SimpleAggregateFunction(max, DateTime64(3, 'UTC')) DEFAULT now64(3) CODEC(Delta, ZSTD(1)),

    INDEX event_type_set event_type TYPE set(256) GRANULARITY 1
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMMDD(published)
ORDER BY (org, event_type, published, uuid)
SETTINGS non_replicated_deduplication_window = 10000,
         fsync_after_insert = 1,
         fsync_part_directory = 1,
         min_age_to_force_merge_seconds = 3600,
         min_age_to_force_merge_on_partition_only = 1;

-- A block of v3's events spans many days (v3 is sorted by org first), hence no limit on partitions per
-- block; the parts this makes merge in the background.
--
-- The copy runs only while v4's arrivals view (below) does not exist yet: the copied events already have
-- their arrivals (v3's view, 031, or the sink's own insert before it), and a copy feeding the view would
-- count each of them once more. ClickHouse fixes an insert's views when the insert starts, so a run of
-- this file again (after a crash before it was recorded) or beside another process's finds the view made
-- and copies nothing, or started before it and feeds it nothing: only a copy that completed precedes the view.
INSERT INTO {db}.events_v4 SELECT * FROM {db}.events_v3 FINAL
WHERE (SELECT count() FROM system.tables WHERE database = '{db}' AND name = 'events_v4_arrivals_mv') = 0
SETTINGS insert_deduplicate = 0, max_partitions_per_insert_block = 0;

-- v4's arrivals, as 031 made them for v3: one arrivals row for every row written into events_v4 that came by
-- a delivery path (path = the record's `hooklog-source` as sent, first_received = received_at, one copy).
-- The one statement of that mapping now (consumers/clickhouse-sink/events-input.ts gives a test's own events
-- table the same view, made from it). v3's view stays with v3, which nothing writes any more.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_v4_arrivals_mv TO {db}.arrivals
AS SELECT org, event_type, published, uuid, source AS path, received_at AS first_received, 1 AS copies, hook_id
FROM {db}.events_v4
WHERE source != '';

-- The sink's way in, as 013 made it for v3: a Null table of the same plain columns, and its view. The
-- view's `*` is expanded when it is made; a later migration adding a column re-makes it.
CREATE TABLE IF NOT EXISTS {db}.events_v4_input AS {db}.events_v3_input;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_v4_input_mv TO {db}.events_v4
AS SELECT * FROM {db}.events_v4_input;

CREATE OR REPLACE VIEW {db}.events AS SELECT * FROM {db}.events_v4 FINAL;
