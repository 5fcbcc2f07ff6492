-- One event, one row: the sink now lower-cases uuids (consumers/clickhouse-sink/rows.ts),
-- so rows written before with upper-case letters in their uuid are re-keyed the same
-- way, keeping every row: first a lower-cased copy of each such row (it folds with
-- any lower-case copy of the same event in the ReplacingMergeTree), then the
-- upper-case originals go. `raw` keeps the JSON as received.
--
-- Columns are listed (chdb 26.7 inserted nothing for `SELECT * REPLACE` into the same table);
-- no insert dedup, so a re-run's copies are written and fold rather than vanish.
-- Safe to run twice: a second run finds no upper-case uuid; one that died between
-- the two statements copies again (the copies fold) and then deletes.
INSERT INTO {db}.events_v2
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
    org, lower(uuid), published, event_type, version, severity, display_message, legacy_event_type,
    actor_id, actor_type, actor_alternate_id, actor_display_name, client_ip, client_user_agent,
    client_browser, client_os, client_zone, client_device, geo_country, geo_state, geo_city,
    geo_postal_code, geo_lat, geo_lon, as_number, as_org, is_proxy, outcome_result, outcome_reason,
    target_id, target_type, target_alternate_id, target_display_name, transaction_id,
    transaction_type, external_session_id, root_session_id, raw, source, hook_id, delivery_id,
    received_at, ingested_at
FROM {db}.events_v2
WHERE uuid != lower(uuid)
SETTINGS insert_deduplicate = 0;

ALTER TABLE {db}.events_v2 DELETE WHERE uuid != lower(uuid) SETTINGS mutations_sync = 2;
