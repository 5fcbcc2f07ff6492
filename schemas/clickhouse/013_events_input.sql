-- The sink's way into events_v3: a Null table taking its rows as TabSeparated text, and a materialized
-- view writing each block on into events_v3 (consumers/clickhouse-sink/event-tsv.ts writes the rows).
--
-- Why not insert into events_v3 directly: ClickHouse reads text into LowCardinality, Nullable and
-- SimpleAggregateFunction columns field by field, row by row; into plain String columns it reads far
-- faster, and the view's conversion to events_v3's types runs on whole columns. Measured on chdb with
-- the sink's own rows (busy machine): 44.5 µs per event straight into events_v3, 35.6 through here.
-- Columns are derived by the sink (rows.ts's rules, in event-tsv.ts); this view only changes their types.
--
-- What this changes about refusals: a Null table keeps nothing, so a block the view cannot write (a
-- value events_v3 refuses) leaves no copy anywhere (unlike a view over a stored table, where the source
-- keeps it); the insert fails whole and the sink bisects it as before.
--
-- A Null table with no view behind it takes every insert and keeps none: the sink checks that
-- events_v3_input_mv exists when it starts and after every insert, and holds its partition (retrying)
-- while it does not. A migration that adds a column to events_v3 adds it here too and recreates the
-- view (its `*` is expanded when it is created), in that order, with the sink stopped.
CREATE TABLE IF NOT EXISTS {db}.events_v3_input
(
    org                 String,
    uuid                String,
    published           DateTime64(3, 'UTC'),
    event_type          String,
    version             Nullable(String),
    severity            Nullable(String),
    display_message     Nullable(String),
    legacy_event_type   Nullable(String),
    actor_id            Nullable(String),
    actor_type          Nullable(String),
    actor_alternate_id  Nullable(String),
    actor_display_name  Nullable(String),
    client_ip           Nullable(String),
    client_user_agent   Nullable(String),
    client_browser      Nullable(String),
    client_os           Nullable(String),
    client_zone         Nullable(String),
    client_device       Nullable(String),
    geo_country         Nullable(String),
    geo_state           Nullable(String),
    geo_city            Nullable(String),
    geo_postal_code     Nullable(String),
    geo_lat             Nullable(Float64),
    geo_lon             Nullable(Float64),
    as_number           Nullable(UInt32),
    as_org              Nullable(String),
    is_proxy            Nullable(Bool),
    outcome_result      Nullable(String),
    outcome_reason      Nullable(String),
    target_id           Array(String),
    target_type         Array(String),
    target_alternate_id Array(String),
    target_display_name Array(String),
    transaction_id      Nullable(String),
    transaction_type    Nullable(String),
    external_session_id Nullable(String),
    root_session_id     Nullable(String),
    source              String,
    hook_id             String,
    delivery_id         String,
    received_at         DateTime64(3, 'UTC'),
    raw                 String
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_v3_input_mv TO {db}.events_v3
AS SELECT * FROM {db}.events_v3_input;

-- Queries over every org at once (the query library's org=*) filter on event_type without an org: the
-- sorting key (org, event_type, …) cannot prune them, as each org's rows of one type are smaller than a
-- granule at provider scale. A set index of the event types in each granule lets such a query skip every
-- granule holding none of its types (with FINAL too: copies of an event share its type, and ClickHouse
-- widens to newer parts in exact mode). Measured on 9.8M events over 1,000 orgs (busy machine): queries
-- over rare types (impersonation, admin-console access) 2.6-2.9 s -> 0.1 s; common ones (sign-ins) unchanged.
-- MATERIALIZE builds it for the parts already there, as a background mutation (start is not held up).
ALTER TABLE {db}.events_v3 ADD INDEX IF NOT EXISTS event_type_set event_type TYPE set(256) GRANULARITY 1;

ALTER TABLE {db}.events_v3 MATERIALIZE INDEX event_type_set;
