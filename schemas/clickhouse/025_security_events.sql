-- Shared Signals events: one row per SET an org pushed to an SSF receiver
-- (receivers/ssf), from the <prefix>.security-events topic. Only verified SETs
-- reach the topic; refused ones are in `deadletter` (origin ssf-receiver).
--
-- One row per (org, issuer, jti): the transmitter never changes a SET it
-- re-sends and the receiver answers a repeated jti without appending, but a
-- repeat it forgot (restart, capacity) is appended again. The sorting key is
-- that identity, so the copies fold (ReplacingMergeTree; read with FINAL or
-- through the `security_events` view, migration 026), keeping the first copy
-- received (`keep_first` is larger for an earlier receipt). The partition is
-- the SET's own iat month, identical on every copy. A retried insert is
-- dropped by its dedup token, as for events.
--
-- event_type is the SET's first event type URI; event_name its LogEvent name
-- (e.g. security.events.caep.session_revoked), the eventType of the LogEvent
-- the receiver appended to the logs topic beside it, whose uuid is event_uuid
-- (the join key to `events`). subject_*: who the event is about (RFC 9493),
-- '' when the subject does not say. claims: the verified claims as sent;
-- set_token: the compact SET as received (re-verifiable; as sensitive as the
-- events).
CREATE TABLE IF NOT EXISTS {db}.security_events_v1
(
    org                LowCardinality(String),
    receiver_id        LowCardinality(String),
    issuer             LowCardinality(String),
    jti                String,
    event_uuid         String,
    event_type         LowCardinality(String),
    event_name         LowCardinality(String),
    event_types        Array(LowCardinality(String)),
    event_time         DateTime64(3, 'UTC'),
    issued_at          DateTime64(3, 'UTC'),
    subject_format     LowCardinality(String),
    subject_email      String,
    subject_iss        String,
    subject_sub        String,
    subject_other      String,
    session_id         String,
    txn                String,
    initiating_entity  LowCardinality(String),
    reason_admin       String,
    reason_user        String,
    claims             String CODEC(ZSTD(3)),
    set_token          String CODEC(ZSTD(3)),
    alg                LowCardinality(String),
    kid                String,
    request_id         String,
    received_at        DateTime64(3, 'UTC'),
    ingested_at        DateTime64(3, 'UTC') DEFAULT now64(3),
    keep_first         UInt64 MATERIALIZED toUInt64(10000000000000 - toUnixTimestamp64Milli(received_at))
)
ENGINE = ReplacingMergeTree(keep_first)
PARTITION BY toYYYYMM(issued_at)
ORDER BY (org, issuer, jti)
SETTINGS non_replicated_deduplication_window = 10000,
         -- As for events: the sink commits offsets once the insert returns,
         -- so the part must be on disk by then.
         fsync_after_insert = 1,
         fsync_part_directory = 1;
