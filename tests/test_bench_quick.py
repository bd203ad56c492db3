"""The benchmark harness cannot rot: one tiny run on SQLite, library against raw sqlite3, and
the raw baseline still stores exactly what the library stores.

No timing is asserted (CI machines are noisy); the run must produce a row for every workload,
with positive finite rates and ratios, and render as Markdown.
"""

from __future__ import annotations

import asyncio
import math
import sqlite3
from pathlib import Path

import pytest

from bench import workloads as w
from bench.__main__ import WORKLOADS, markdown, run, verdicts
from bench.verify import verify

TINY = w.Sizes(
    threads=4,
    messages_per_thread=25,
    batch=5,
    reads=8,
    page_threads=20,
    page_size=10,
    page_passes=1,
    wm_ops=10,
    snapshots=5,
    traces=3,
    spans_per_trace=3,
    long_thread=200,
    long_reads=5,
    concurrency=4,
)


def test_quick_run_on_sqlite_reports_every_workload() -> None:
    report = run(["sqlite"], TINY, reps=1)

    assert report.skipped == {} and report.failed == {}
    rows = {r["workload"]: r for r in report.rows}
    assert set(rows) == {*WORKLOADS, "W2L (library)", "W2L (raw)"}
    for row in report.rows:
        assert row["backend"] == "sqlite"
        for key in ("library_ops_s", "raw_ops_s", "ratio"):
            assert row[key] > 0 and math.isfinite(row[key]), (row["workload"], key, row[key])
    assert rows["W1"]["target"] == 0.5 and rows["W2"]["target"] == 0.3
    table = markdown(report.rows)
    assert all(f"| sqlite | {name} |" in table for name in rows)
    [summary] = verdicts(report.rows)
    assert summary.startswith("sqlite: batch min ") and "point min " in summary


def test_raw_sqlite_stores_exactly_what_the_library_stores() -> None:
    # The raw baseline restates the layout by hand; bench.verify catches drift.
    assert asyncio.run(verify("sqlite")) == []


@pytest.mark.parametrize("backend", ["postgres", "mariadb"])
def test_raw_server_contenders_store_and_read_what_the_library_does(backend: str) -> None:
    # The servers' raw contenders read W2i differently (one statement on PostgreSQL, two on
    # MariaDB), as the library does on each.
    try:
        problems = asyncio.run(verify(backend))
    except ConnectionError as unreachable:
        pytest.skip(f"{backend} unreachable: {unreachable}")
    assert problems == []


def test_bulk_quick_run_on_sqlite_reports_both_workloads() -> None:
    # bench.bulk at a CI size: the per_page=False read (time, memory) and the copy, each
    # with a library and a raw figure; the memory figure may be 0 at this size.
    from bench import bulk

    rows = asyncio.run(bulk.run(["sqlite"], messages=300, reps=1))
    assert [(r.workload, r.unit) for r in rows] == [
        ("list all (per_page=False)", "s"),
        ("list all (per_page=False)", "MiB"),
        ("copy from SQLite", "rows/s"),
    ]
    for row in rows:
        assert len(row.library) == len(row.raw) == 1
        assert all(v >= 0 and math.isfinite(v) for v in (*row.library, *row.raw))
    assert rows[0].library[0] > 0 and rows[2].library[0] > 0 and rows[2].raw[0] > 0
    assert "| sqlite | copy from SQLite | rows/s |" in bulk.markdown(rows)


def test_index_cost_inserts_into_both_schemas(tmp_path: Path) -> None:
    # bench.index_cost at a CI size: Mastra's tables are the golden catalog's (with the
    # indexes its init() creates), ours carry the read indexes; both take every row.
    from bench import index_cost

    mastra, ours = tmp_path / "mastra.db", tmp_path / "ours.db"
    index_cost._mastra_file(mastra)
    index_cost._our_file(ours)
    for path in (mastra, ours):
        index_cost._inserts(path, 5, "{}")
    with sqlite3.connect(mastra) as a, sqlite3.connect(ours) as b:
        for table, rows in (
            ("mastra_threads", 5), ("mastra_workflow_snapshot", 5), ("mastra_messages", 10)
        ):
            assert a.execute(f"SELECT count(*) FROM {table}").fetchone() == (rows,)
            assert b.execute(f"SELECT count(*) FROM {table}").fetchone() == (rows,)
        theirs = {r[0] for r in a.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        mine = {r[0] for r in b.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "mastra_threads_resourceid_createdat_idx" in mine - theirs
    # Mastra's message indexes are in both files, and ours adds none on those columns.
    assert {"idx_messages_thread_created_at", "idx_messages_thread_resource_created_at"} <= (
        theirs & mine
    )
    assert not {name for name in mine - theirs if "messages" in name}
    found = index_cost.measure(rows=5, reps=1)
    assert set(found) == {
        "W1 thread insert", "W1 message insert (batches of 10)", "W5 snapshot insert (no resource)"
    }
    assert all(theirs > 0 and ours > 0 for theirs, ours in found.values())


def test_opening_quick_run_on_sqlite_reports_both_databases() -> None:
    # bench.opening at a CI size: a database with its tables and a new one, each with the
    # statements its init() sent (fewer with tables present: no table is created).
    from bench import opening

    rows = asyncio.run(opening.measure("sqlite", reps=2))
    assert [r["case"] for r in rows] == ["tables present", "new"]
    assert all(r["median_ms"] > 0 and r["min_ms"] <= r["median_ms"] for r in rows)
    present, new = rows
    assert 0 < present["statements"] < new["statements"]
    assert "| sqlite | tables present |" in opening._table(rows)
