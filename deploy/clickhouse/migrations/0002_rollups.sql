-- Exact aggregates kept up to date by materialized views on `events`. They count distinct
-- event ids (uniqExact states), so a redelivered copy of an event, inserted twice before the
-- ReplacingMergeTree merges it away, is still counted once.

-- Metering: unique events per account and UTC hour of receipt. Merging the states of a month's
-- hours gives the exact number of unique events of the month (the allowance period); the
-- hourly grain lets the allowance reconciler count "everything received before hour T".
CREATE TABLE IF NOT EXISTS usage_hourly
(
    account_id  String,
    hour        DateTime('UTC'),
    events      AggregateFunction(uniqExact, String)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(hour)
ORDER BY (account_id, hour);

CREATE MATERIALIZED VIEW IF NOT EXISTS usage_hourly_mv TO usage_hourly AS
SELECT
    account_id,
    toStartOfHour(received_at) AS hour,
    uniqExactState(event_id) AS events
FROM events
GROUP BY account_id, hour;

-- For data engineers: events and distinct people/companies per account, day and event name
-- (an event without an email does not count as a contact; likewise for domains).
CREATE TABLE IF NOT EXISTS events_daily
(
    account_id  String,
    day         Date,
    event_name  String,
    events      AggregateFunction(uniqExact, String),
    contacts    AggregateFunction(uniqExactIf, String, UInt8),
    companies   AggregateFunction(uniqExactIf, String, UInt8)
)
ENGINE = AggregatingMergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (account_id, day, event_name);

CREATE MATERIALIZED VIEW IF NOT EXISTS events_daily_mv TO events_daily AS
SELECT
    account_id,
    toDate(event_time) AS day,
    event_name,
    uniqExactState(event_id) AS events,
    uniqExactIfState(email, email != '') AS contacts,
    uniqExactIfState(domain, domain != '') AS companies
FROM events
GROUP BY account_id, day, event_name;
