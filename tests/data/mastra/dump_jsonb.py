"""Dump the JSONB blobs Mastra wrote (``make_dbs.mjs libsql-sample``) with their JSON text.

    python tests/data/mastra/dump_jsonb.py FILE > libsql-1.23.1-jsonb.json

For every BLOB in a JSON column of the sample rows: the table, column, row key, the blob as
hex, and the JSON text the libSQL engine's own ``json()`` (SQLite 3.45) makes of it. The
tests decode the blobs without the engine and compare with that text.
"""

from __future__ import annotations

import json
import sys

#: (table, key column, JSON columns) of the rows the sample writes.
SAMPLED = (
    ("mastra_threads", "id", ("metadata",)),
    ("mastra_resources", "id", ("metadata",)),
    ("mastra_workflow_snapshot", "run_id", ("snapshot",)),
    ("mastra_messages", "id", ("content",)),
)


def main(path: str) -> int:
    import libsql

    conn = libsql.connect(path)
    found = []
    for table, key, columns in SAMPLED:
        for column in columns:
            rows = conn.execute(
                f'SELECT "{key}", hex("{column}"), json("{column}") FROM "{table}" '
                f"WHERE typeof(\"{column}\") = 'blob' ORDER BY 1"
            ).fetchall()
            found += [
                {"table": table, "column": column, "key": k, "jsonb": blob, "json": text}
                for k, blob, text in rows
            ]
    json.dump({"engine": "libSQL (SQLite 3.45) as @mastra/libsql 1.23.1 wrote it",
               "blobs": found}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
