-- requires: clickhouse >= 24.8
-- Current servers: the rollups, the billing ledger and the audit log keep their columns and
-- meanings, stored smaller (docs/clickhouse.md, "The current-server schema"): LowCardinality for
-- the columns with few distinct values (accounts, event names, plans, actions), Delta/DoubleDelta
-- + ZSTD on times, ZSTD on JSON text. In place: the types read and insert the same, so the
-- writers and readers do not change. Times keep DateTime: the exact milliseconds are already in
-- the *_ms columns, and `at` is a partition key column (its type cannot change in place).
-- The events table changes shape through `ingest clickhouse upgrade-events`, not here: it needs
-- a copy while events keep arriving (docs/clickhouse.md, "Upgrading `events` to the current shape").
ALTER TABLE usage_hourly MODIFY COLUMN account_id LowCardinality(String);
ALTER TABLE usage_hourly MODIFY COLUMN hour DateTime('UTC') CODEC(DoubleDelta, ZSTD(1));
ALTER TABLE events_daily MODIFY COLUMN account_id LowCardinality(String);
ALTER TABLE events_daily MODIFY COLUMN event_name LowCardinality(String);
ALTER TABLE billing_ledger MODIFY COLUMN account_id LowCardinality(String);
ALTER TABLE billing_ledger MODIFY COLUMN period LowCardinality(String);
ALTER TABLE billing_ledger MODIFY COLUMN plan LowCardinality(String);
ALTER TABLE billing_ledger MODIFY COLUMN previous_plan LowCardinality(String);
ALTER TABLE billing_ledger MODIFY COLUMN at DateTime('UTC') CODEC(Delta, ZSTD(1));
ALTER TABLE billing_ledger MODIFY COLUMN recorded_at DateTime('UTC') CODEC(Delta, ZSTD(1));
ALTER TABLE audit_log MODIFY COLUMN account_id LowCardinality(String);
ALTER TABLE audit_log MODIFY COLUMN actor_type LowCardinality(String);
ALTER TABLE audit_log MODIFY COLUMN actor_role LowCardinality(String);
ALTER TABLE audit_log MODIFY COLUMN action LowCardinality(String);
ALTER TABLE audit_log MODIFY COLUMN at DateTime('UTC') CODEC(Delta, ZSTD(1));
ALTER TABLE audit_log MODIFY COLUMN at_ms Int64 CODEC(Delta, ZSTD(1));
ALTER TABLE audit_log MODIFY COLUMN before_json String CODEC(ZSTD(3));
ALTER TABLE audit_log MODIFY COLUMN after_json String CODEC(ZSTD(3));
