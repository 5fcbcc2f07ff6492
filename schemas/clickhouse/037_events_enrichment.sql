-- GeoIP enrichment (issue 39): the country, city, coordinates and AS hooklog looked up for an event's
-- client.ipAddress when it was appended (platform/enrichment/), carried in the record's `hooklog-enrichment`
-- header and stored here, beside the service's own geo_* and as_* columns (which stay the event's own).
--
-- Expand only: new Nullable columns, NULL for every row written before and by the previous release (whose
-- inserts name their columns and leave these out). Folded like the other optional columns: anyLast skips NULL,
-- so a copy without enrichment never blanks one a copy had.
--
-- 037: written beside 034 (saved searches) and 036 (identity users) in the same release, and numbered after them.
ALTER TABLE {db}.events_v4
    ADD COLUMN IF NOT EXISTS enrichment_country SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    ADD COLUMN IF NOT EXISTS enrichment_city SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String))),
    ADD COLUMN IF NOT EXISTS enrichment_lat SimpleAggregateFunction(anyLast, Nullable(Float64)),
    ADD COLUMN IF NOT EXISTS enrichment_lon SimpleAggregateFunction(anyLast, Nullable(Float64)),
    ADD COLUMN IF NOT EXISTS enrichment_as_number SimpleAggregateFunction(anyLast, Nullable(UInt32)),
    ADD COLUMN IF NOT EXISTS enrichment_as_org SimpleAggregateFunction(anyLast, LowCardinality(Nullable(String)));

-- The sink's way in gets the same columns in plain types, and its view is made again so that its `*`, expanded
-- when the view is made, names them (schemas/clickhouse/README.md). While the view is missing, an insert into the
-- Null table reaches nothing and the sink's check after it fails the batch, which is offered again: held, never
-- lost. Twice is safe: the second run drops and makes the same view.
ALTER TABLE {db}.events_v4_input
    ADD COLUMN IF NOT EXISTS enrichment_country Nullable(String),
    ADD COLUMN IF NOT EXISTS enrichment_city Nullable(String),
    ADD COLUMN IF NOT EXISTS enrichment_lat Nullable(Float64),
    ADD COLUMN IF NOT EXISTS enrichment_lon Nullable(Float64),
    ADD COLUMN IF NOT EXISTS enrichment_as_number Nullable(UInt32),
    ADD COLUMN IF NOT EXISTS enrichment_as_org Nullable(String);

DROP VIEW IF EXISTS {db}.events_v4_input_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_v4_input_mv TO {db}.events_v4
AS SELECT * FROM {db}.events_v4_input;

-- `events` (032) too: its `*` was expanded when it was made. Replaced in one statement, so it is never missing;
-- the previous release reads the same columns it read, and these beside them.
CREATE OR REPLACE VIEW {db}.events AS SELECT * FROM {db}.events_v4 FINAL;
