-- Arrivals written by ClickHouse: one `arrivals` row (010) for every row written into events_v3 that came by a
-- delivery path, so a sink batch is one insert (into events_v3_input, 013) instead of two.
--
-- Until now the sink wrote arrivals itself, as a second insert of the same batch encoded a second time (its
-- dedup token the batch's plus `-arrivals`). Every column here is already in the events row: path is the
-- record's `hooklog-source` header as sent (hook, system-log, backfill, ssf, ...), and a record without one
-- has no arrivals row; first_received is the row's received_at; each row is one copy. This view is the one
-- place that mapping is stated (the sink gives an events table of its own the same view, made from this
-- statement: consumers/clickhouse-sink/events-input.ts).
--
-- Why on events_v3 and not beside events_v3_input_mv on the Null input table: ClickHouse writes a table's
-- block before it runs the views on that table, so a block events_v3 refuses (a CHECK constraint, a column an
-- operator narrowed) reaches no arrivals either; the sink then bisects it and the halves that land bring
-- their arrivals once. Two views on one Null table run in an order ClickHouse does not promise (an unordered
-- set: on chdb 26.7 the order the views were created in, so recreating events_v3_input_mv, as a migration
-- adding a column does, would put arrivals first); there, the refused whole block's arrivals would be written
-- and the halves' again: copies counted twice, and the refused rows counted.
--
-- Exactly once: a replayed batch carries its dedup token, and with deduplicate_blocks_in_dependent_materialized_views
-- (set by the sink on every insert, platform/store/store.ts) each table a view writes drops the repeat, this one
-- too. `copies` is a sum, so this is what keeps it right.
--
-- Every insert into events_v3 now counts as an arrival (rows whose source is ''  excepted). The sink is the
-- only writer of events_v3 in hooklog; an operator copying rows into it by hand adds their arrivals. A new
-- events table version gets its own view like this one, created after any copy of older rows into it.
--
-- Upgrading: stop every hooklog of an earlier version before starting this one (the earlier sink writes its
-- own arrivals insert, and beside this view each of its batches would count twice), and stop them with
-- SIGTERM, not kill -9: a batch an earlier sink inserted without committing is inserted again here, and its
-- arrivals carried another token then, so they would count twice.
--
-- Safe to run twice or concurrently: IF NOT EXISTS.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_v3_arrivals_mv TO {db}.arrivals
AS SELECT org, event_type, published, uuid, source AS path, received_at AS first_received, 1 AS copies, hook_id
FROM {db}.events_v3
WHERE source != '';
