"""The current-engine test runner: ClickHouse's engine in-process (chdb-core, or an older chdb),
one long-lived process per test file (docs/clickhouse.md, "Current-engine tests").

Reads one request per line on stdin, a JSON object {"sql": <base64 of the statement's UTF-8
bytes>, "format": <output format>}, and answers one JSON line per request on stdout:
{"ok": true, "out": <base64 of the result bytes>} or {"ok": false, "error": <message>}.
Base64 both ways, so the exact bytes a writer sends (tabs, backslashes, any unicode) reach the
engine unchanged and the exact bytes it answers come back.

argv[1]: the session folder (MergeTree tables live there; the caller deletes it).
"""

import base64
import json
import os
import sys

from chdb import session


def main() -> None:
    # Requests come on a copy of stdin; the engine's own stdin is /dev/null, because chdb 2.x
    # reads an INSERT's data from stdin when the statement carries none of its own.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    s = session.Session(sys.argv[1])
    out = sys.stdout
    for line in requests:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            text = base64.b64decode(req["sql"]).decode("utf-8")
            res = s.query(text, req.get("format") or "TabSeparated")
            if res is not None and hasattr(res, "has_error") and res.has_error():
                raise RuntimeError(res.error_message())
            data = res.bytes() if res is not None else b""
            reply = {"ok": True, "out": base64.b64encode(data).decode("ascii")}
        except Exception as err:  # every failure goes back to the test, which decides
            reply = {"ok": False, "error": str(err)[:4000]}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
