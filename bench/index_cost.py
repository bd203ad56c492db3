"""``python -m bench.index_cost``: what our indexes cost a raw SQLite insert, vs Mastra's tables.

    uv run python -m bench.index_cost              # 1,000 rows a table, 7 interleaved repetitions
    uv run python -m bench.index_cost --rows 200 --reps 3

The peer harness's two SQLite write workloads where composite-store trails @mastra/libsql (W1
thread creation, W5 snapshot save) each insert one row per call into a table that Mastra's
libSQL store creates with its key index only (``tests/data/mastra/libsql-1.23.1.json``, the
catalog of a file Mastra's own ``init()`` made), where ours also carries the indexes the
documented reads need at scale (a resource's threads newest first; a workflow's, a resource's
runs). Here the same rows go in with plain ``sqlite3`` in autocommit (one statement per call,
no library at all), in a fresh file per repetition, once into Mastra's tables and once into
ours (as ``open_store`` creates them), interleaved: the difference is the floor our schema sets
under the library, whatever the library's own cost. Figures are microseconds per insert,
medians of the repetitions.
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
SNAPSHOT = (
    'INSERT INTO mastra_workflow_snapshot (workflow_name, run_id, "resourceId", snapshot, '
    '"createdAt", "updatedAt") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (workflow_name, run_id) '
    'DO UPDATE SET snapshot = excluded.snapshot, "updatedAt" = excluded."updatedAt"'
)


def _mastra_file(path: Path) -> None:
    tables = json.loads(GOLDEN.read_text())["tables"]
    with sqlite3.connect(path) as db:
        for name in ("mastra_threads", "mastra_workflow_snapshot"):
            db.execute(tables[name]["sql"])


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
