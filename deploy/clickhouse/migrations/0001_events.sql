-- The events table, one row per accepted event, for data engineers.
--
-- Works on ClickHouse 18.16 and current versions (see docs/clickhouse.md):
-- no DateTime64 (milliseconds live in *_ms epoch columns), no Map/JSON (properties are a JSON
-- string, read with visitParamExtract* on 18.16 or JSONExtract* on current servers).
--
-- ReplacingMergeTree removes redelivered copies of an event in the background; every copy of
-- an event carries identical values for the sorting key, so the key (account_id, day, name,
-- event_id) identifies it. Read with FINAL (or the events_dedup view) for exact counts.
CREATE TABLE IF NOT EXISTS events
(
    account_id      String,
    event_id        String,
    event_name      String,
    email           String,
    domain          String,
    event_time      DateTime('UTC'),
    event_time_ms   Int64,
    received_at     DateTime('UTC'),
    received_at_ms  Int64,
    properties      String,
    source          Enum8('api' = 1, 'bulk' = 2, 'csv' = 3),
    job_id          String,
    inserted_at     DateTime('UTC')
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(event_time)
ORDER BY (account_id, toDate(event_time), event_name, event_id);

-- Deduplicated reads without remembering FINAL.
CREATE VIEW IF NOT EXISTS events_dedup AS
SELECT * FROM events FINAL;
