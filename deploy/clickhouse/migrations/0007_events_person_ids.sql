-- The Segment-compatible intake's columns on the legacy `events` (docs/segment.md, "What maps
-- where"): `user_id` and `anonymous_id` (Segment `userId` / `anonymousId`) and `context` (its JSON
-- text), each '' when the event has none. The current shape (events-upgrade.ts) has had them from
-- the start, so on an upgraded table these ALTERs add nothing.
--
-- `IF NOT EXISTS`: 18.16 refuses it for columns (a syntax error), so the migration runner checks
-- system.columns itself and sends the statement without it there (migrations.ts). One column per
-- statement, so a run stopped half-way is finished by the next. AFTER keeps `SELECT *` in the
-- current shape's order. Plain String: an insert that does not name them (a processor of the
-- previous release, whose writer names its columns) stores '' in them on every server.
ALTER TABLE events ADD COLUMN IF NOT EXISTS user_id String AFTER job_id;
ALTER TABLE events ADD COLUMN IF NOT EXISTS anonymous_id String AFTER user_id;
ALTER TABLE events ADD COLUMN IF NOT EXISTS context String AFTER anonymous_id;

-- events_dedup again: a view made with `SELECT *` keeps the columns the table had when it was
-- made (on 18.16 and on current servers alike: a new column is an unknown identifier there), so it
-- is made again. The columns are named: the same list reads both shapes (event_time_ms and
-- received_at_ms are ALIAS columns of the current shape, left out of `*`), so this view is also
-- what events-upgrade.ts makes after its switch.
DROP TABLE IF EXISTS events_dedup;
CREATE VIEW IF NOT EXISTS events_dedup AS
SELECT account_id, event_id, event_name, email, domain, event_time, event_time_ms, received_at, received_at_ms,
    properties, source, job_id, user_id, anonymous_id, context, inserted_at
FROM events FINAL;
