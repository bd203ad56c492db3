"""``python -m bench.index_cost``: what our indexes cost a raw SQLite insert, vs Mastra's tables.

    uv run python -m bench.index_cost              # 1,000 rows a table, 7 interleaved repetitions
    uv run python -m bench.index_cost --rows 200 --reps 3

The peer harness's two SQLite write workloads where composite-store trailed @mastra/libsql (W1
thread creation, W5 snapshot save) each insert one row per call into a table that Mastra's
libSQL store creates with its key index only (``tests/data/mastra/libsql-1.23.1.json``, the
catalog of a file Mastra's own ``init()`` made), where ours also carries the indexes the
documented reads need at scale (a resource's threads newest first; a workflow's, a resource's
runs). W1's messages go in batches of 10 into a table with Mastra's two indexes on it, where
ours until 2026-12-07 added a third on the same (thread_id, createdAt). Here the same rows go
in with plain ``sqlite3`` in autocommit (one statement per call, no library at all), in a
fresh file per repetition, once into Mastra's tables (with the indexes its ``init()``
creates) and once into ours (as ``open_store`` creates them), interleaved: the difference is
the floor our schema sets under the library, whatever the library's own cost. Figures are
microseconds per row inserted, medians of the repetitions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from composite_store import open_store
from composite_store.records.base import iso_ms

GOLDEN = Path(__file__).parent.parent / "tests" / "data" / "mastra" / "libsql-1.23.1.json"
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)

THREAD = (
    'INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt") '
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
    '"resourceId" = excluded."resourceId", title = excluded.title, '
    'metadata = excluded.metadata, "updatedAt" = excluded."updatedAt"'
)
#: W1's message batch: ten rows in one statement, as the library sends them.
MESSAGE_ROW = "(?, ?, ?, ?, ?, ?, ?)"
MESSAGES = (
    'INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
    f"VALUES {', '.join([MESSAGE_ROW] * 10)} ON CONFLICT (id) DO UPDATE SET "
    "thread_id = excluded.thread_id, content = excluded.content, role = excluded.role, "
    'type = excluded.type, "createdAt" = excluded."createdAt", "resourceId" = excluded."resourceId"'
)
SNAPSHOT = (
    'INSERT INTO mastra_workflow_snapshot (workflow_name, run_id, "resourceId", snapshot, '
    '"createdAt", "updatedAt") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (workflow_name, run_id) '
    'DO UPDATE SET snapshot = excluded.snapshot, "updatedAt" = excluded."updatedAt"'
)


def _mastra_file(path: Path) -> None:
    tables = json.loads(GOLDEN.read_text())["tables"]
    with sqlite3.connect(path) as db:
        for name in ("mastra_threads", "mastra_messages", "mastra_workflow_snapshot"):
            db.execute(tables[name]["sql"])
            for index in tables[name]["indexes"]:
                if index["origin"] == "c":  # created by CREATE INDEX (not a key's own)
                    db.execute(_create_index(name, index))


def _create_index(table: str, index: dict[str, Any]) -> str:
    """The ``CREATE INDEX`` of one index of the golden catalog, as Mastra's ``init()`` made it:
    its uniqueness, each column's direction and a partial index's ``WHERE``."""
    unique = "UNIQUE " if index["unique"] else ""
    columns = ", ".join(
        f'"{column}"' + (" DESC" if descending else "")
        for column, descending in zip(index["columns"], index["descending"], strict=True)
    )
    where = f" WHERE {index['where']}" if index["where"] else ""
    return f'CREATE {unique}INDEX "{index["name"]}" ON "{table}" ({columns}){where}'


def _our_file(path: Path) -> None:
    async def create() -> None:
        async with open_store(f"sqlite:///{path}"):
            pass

    asyncio.run(create())


def _inserts(path: Path, rows: int, snapshot: str) -> dict[str, float]:
    """Microseconds per insert of each workload into the file at ``path``."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    found = {}
    start = time.perf_counter()
    for t in range(rows):
        stamp = iso_ms(EPOCH + timedelta(milliseconds=t))
        db.execute(
            THREAD, (f"thread-{t:06d}", f"resource-{t % 20:03d}", f"title {t}", "{}", stamp, stamp)
        )
    found["W1 thread insert"] = (time.perf_counter() - start) / rows * 1e6
    content = json.dumps({"format": 2, "parts": [{"type": "text", "text": "x" * 60}]})
    start = time.perf_counter()
    batches = max(1, rows // 10)
    for b in range(batches):
        t = b % 200
        db.execute(MESSAGES, [
            value
            for i in range(10)
            for value in (
                f"msg-{b:05d}-{i}", f"thread-{t:06d}", content, "user", "v2",
                iso_ms(EPOCH + timedelta(milliseconds=b * 10 + i)), f"resource-{t % 20:03d}",
            )
        ])
    per_message = (time.perf_counter() - start) / (batches * 10) * 1e6
    found["W1 message insert (batches of 10)"] = per_message
    start = time.perf_counter()
    for op in range(rows):
        stamp = iso_ms(datetime.now(UTC))
        db.execute(SNAPSHOT, (f"wf-{op % 5}", f"run-{op:06d}", None, snapshot, stamp, stamp))
    found["W5 snapshot insert (no resource)"] = (time.perf_counter() - start) / rows * 1e6
    db.close()
    return found


def measure(rows: int, reps: int) -> dict[str, tuple[float, float]]:
    """{workload: (median us per insert into Mastra's tables, into ours)}."""
    # About 5 KB of JSON, as the harness's snapshot template.
    snapshot = json.dumps(
        {
            "runId": "r",
            "context": {f"step-{i}": {"output": "x" * 90, "status": "success"} for i in range(40)},
        },
        separators=(",", ":"),
    )
    makers: dict[str, Callable[[Path], None]] = {"theirs": _mastra_file, "ours": _our_file}
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in makers}
    with tempfile.TemporaryDirectory() as scratch:
        for rep in range(reps):
            order = list(makers) if rep % 2 == 0 else list(reversed(makers))
            for name in order:
                path = Path(scratch) / f"{rep}-{name}.db"
                makers[name](path)
                for workload, us in _inserts(path, rows, snapshot).items():
                    samples[name].setdefault(workload, []).append(us)
    return {
        workload: (statistics.median(samples["theirs"][workload]), statistics.median(ours))
        for workload, ours in samples["ours"].items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"{args.rows} rows a table, {args.reps} interleaved repetitions, medians")
    print("| workload | Mastra's tables (us) | ours (us) | ours / Mastra's |")
    print("|---|---:|---:|---:|")
    for workload, (theirs, ours) in measure(args.rows, args.reps).items():
        print(f"| {workload} | {theirs:.1f} | {ours:.1f} | {ours / theirs:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
