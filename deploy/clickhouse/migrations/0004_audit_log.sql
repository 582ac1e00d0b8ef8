-- The audit log: every state change made by an admin (admin API, CLI) or a dashboard owner:
-- who (actor, actor_type, actor_role), what (action, target, before_json/after_json without
-- secrets), when (at, at_ms), from where (ip, request_id). A copy of the Kafka topic audit.log
-- (not compacted); the processor inserts each record as it reads it. Append-only: no TTL, a
-- plain MergeTree, nothing updates or deletes rows. A record inserted twice (the copy is at
-- least once) has the same id; readers take one row per id.
CREATE TABLE IF NOT EXISTS audit_log
(
    id           String,
    at           DateTime('UTC'),
    at_ms        Int64,
    account_id   String,
    actor_type   String,
    actor        String,
    actor_role   String,
    action       String,
    target       String,
    ip           String,
    request_id   String,
    before_json  String,
    after_json   String
)
ENGINE = MergeTree()
PARTITION BY toYYYYMM(at)
ORDER BY (account_id, at_ms, id);
