"""What each exact way of counting events costs (docs/data-guide.md, "Deduplication: when a count
is exact"): a measurement outside `npm test`, on the migrations' own tables.

    bash scripts/chdb/install.sh
    .local/chdb/chdb-core-26.9.0/bin/python bench/chdb/dedup-costs.py [rows] [clickhouse-url]

Creates `events` and its rollups from deploy/clickhouse/migrations/0001 and 0002 in a fresh chdb
session (ClickHouse 26.9) and, when a URL is given (e.g. the local stack's 18.16,
http://127.0.0.1:8123), in a database `bench_dedup_<pid>` there, which it drops at the end.
Inserts `rows` events (200 accounts, 12 event names, 2,000 people, a month) and again one in 19
as redelivered copies in a second insert, without merging, then times "events per name" each way
(and distinct people per name), for one account and for all: median of 5 runs. It prints whether
the exact ways agree and whether the plain count() differs from them.
"""

import os
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from chdb import session

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
SERVER = sys.argv[2] if len(sys.argv) > 2 else None
ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = [ROOT / "deploy/clickhouse/migrations/0001_events.sql", ROOT / "deploy/clickhouse/migrations/0002_rollups.sql"]

# 18.16-safe SQL only (no generateUUIDv4, no DateTime64): the same statement on both engines.
ROW = """SELECT concat('acc_', toString(number % 200)) AS account_id, concat('evt-', toString(number)) AS event_id,
  concat('Event ', toString(cityHash64(number, 5) % 12)) AS event_name,
  concat('person', toString(cityHash64(number, 6) % 2000), '@company', toString(cityHash64(number, 6) % 300), '.example') AS email,
  concat('company', toString(cityHash64(number, 6) % 300), '.example') AS domain,
  toDateTime('2026-10-01 00:00:00', 'UTC') + intDiv(number * 2593, 1000) AS event_time,
  toInt64(toUInt32(event_time)) * 1000 AS event_time_ms, event_time AS received_at, event_time_ms AS received_at_ms,
  concat('{{"plan":"', ['free','pro','growth'][number % 3 + 1], '"}}') AS properties, 'api' AS source, '' AS job_id,
  toDateTime('{inserted}', 'UTC') AS inserted_at
FROM numbers({rows}) {where}"""

WAYS = {
    "count(), no FINAL (not exact)": "SELECT event_name, count() FROM events {where} GROUP BY event_name ORDER BY event_name",
    "count() FROM events FINAL": "SELECT event_name, count() FROM events FINAL {where} GROUP BY event_name ORDER BY event_name",
    "count() FROM events_dedup": "SELECT event_name, count() FROM events_dedup {where} GROUP BY event_name ORDER BY event_name",
    "uniqExact(event_id)": "SELECT event_name, uniqExact(event_id) FROM events {where} GROUP BY event_name ORDER BY event_name",
    "argMax(...) GROUP BY event_id": (
        "SELECT name, count() FROM (SELECT event_id, argMax(event_name, inserted_at) AS name FROM events "
        "{where} GROUP BY event_id) GROUP BY name ORDER BY name"
    ),
    "uniqExactMerge on events_daily": "SELECT event_name, uniqExactMerge(events) FROM events_daily {where} GROUP BY event_name ORDER BY event_name",
}
# Distinct people: what a rollup is for (few distinct values per day, many rows).
PEOPLE = {
    "uniqExact(email) on events": "SELECT event_name, uniqExact(email) FROM events {where} GROUP BY event_name ORDER BY event_name",
    "uniqExactIfMerge(contacts), rollup": "SELECT event_name, uniqExactIfMerge(contacts) FROM events_daily {where} GROUP BY event_name ORDER BY event_name",
}
SCOPES = {"one account (acc_7, 1/200 of the rows)": "WHERE account_id = 'acc_7'", "all accounts": ""}


def statements() -> list[str]:
    out = []
    for path in MIGRATIONS:
        text = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("--"))
        out += [s.strip() for s in text.split(";") if s.strip()]
    return out


def chdb_runner():
    s = session.Session(tempfile.mkdtemp(prefix="chdb-dedup-"))
    s.query("CREATE DATABASE IF NOT EXISTS bench")
    s.query("USE bench")
    return lambda sql: s.query(sql, "TSV").bytes().decode(), lambda: None


def http_runner(url: str):
    database = f"bench_dedup_{os.getpid()}"

    def run(sql: str, db: str | None = database) -> str:
        query = urllib.parse.urlencode({"database": db} if db else {})
        with urllib.request.urlopen(urllib.request.Request(f"{url}/?{query}", data=sql.encode()), timeout=600) as r:
            return r.read().decode()

    run(f"CREATE DATABASE {database}", None)
    return run, lambda: run(f"DROP DATABASE {database}", None)


def measure(name: str, run) -> None:
    print(f"\n{name}: ClickHouse {run('SELECT version()').strip()}, {ROWS:,} rows + 1 in 19 redelivered")
    for sql in statements():
        run(sql)
    t0 = time.perf_counter()
    run(f"INSERT INTO events {ROW.format(rows=ROWS, where='', inserted='2026-11-20 00:00:00')}")
    run(f"INSERT INTO events {ROW.format(rows=ROWS, where='WHERE number % 19 = 0', inserted='2026-11-21 00:00:00')}")
    print(f"  insert (with the rollups' views) {time.perf_counter() - t0:6.2f} s")
    for scope, where in SCOPES.items():
        print(f"  events per name, {scope}: median of 5")
        answers = {}
        for title, sql in {**WAYS, **PEOPLE}.items():
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                answers[title] = run(sql.format(where=where))
                runs.append(time.perf_counter() - t0)
            print(f"    {title:<34} {statistics.median(runs) * 1000:8.1f} ms")
        exact = {a for t, a in answers.items() if "not exact" not in t and t in WAYS}
        print(f"    distinct people, both ways agree: {len({answers[t] for t in PEOPLE}) == 1}")
        print(f"    the exact ways agree: {len(exact) == 1}; count() without FINAL differs: {answers[next(iter(WAYS))] not in exact}")


def main() -> None:
    run, close = chdb_runner()
    measure("chdb-core", run)
    close()
    if SERVER:
        run, close = http_runner(SERVER)
        try:
            measure(SERVER, run)
        finally:
            close()


if __name__ == "__main__":
    main()
