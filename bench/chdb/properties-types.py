"""How to store event properties on a current server: a measurement on 1,000,000 realistic
events in ClickHouse's own engine (chdb-core), outside `npm test` (docs/clickhouse.md, "Event
properties on current servers: measured").

    bash scripts/chdb/install.sh
    .local/chdb/chdb-core-26.9.0/bin/python bench/chdb/properties-types.py [rows]

Three tables with the same rows, differing only in how the properties are kept:
  string  properties String (the JSON text; what 18.16 has), read with JSONExtract*
  json    properties JSON (typed paths, read as properties.plan)
  map     properties_map Map(String, String) beside the raw text properties String
  jsonraw properties_json JSON beside the raw text properties String
Prints bytes on disk per table and per properties column, and the median of 5 runs of three
typical queries. The rows: 200 accounts, 12 event names, 2,000 people, 8-12 properties each
(plan, url, referrer, utm_source, browser, amount as a number, a per-event id, sometimes extras).
"""

import statistics
import sys
import tempfile
import time

from chdb import session

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000

PROPS = """concat('{"plan":"', ['free','pro','growth'][number % 3 + 1],
  '","url":"/docs/page-', toString(cityHash64(number, 1) % 5000),
  '","referrer":"https://', ['google.com','news.ycombinator.com','twitter.com','example.org'][number % 4 + 1], '/',
  '","utm_source":"', ['newsletter','ads','organic','partner','social'][cityHash64(number, 2) % 5 + 1],
  '","browser":"', ['Chrome','Firefox','Safari','Edge'][cityHash64(number, 3) % 4 + 1],
  '","amount":', toString(cityHash64(number, 4) % 10000 / 100),
  ',"request_id":"', toString(generateUUIDv4(number)), '"',
  if(number % 4 = 0, concat(',"coupon":"C', toString(number % 97), '","trial_days":', toString(number % 30)), ''),
  '}')"""

COMMON = """account_id LowCardinality(String),
    event_id String CODEC(ZSTD(3)),
    event_name LowCardinality(String),
    email String CODEC(ZSTD(3)),
    event_time DateTime64(3, 'UTC') CODEC(Delta, ZSTD(3))"""

TABLES = {
    "string": "properties String CODEC(ZSTD(3))",
    "json": "properties JSON",
    "map": "properties String CODEC(ZSTD(3)), properties_map Map(LowCardinality(String), String) CODEC(ZSTD(3))",
    "jsonraw": "properties String CODEC(ZSTD(3)), properties_json JSON",
}

SOURCE = f"""SELECT concat('acc_', toString(number % 200)) AS account_id, toString(generateUUIDv4(number)) AS event_id,
  concat('Event ', toString(cityHash64(number, 5) % 12)) AS event_name,
  concat('person', toString(cityHash64(number, 6) % 2000), '@company', toString(cityHash64(number, 6) % 300), '.example') AS email,
  toDateTime64('2026-10-01 00:00:00', 3, 'UTC') + toIntervalMillisecond(number * 2593) AS event_time,
  {PROPS} AS props FROM numbers({ROWS})"""

INSERT = {
    "string": "SELECT account_id, event_id, event_name, email, event_time, props FROM src",
    "json": "SELECT account_id, event_id, event_name, email, event_time, props::JSON FROM src",
    "map": "SELECT account_id, event_id, event_name, email, event_time, props, JSONExtract(props, 'Map(String, String)') FROM src",
    "jsonraw": "SELECT account_id, event_id, event_name, email, event_time, props, props::JSON FROM src",
}

QUERIES = {
    "events per plan, one account": {
        "string": "SELECT JSONExtractString(properties, 'plan') AS plan, count() FROM t_string WHERE account_id = 'acc_7' GROUP BY plan ORDER BY plan",
        "json": "SELECT properties.plan::String AS plan, count() FROM t_json WHERE account_id = 'acc_7' GROUP BY plan ORDER BY plan",
        "map": "SELECT properties_map['plan'] AS plan, count() FROM t_map WHERE account_id = 'acc_7' GROUP BY plan ORDER BY plan",
        "jsonraw": "SELECT properties_json.plan::String AS plan, count() FROM t_jsonraw WHERE account_id = 'acc_7' GROUP BY plan ORDER BY plan",
    },
    "events of one url, all accounts": {
        "string": "SELECT count() FROM t_string WHERE JSONExtractString(properties, 'url') = '/docs/page-42'",
        "json": "SELECT count() FROM t_json WHERE properties.url::String = '/docs/page-42'",
        "map": "SELECT count() FROM t_map WHERE properties_map['url'] = '/docs/page-42'",
        "jsonraw": "SELECT count() FROM t_jsonraw WHERE properties_json.url::String = '/docs/page-42'",
    },
    "sum(amount) by utm_source, all accounts": {
        "string": "SELECT JSONExtractString(properties, 'utm_source') AS s, round(sum(JSONExtractFloat(properties, 'amount')), 2) FROM t_string GROUP BY s ORDER BY s",
        "json": "SELECT properties.utm_source::String AS s, round(sum(properties.amount::Float64), 2) FROM t_json GROUP BY s ORDER BY s",
        "map": "SELECT properties_map['utm_source'] AS s, round(sum(toFloat64OrZero(properties_map['amount'])), 2) FROM t_map GROUP BY s ORDER BY s",
        "jsonraw": "SELECT properties_json.utm_source::String AS s, round(sum(properties_json.amount::Float64), 2) FROM t_jsonraw GROUP BY s ORDER BY s",
    },
}


def main() -> None:
    s = session.Session(tempfile.mkdtemp(prefix="chdb-props-"))
    print(f"ClickHouse {s.query('SELECT version()', 'TSV').bytes().decode().strip()} (chdb), {ROWS:,} rows")
    s.query(f"CREATE TABLE src ENGINE = MergeTree ORDER BY tuple() AS {SOURCE}")
    for kind, columns in TABLES.items():
        s.query(
            f"CREATE TABLE t_{kind} ({COMMON}, {columns}) ENGINE = MergeTree PARTITION BY toYYYYMM(event_time) "
            "ORDER BY (account_id, toDate(event_time), event_name, event_id)"
        )
        t0 = time.perf_counter()
        s.query(f"INSERT INTO t_{kind} {INSERT[kind]}")
        s.query(f"OPTIMIZE TABLE t_{kind} FINAL")
        print(f"  {kind:<7} insert + merge {time.perf_counter() - t0:6.2f} s")
    print("\nbytes on disk (compressed / uncompressed):")
    for kind in TABLES:
        total = s.query(
            f"SELECT formatReadableSize(sum(bytes_on_disk)) FROM system.parts WHERE active AND table = 't_{kind}'", "TSV"
        ).bytes().decode().strip()
        props = s.query(
            f"SELECT formatReadableSize(sum(data_compressed_bytes)), formatReadableSize(sum(data_uncompressed_bytes)) "
            f"FROM system.columns WHERE table = 't_{kind}' AND name LIKE 'properties%'",
            "TSV",
        ).bytes().decode().strip().replace("\t", " / ")
        print(f"  {kind:<7} table {total:>10}   properties columns {props}")
    print("\nquery time, median of 5 (the answers are checked equal):")
    for title, by_kind in QUERIES.items():
        answers = {}
        line = []
        for kind, q in by_kind.items():
            runs = []
            for _ in range(5):
                t0 = time.perf_counter()
                answers[kind] = s.query(q, "TSV").bytes()
                runs.append(time.perf_counter() - t0)
            line.append(f"{kind} {statistics.median(runs) * 1000:7.1f} ms")
        same = len(set(answers.values())) == 1
        print(f"  {title:<42} {'   '.join(line)}{'' if same else '   ANSWERS DIFFER'}")


if __name__ == "__main__":
    main()
