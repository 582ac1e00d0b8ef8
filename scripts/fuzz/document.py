"""The OpenAPI document the fuzzer works from: the gateway's own, plus what it still leaves out.

Usage: document.py SERVED_JSON FUZZ_JSON. Copies the document served at /v1/openapi.json and
adds, only where the served document has none, the request body of POST /v1/backfill/csv: the
route parses its multipart upload itself, so fastify-swagger documents no body for it, and
without one schemathesis never sends a file and the CSV parser is never fuzzed. Says on stdout
what it added; once the gateway documents the body itself, this adds nothing. Used by
scripts/fuzz/run.sh.
"""

import json
import sys

CSV_PATH = "/v1/backfill/csv"

# As docs/api.md describes the route: multipart, one file part named `file`.
CSV_REQUEST_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {"file": {"type": "string", "format": "binary"}},
                "additionalProperties": False,
            }
        }
    },
}


def main(served_path: str, fuzz_path: str) -> None:
    with open(served_path, encoding="utf-8") as stream:
        document = json.load(stream)
    operation = document.get("paths", {}).get(CSV_PATH, {}).get("post")
    if operation is not None and "requestBody" not in operation:
        operation["requestBody"] = CSV_REQUEST_BODY
        print(f"note: the served document has no request body for POST {CSV_PATH}; fuzzing it as multipart with a file part 'file'")
    with open(fuzz_path, "w", encoding="utf-8") as stream:
        json.dump(document, stream, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
