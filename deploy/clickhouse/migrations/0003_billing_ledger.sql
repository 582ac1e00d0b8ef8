-- The billing ledger: closed records of what each account was charged per month, and its plan
-- changes (schemas/src/billing-ledger.ts). A copy of the Kafka topic billing.ledger, where each
-- record has its own key and is written once; the processor inserts each record as it reads
-- it. Nothing updates or deletes rows here: no TTL, a plain MergeTree, no materialized view
-- feeding it, so rebuilding usage_hourly or any rollup cannot change a closed month. A record
-- inserted twice (the copy is at least once) is the same record; readers take one row per
-- record_key.
CREATE TABLE IF NOT EXISTS billing_ledger
(
    record_key       String,
    kind             Enum8('period_closed' = 1, 'plan_changed' = 2),
    account_id       String,
    period           String,
    at               DateTime('UTC'),
    at_ms            Int64,
    plan             String,
    previous_plan    String,
    event_limit      UInt64,
    events_charged   UInt64,
    overage_refused  UInt64,
    recorded_at      DateTime('UTC'),
    recorded_at_ms   Int64
)
ENGINE = MergeTree()
ORDER BY (account_id, period, record_key);
