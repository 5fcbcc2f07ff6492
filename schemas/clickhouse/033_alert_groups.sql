-- Grouped alerts (consumers/alerting/grouping/groups.ts): a rule with `dedup`
-- or `dedup_period` makes one alert per group and period, published again as
-- findings join it, with the same alert_id and event_time (the opening
-- finding's), so its revisions fold into one row (ReplacingMergeTree, the
-- latest inserted wins). Expand only: rows written before, and rows a
-- previous release's output writes, take the defaults of one finding.
--   revision         0 for the opening record, n for the n-th update
--   finding_count    findings in the alert (event_count: the events behind them)
--   last_event_time  its latest event (event_time stays the opening finding's)
--   group_until      end of its period: later findings open a new alert (NULL: not grouped)
--   dedup            the text of the rule's `dedup` expression, bounded ('' when it has none)
ALTER TABLE {db}.alerts ADD COLUMN IF NOT EXISTS revision UInt32 DEFAULT 0;
ALTER TABLE {db}.alerts ADD COLUMN IF NOT EXISTS finding_count UInt32 DEFAULT 1;
ALTER TABLE {db}.alerts ADD COLUMN IF NOT EXISTS last_event_time DateTime64(3, 'UTC') DEFAULT event_time;
ALTER TABLE {db}.alerts ADD COLUMN IF NOT EXISTS group_until Nullable(DateTime64(3, 'UTC'));
ALTER TABLE {db}.alerts ADD COLUMN IF NOT EXISTS dedup String DEFAULT '';
