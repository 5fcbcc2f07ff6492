-- Events v3: one row per (org, uuid) that keeps every known value of every copy.
--
-- Why v2 was not enough: a ReplacingMergeTree keeps the newest copy whole, so a
-- poller copy written after a hook copy blanked whatever only the hook copy had
-- (and the other way round), and an absent value was stored as ''/0/false, the
-- same as a value the service did send. v3 keeps v2's sorting key, partitioning
-- and dedup settings and changes only how copies fold:
--
-- * AggregatingMergeTree, every non-key column a SimpleAggregateFunction, so
--   copies fold column by column, at merge time and under FINAL.
-- * What the wire may leave out (protocols.md §5: any LogEvent field but uuid,
--   published and eventType may be null or absent) is Nullable, NULL meaning
--   "no copy said": anyLast over Nullable skips NULLs, so a copy without a
--   value never replaces a known one, and the newest known value wins. A value
--   the service did send ('' or 0 or false) stays that value, distinct from NULL.
-- * Targets are arrays (Nullable cannot hold one): `max`, so a copy with targets
--   wins over one without (a non-empty array sorts after []). Copies of one
--   event carry the same targets; two copies with different non-empty lists
--   would fold column by column.
-- * client_ip is a String: IPv4 as a.b.c.d, IPv6 in its canonical form (RFC
--   5952, what ClickHouse's IPv6 type prints), NULL when no address was usable
--   (`raw` keeps what was sent).
-- * `raw` is the first copy written, as received (`any`); hook_id and
--   delivery_id the hook copy's (`max`: '' only when no copy came by hook);
--   received_at the first receipt (`min`), ingested_at the last write (`max`).
--   Which paths brought an event, and when, is `arrivals` (010).
-- * Dedup of a replayed sink batch is unchanged: the insert token works on any
--   MergeTree, and non_replicated_deduplication_window is kept.
--
-- The copy from v2 reads its rows without FINAL, so copies v2 had not merged yet
-- fold here with nothing lost. A v2 value becomes NULL only where it could only
-- mean "absent": the default ('', 0, false, '::') where `raw` holds no usable
-- value at that path (absent, null, an object or array). '::ffff:a.b.c.d'
-- becomes 'a.b.c.d'. Every row is copied; v2 stays as it was (drop it by hand
-- once satisfied). Safe to run twice: a second copy of a row folds into the
-- same values (anyLast, any, max and min of equal values), and CREATE OR
-- REPLACE VIEW is atomic. Stop hooklog versions that write v2 before upgrading:
-- rows they write after the copy stay in v2.
CREATE TABLE IF NOT EXISTS {db}.events_v3
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
    -- securityContext: the network the request came from.
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
    ingested_at         SimpleAggregateFunction(max, DateTime64(3, 'UTC')) DEFAULT now64(3) CODEC(Delta, ZSTD(1))
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(published)
ORDER BY (org, event_type, published, uuid)
SETTINGS non_replicated_deduplication_window = 10000,
         fsync_after_insert = 1,
         fsync_part_directory = 1;

-- A string column keeps its v2 value unless it is '' and raw holds no string, number or boolean at
-- that path (what the sink maps to text). JSON is parsed only for rows whose v2 value is the default
-- (ClickHouse evaluates AND short-circuit).
INSERT INTO {db}.events_v3
(
    org, uuid, published, event_type, version, severity, display_message, legacy_event_type,
    actor_id, actor_type, actor_alternate_id, actor_display_name, client_ip, client_user_agent,
    client_browser, client_os, client_zone, client_device, geo_country, geo_state, geo_city,
    geo_postal_code, geo_lat, geo_lon, as_number, as_org, is_proxy, outcome_result, outcome_reason,
    target_id, target_type, target_alternate_id, target_display_name, transaction_id,
    transaction_type, external_session_id, root_session_id, raw, source, hook_id, delivery_id,
    received_at, ingested_at
)
SELECT
    org, uuid, published, event_type,
    if(version = '' AND JSONType(raw, 'version') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, version),
    if(severity = '' AND JSONType(raw, 'severity') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, severity),
    if(display_message = '' AND JSONType(raw, 'displayMessage') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, display_message),
    if(legacy_event_type = '' AND JSONType(raw, 'legacyEventType') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, legacy_event_type),
    if(actor_id = '' AND JSONType(raw, 'actor', 'id') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, actor_id),
    if(actor_type = '' AND JSONType(raw, 'actor', 'type') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, actor_type),
    if(actor_alternate_id = '' AND JSONType(raw, 'actor', 'alternateId') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, actor_alternate_id),
    if(actor_display_name = '' AND JSONType(raw, 'actor', 'displayName') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, actor_display_name),
    if(client_ip = toIPv6('::'), NULL,
       if(startsWith(toString(client_ip), '::ffff:') AND isIPv4String(substring(toString(client_ip), 8)),
          substring(toString(client_ip), 8), toString(client_ip))),
    if(client_user_agent = '' AND JSONType(raw, 'client', 'userAgent', 'rawUserAgent') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, client_user_agent),
    if(client_browser = '' AND JSONType(raw, 'client', 'userAgent', 'browser') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, client_browser),
    if(client_os = '' AND JSONType(raw, 'client', 'userAgent', 'os') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, client_os),
    if(client_zone = '' AND JSONType(raw, 'client', 'zone') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, client_zone),
    if(client_device = '' AND JSONType(raw, 'client', 'device') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, client_device),
    if(geo_country = '' AND JSONType(raw, 'client', 'geographicalContext', 'country') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, geo_country),
    if(geo_state = '' AND JSONType(raw, 'client', 'geographicalContext', 'state') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, geo_state),
    if(geo_city = '' AND JSONType(raw, 'client', 'geographicalContext', 'city') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, geo_city),
    if(geo_postal_code = '' AND JSONType(raw, 'client', 'geographicalContext', 'postalCode') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, geo_postal_code),
    geo_lat, geo_lon,
    -- The sink took a number or a numeric string in range; 0 stays 0 only where raw says 0.
    if(as_number = 0 AND JSONExtractRaw(raw, 'securityContext', 'asNumber') NOT IN ('0', '"0"'), NULL, as_number),
    if(as_org = '' AND JSONType(raw, 'securityContext', 'asOrg') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, as_org),
    -- The sink stored `isProxy === true`: false stays false only where raw has a boolean.
    if(NOT is_proxy AND JSONType(raw, 'securityContext', 'isProxy') != 'Bool', NULL, is_proxy),
    if(outcome_result = '' AND JSONType(raw, 'outcome', 'result') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, outcome_result),
    if(outcome_reason = '' AND JSONType(raw, 'outcome', 'reason') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, outcome_reason),
    target_id, target_type, target_alternate_id, target_display_name,
    if(transaction_id = '' AND JSONType(raw, 'transaction', 'id') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, transaction_id),
    if(transaction_type = '' AND JSONType(raw, 'transaction', 'type') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, transaction_type),
    if(external_session_id = '' AND JSONType(raw, 'authenticationContext', 'externalSessionId') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, external_session_id),
    if(root_session_id = '' AND JSONType(raw, 'authenticationContext', 'rootSessionId') NOT IN ('String', 'Int64', 'UInt64', 'Double', 'Bool'), NULL, root_session_id),
    raw, source, hook_id, delivery_id, received_at, ingested_at
FROM {db}.events_v2
SETTINGS insert_deduplicate = 0;

-- The view's `*` is expanded when it is created: a later migration that adds a column to events_v3
-- must end with the same CREATE OR REPLACE VIEW.
CREATE OR REPLACE VIEW {db}.events AS SELECT * FROM {db}.events_v3 FINAL;
