-- The Shared Signals events, each SET once: `security_events_v1` (migration
-- 025) read with FINAL, as the `events` view reads the events table, so
-- ad-hoc SQL and joins with `events` count a SET re-sent or re-appended once.
-- CREATE OR REPLACE is safe to run twice.
CREATE OR REPLACE VIEW {db}.security_events AS
SELECT * FROM {db}.security_events_v1 FINAL;
