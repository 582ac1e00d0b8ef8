"""What the fuzzing step exercised: test cases and response status codes per operation.

Usage: summary.py OPENAPI_JSON GATEWAY_LOG EVENTS_NDJSON... (the NDJSON event streams that
schemathesis writes with --report ndjson). Prints one line per documented operation, so that a
passing run also shows how many cases reached the API's core logic (2xx) and how many were
refused (4xx); requests with methods the document does not list for a path are summed up in one
line. Then the errors the gateway logged, one entry per distinct message with the first stack
(a 500's stack is logged under its requestId). Used by scripts/fuzz/run.sh.
"""

import json
import sys
from collections import Counter, defaultdict


def documented_operations(openapi_path: str) -> set[str]:
    with open(openapi_path, encoding="utf-8") as stream:
        document = json.load(stream)
    return {f"{method.upper()} {path}" for path, item in document.get("paths", {}).items() for method in item}


def print_logged_errors(log_path: str) -> None:
    first: dict[str, dict] = {}
    counts: Counter[str] = Counter()
    with open(log_path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if '"level":"error"' not in line and '"level":"fatal"' not in line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            err = entry.get("err") or {}
            message = f"{entry.get('msg', '')}: {err.get('message', '')}".strip(": ")
            counts[message] += 1
            first.setdefault(message, entry)
    if not counts:
        return
    print(f"\nThe service logged {sum(counts.values())} error(s) ({log_path}):")
    for message, count in counts.most_common():
        entry = first[message]
        stack = ((entry.get("err") or {}).get("stack") or "").splitlines()[1:7]
        print(f"  {count} x {message} (first: requestId {entry.get('reqId', '-')})")
        for frame in stack:
            print(f"      {frame.strip()}")


def main(openapi_path: str, log_path: str, paths: list[str]) -> None:
    documented = documented_operations(openapi_path)
    cases: Counter[str] = Counter()
    statuses: defaultdict[str, Counter[int]] = defaultdict(Counter)
    for path in paths:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                event = json.loads(line)
                finished = event.get("ScenarioFinished")
                if finished is None:
                    continue
                recorder = finished["recorder"]
                for case_id, case in recorder.get("cases", {}).items():
                    value = case["value"]
                    operation = f"{value['method']} {value['path']}"
                    if operation not in documented:
                        operation = "(methods not in the document)"
                    cases[operation] += 1
                    interaction = recorder.get("interactions", {}).get(case_id)
                    response = (interaction or {}).get("response")
                    if response is not None:
                        statuses[operation][response["status_code"]] += 1
    if not cases:
        print("no test cases recorded")
        print_logged_errors(log_path)
        return
    width = max(len(op) for op in cases)
    print(f"{'operation'.ljust(width)}  {'cases':>6}  {'5xx':>4}  responses by status")
    # By path, then method; the undocumented methods last.
    for operation in sorted(cases, key=lambda op: (op not in documented, op.split(" ", 1)[-1], op)):
        seen = statuses[operation]
        server_errors = sum(n for status, n in seen.items() if status >= 500)
        by_status = " ".join(f"{status}:{n}" for status, n in sorted(seen.items()))
        print(f"{operation.ljust(width)}  {cases[operation]:>6}  {server_errors:>4}  {by_status}")
    print(f"{'total'.ljust(width)}  {sum(cases.values()):>6}")
    print_logged_errors(log_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
