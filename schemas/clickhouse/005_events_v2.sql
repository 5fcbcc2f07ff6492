-- Events v2: the events table designed from the query library (analytics/).
--
-- What the queries do, and what the table does for them:
-- * Every query filters one org and a time range, almost all of them a set of
--   event types (`event_type IN (…)` or `LIKE 'policy.%'`). ORDER BY (org,
--   event_type, published, uuid) lets the primary index skip to exactly those
--   granules; queries over all of an org's types (volume, new country) still
--   prune by org and by the monthly partition.
-- * What they group and filter on is typed: client_ip is IPv6 (IPv4 as
--   ::ffff:a.b.c.d; '::' when the feed sent none or something unparseable —
--   `raw` keeps what it sent), ASN and user-agent family are columns of their
--   own, and templated or few-valued strings are LowCardinality.
-- * Dedupe is as in v1: ReplacingMergeTree folds copies of one event, which
--   share org, event_type, published and uuid, so they share the sorting key.
--   Read with FINAL for exact counts (the queries do).
-- * `raw` stays a ZSTD-compressed String: measured against the JSON type in
--   bench/analytics (BENCHMARKS.md), it is several times smaller and it is
--   byte-exact, which the JSON type is not (it re-serialises).
-- * Retention: no TTL here; `store.retention_days` (config) sets it with
--   ALTER … MODIFY TTL at start-up, so changing it needs no migration.
-- * No skip index: none measured faster on the query mix (BENCHMARKS.md).
--
-- The table is `events_v2`; the sink writes it. `events`, the name analysts
-- query, becomes a view over it WITH FINAL: plain `SELECT … FROM events` is
-- then exact once per (org, uuid), which a FINAL written against a view would
-- not be (ClickHouse ignores FINAL on a view). A view rather than renaming v1
-- aside because a RENAME cannot be made safe to run twice, and two hooklogs may
-- run this file at once (platform/store/migrate.ts): every statement below is.
--
-- Migration from v1: copy the v1 rows the v2 table does not already hold (so a
-- second run, or one racing this one, copies nothing more; a row copied twice
-- by a race folds like any duplicate), then replace the v1 table by the view in
-- one atomic CREATE OR REPLACE. The copy reads only columns the view has too,
-- so re-running it after the swap is harmless.
-- The view's `*` is expanded when it is created: a later migration that adds
-- a column to events_v2 must end with the same CREATE OR REPLACE VIEW.
CREATE TABLE IF NOT EXISTS {db}.events_v2
(
    org                 LowCardinality(String),
    uuid                String,
    published           DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    event_type          LowCardinality(String),
    version             LowCardinality(String),
    severity            LowCardinality(String),
    display_message     LowCardinality(String),
    legacy_event_type   LowCardinality(String),

    actor_id            String CODEC(ZSTD(3)),
    actor_type          LowCardinality(String),
    actor_alternate_id  String CODEC(ZSTD(3)),
    actor_display_name  String CODEC(ZSTD(3)),

    client_ip           IPv6,
    client_user_agent   LowCardinality(String),
    client_browser      LowCardinality(String),
    client_os           LowCardinality(String),
    client_zone         LowCardinality(String),
    client_device       LowCardinality(String),
    geo_country         LowCardinality(String),
    geo_state           LowCardinality(String),
    geo_city            LowCardinality(String),
    geo_postal_code     LowCardinality(String),
    geo_lat             Nullable(Float64),
    geo_lon             Nullable(Float64),
    -- securityContext: the network the request came from.
    as_number           UInt32,
    as_org              LowCardinality(String),
    is_proxy            Bool,

    outcome_result      LowCardinality(String),
    outcome_reason      LowCardinality(String),

    target_id           Array(String) CODEC(ZSTD(3)),
    target_type         Array(LowCardinality(String)),
    target_alternate_id Array(String) CODEC(ZSTD(3)),
    target_display_name Array(String) CODEC(ZSTD(3)),

    transaction_id      String CODEC(ZSTD(3)),
    transaction_type    LowCardinality(String),
    external_session_id String CODEC(ZSTD(3)),
    root_session_id     String CODEC(ZSTD(3)),

    raw                 String CODEC(ZSTD(6)),

    source              LowCardinality(String),
    hook_id             LowCardinality(String),
    delivery_id         String CODEC(ZSTD(3)),
    received_at         DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),
    ingested_at         DateTime64(3, 'UTC') DEFAULT now64(3) CODEC(Delta, ZSTD(1))
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(published)
ORDER BY (org, event_type, published, uuid)
SETTINGS non_replicated_deduplication_window = 10000,
         fsync_after_insert = 1,
         fsync_part_directory = 1;

INSERT INTO {db}.events_v2
SELECT
    org, uuid, published, event_type, version, severity, display_message, legacy_event_type,
    actor_id, actor_type, actor_alternate_id, actor_display_name,
    toIPv6OrDefault(toString(client_ip)),
    client_user_agent,
    JSONExtractString(raw, 'client', 'userAgent', 'browser'),
    JSONExtractString(raw, 'client', 'userAgent', 'os'),
    client_zone, client_device, geo_country, geo_state, geo_city, geo_postal_code, geo_lat, geo_lon,
    toUInt32OrZero(JSONExtractRaw(raw, 'securityContext', 'asNumber')),
    JSONExtractString(raw, 'securityContext', 'asOrg'),
    JSONExtractBool(raw, 'securityContext', 'isProxy'),
    outcome_result, outcome_reason,
    target_id, target_type, target_alternate_id, target_display_name,
    transaction_id, transaction_type, external_session_id, root_session_id,
    raw, source, hook_id, delivery_id, received_at, ingested_at
FROM {db}.events
WHERE (org, uuid) NOT IN (SELECT org, uuid FROM {db}.events_v2);

CREATE OR REPLACE VIEW {db}.events AS SELECT * FROM {db}.events_v2 FINAL;
