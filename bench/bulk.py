"""``python -m bench.bulk``: bulk reads and copies, library vs the minimal raw driver code.

    uv run python -m bench.bulk                 # 100,000 messages, 3 interleaved repetitions
    uv run python -m bench.bulk --quick         # 2,000 messages, 1 repetition (CI smoke size)
    uv run python -m bench.bulk --backend sqlite --messages 20000 --reps 5

Two workloads on each backend (sqlite, postgres), every repetition library and raw in turn:

- ``list all``: ``list_messages(per_page=False)`` over one thread of N messages against the
  minimal raw read of the same rows (one SELECT in autocommit, the rows decoded to dicts: JSON
  content parsed, timestamps as aware datetimes). Each read runs in a fresh subprocess, which
  reports its time and its peak RSS growth over the read (``VmHWM``, after the connection is
  open and a one-row read has warmed it up).
- ``copy``: ``composite-store copy`` (``admin.copy_domains``, the memory domain) from a SQLite
  file holding the thread into a fresh destination, against the raw bulk copy of the same rows
  (sqlite3 read; PostgreSQL: ``COPY .. FROM STDIN`` into the library's tables, shadow
  timestamps included; SQLite: ``executemany`` in one transaction). Rows per second.

PostgreSQL is the server the tests would use, in throwaway schemas dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.backends import ROOT, _server, scratch_dir
from composite_store import Message, Thread, open_store
from composite_store.admin.copy import copy_domains

#: (per_page=False read, copy) targets as a ratio to raw: time and memory within 1.5x, copy
#: at least half the raw bulk copy's rate (issue 19).
LIST_LIMIT = 1.5
COPY_TARGET = 0.5

_COLUMNS = ("id", "thread_id", "content", "role", "type", "createdAt", "resourceId")
_THREAD_COLUMNS = ("id", "resourceId", "title", "metadata", "createdAt", "updatedAt")


@dataclass
class Row:
    backend: str
    workload: str
    unit: str
    library: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Library over raw, medians (for a time or memory: how many times raw's); NaN where
        raw's median is 0 (a read too small to grow the process's peak RSS)."""
        raw = statistics.median(self.raw)
        return statistics.median(self.library) / raw if raw else float("nan")


# -- the data --------------------------------------------------------------------------------


async def fill(url: str, messages: int) -> None:
    """One thread of ``messages`` messages (about 60 bytes of text each), saved by the library."""
    store = open_store(url)
    await store.init()
    try:
        memory = store.memory
        await memory.save_thread(thread=Thread(id="t-bulk", resource_id="u-bulk", title="bulk"))
        start = datetime(2026, 1, 1, tzinfo=UTC)
        for first in range(0, messages, 1000):
            batch = [
                Message(
                    id=f"m{i:08d}",
                    thread_id="t-bulk",
                    resource_id="u-bulk",
                    role="user" if i % 2 else "assistant",
                    content={"format": 2, "parts": [{"type": "text", "text": f"message {i} " * 4}]},
                    created_at=start + timedelta(milliseconds=i),
                )
                for i in range(first, min(messages, first + 1000))
            ]
            await memory.save_messages(messages=batch)
    finally:
        await store.close()


# -- children: one read each, measured in a fresh process ------------------------------------


def _rss_mib() -> float:
    """This process's peak RSS so far. Linux's ``ru_maxrss`` would start at the parent's RSS
    (it survives fork and exec): the peak of this process's own memory map is read instead."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measured(read: Callable[[], Any]) -> dict[str, float]:
    gc.collect()
    base = _rss_mib()
    start = time.perf_counter()
    rows = read()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "mib": _rss_mib() - base, "rows": len(rows)}


async def _child_library(url: str) -> dict[str, float]:
    store = open_store(url)
    await store.init()
    try:
        await store.memory.list_messages(thread_id="t-bulk", per_page=1)
        gc.collect()
        base = _rss_mib()
        start = time.perf_counter()
        page = await store.memory.list_messages(thread_id="t-bulk", per_page=False)
        return {
            "seconds": time.perf_counter() - start,
            "mib": _rss_mib() - base,
            "rows": len(page.items),
        }
    finally:
        await store.close()


def _child_raw_sqlite(path: str) -> dict[str, float]:
    conn = sqlite3.connect(path)
    sql = (
        f"SELECT {', '.join(_quoted(_COLUMNS))} FROM mastra_messages WHERE thread_id = ? "
        'ORDER BY "createdAt", id'
    )
    conn.execute(sql + " LIMIT 1", ("t-bulk",)).fetchall()

    def read() -> list[dict[str, Any]]:
        return [
            {
                "id": r[0],
                "thread_id": r[1],
                "content": json.loads(r[2]),
                "role": r[3],
                "type": r[4],
                "createdAt": datetime.fromisoformat(r[5]),
                "resourceId": r[6],
            }
            for r in conn.execute(sql, ("t-bulk",))
        ]

    return _measured(read)


async def _child_raw_postgres(dsn: str, schema: str) -> dict[str, float]:
    import psycopg

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:
        columns = ", ".join(
            'COALESCE("createdAtZ", timezone(\'UTC\', "createdAt"))'
            if c == "createdAt"
            else f'"{c}"'
            for c in _COLUMNS
        )
        sql = (
            f'SELECT {columns} FROM "{schema}".mastra_messages WHERE thread_id = %s '
            'ORDER BY "createdAt", id'
        )
        await (await conn.execute(sql + " LIMIT 1", ("t-bulk",))).fetchall()
        gc.collect()
        base = _rss_mib()
        start = time.perf_counter()
        cursor = await conn.execute(sql, ("t-bulk",))
        rows = [
            {
                "id": r[0],
                "thread_id": r[1],
                "content": json.loads(r[2]),
                "role": r[3],
                "type": r[4],
                "createdAt": r[5],
                "resourceId": r[6],
            }
            for r in await cursor.fetchall()
        ]
        return {"seconds": time.perf_counter() - start, "mib": _rss_mib() - base, "rows": len(rows)}
    finally:
        await conn.close()


def _child(argv: list[str]) -> None:
    kind, *args = argv
    if kind == "library":
        result = asyncio.run(_child_library(args[0]))
    elif kind == "raw-sqlite":
        result = _child_raw_sqlite(args[0])
    else:
        result = asyncio.run(_child_raw_postgres(args[0], args[1]))
    print(json.dumps(result))


def _in_child(*args: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bulk", "--child", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- raw copies -----------------------------------------------------------------------------


def _quoted(columns: tuple[str, ...]) -> list[str]:
    return [f'"{c}"' for c in columns]


def _source_rows(path: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        threads = conn.execute(
            f"SELECT {', '.join(_quoted(_THREAD_COLUMNS))} FROM mastra_threads"
        ).fetchall()
        messages = conn.execute(
            f"SELECT {', '.join(_quoted(_COLUMNS))} FROM mastra_messages"
        ).fetchall()
        return threads, messages
    finally:
        conn.close()


async def _raw_copy_postgres(source: str, dsn: str, schema: str) -> int:
    """sqlite3 -> ``COPY`` of the stored text as it is (PostgreSQL parses the timestamps, whose
    ``Z`` a naive column ignores, and the JSON), each timestamp into its shadow column too."""
    import psycopg

    threads, messages = await asyncio.to_thread(_source_rows, source)
    conn = await psycopg.AsyncConnection.connect(dsn)
    try:
        async with conn.transaction(), conn.cursor() as cursor:
            for table, columns, rows, stamps in (
                ("mastra_threads", _THREAD_COLUMNS, threads, (4, 5)),
                ("mastra_messages", _COLUMNS, messages, (5,)),
            ):
                shadows = [f'"{columns[i]}Z"' for i in stamps]
                names = ", ".join([*_quoted(columns), *shadows])
                async with cursor.copy(f'COPY "{schema}".{table} ({names}) FROM STDIN') as copy:
                    for row in rows:
                        await copy.write_row((*row, *(row[i] for i in stamps)))
    finally:
        await conn.close()
    return len(threads) + len(messages)


def _raw_copy_sqlite(source: str, destination: str) -> int:
    threads, messages = _source_rows(source)
    conn = sqlite3.connect(destination, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for table, columns, rows in (
            ("mastra_threads", _THREAD_COLUMNS, threads),
            ("mastra_messages", _COLUMNS, messages),
        ):
            marks = ", ".join("?" * len(columns))
            conn.executemany(
                f"INSERT INTO {table} ({', '.join(_quoted(columns))}) VALUES ({marks})", rows
            )
        conn.execute("COMMIT")
    finally:
        conn.close()
    return len(threads) + len(messages)


# -- the run --------------------------------------------------------------------------------


@dataclass
class Place:
    """Where one backend's data lives: a fresh destination per copy, and cleanup."""

    list_url: str
    raw_list: tuple[str, ...]
    new_destination: Callable[[], Awaitable[tuple[str, Callable[[], Awaitable[int]]]]]
    drop_destination: Callable[[str], Awaitable[None]]
    cleanup: Callable[[], Awaitable[None]]


async def _sqlite_place(scratch: Path, source: str) -> Place:
    counter = iter(range(1_000_000))

    async def new_destination() -> tuple[str, Callable[[], Awaitable[int]]]:
        path = scratch / f"dst-{next(counter)}.db"
        raw_path = scratch / f"raw-{next(counter)}.db"
        schema = open_store(f"sqlite:///{raw_path}")
        await schema.init()
        await schema.close()
        return f"sqlite:///{path}", lambda: asyncio.to_thread(
            _raw_copy_sqlite, source, str(raw_path)
        )

    async def drop(url: str) -> None:
        Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)

    async def nothing() -> None:
        return None

    return Place(f"sqlite:///{source}", ("raw-sqlite", source), new_destination, drop, nothing)


async def _postgres_place(scratch: Path, source: str) -> Place:
    from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

    admin = await asyncio.to_thread(_server, "postgres")
    made: list[str] = []

    async def namespace() -> str:
        name = await create_namespace(admin)
        made.append(name)
        return name

    listed = await namespace()
    list_url = store_url(admin, listed)
    src, dst = open_store(f"sqlite:///{source}"), open_store(list_url)
    try:
        await copy_domains(src, dst, domains=["memory"])
    finally:
        await src.close()
        await dst.close()
    raw_names: dict[str, str] = {}

    async def new_destination() -> tuple[str, Callable[[], Awaitable[int]]]:
        library, raw = await namespace(), await namespace()
        schema = open_store(store_url(admin, raw))
        await schema.init()
        await schema.close()
        url = store_url(admin, library)
        raw_names[url] = raw
        return url, lambda: _raw_copy_postgres(source, admin, raw)

    async def drop(url: str) -> None:
        for name in (url.rsplit("schema=", 1)[-1].split("&")[0], raw_names.pop(url, "")):
            if name in made:
                made.remove(name)
                await drop_namespace(admin, name)

    async def cleanup() -> None:
        for name in list(made):
            await drop_namespace(admin, name)
        made.clear()

    return Place(list_url, ("raw-postgres", admin, listed), new_destination, drop, cleanup)


PLACES = {"sqlite": _sqlite_place, "postgres": _postgres_place}


async def _library_copy(source: str, url: str) -> int:
    src, dst = open_store(f"sqlite:///{source}"), open_store(url)
    try:
        report = await copy_domains(src, dst, domains=["memory"])
    finally:
        await src.close()
        await dst.close()
    if not report.ok:
        raise RuntimeError(f"copy count check failed: {report.tables}")
    return sum(t.read for t in report.tables)


async def bench_backend(
    name: str, source: str, scratch: Path, reps: int, messages: int
) -> list[Row]:
    place = await PLACES[name](scratch, source)
    rows = {
        "time": Row(name, "list all (per_page=False)", "s"),
        "memory": Row(name, "list all (per_page=False)", "MiB"),
        "copy": Row(name, "copy from SQLite", "rows/s"),
    }
    try:
        for rep in range(reps):
            for side in ("library", "raw") if rep % 2 == 0 else ("raw", "library"):
                measured = (
                    _in_child("library", place.list_url)
                    if side == "library"
                    else _in_child(*place.raw_list)
                )
                if measured["rows"] != messages:
                    raise RuntimeError(f"{side} read {measured['rows']} of {messages} messages")
                getattr(rows["time"], side).append(measured["seconds"])
                getattr(rows["memory"], side).append(measured["mib"])
            url, raw_copy = await place.new_destination()
            try:
                for side in ("library", "raw") if rep % 2 == 0 else ("raw", "library"):
                    start = time.perf_counter()
                    copied = await (_library_copy(source, url) if side == "library" else raw_copy())
                    getattr(rows["copy"], side).append(copied / (time.perf_counter() - start))
            finally:
                await place.drop_destination(url)
    finally:
        await place.cleanup()
    return list(rows.values())


def _times(ratio: float) -> str:
    return "-" if math.isnan(ratio) else f"{ratio:.2f}x"


def markdown(rows: list[Row]) -> str:
    lines = [
        "| backend | workload | unit | library | raw | ratio | target |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        target = f"<= {LIST_LIMIT}x" if r.unit != "rows/s" else f">= {COPY_TARGET}x"
        fmt = "{:,.0f}" if r.unit == "rows/s" else "{:,.2f}" if r.unit == "s" else "{:,.0f}"
        lines.append(
            f"| {r.backend} | {r.workload} | {r.unit} | {fmt.format(statistics.median(r.library))}"
            f" | {fmt.format(statistics.median(r.raw))} | {_times(r.ratio)} | {target} |"
        )
    return "\n".join(lines)


async def run(backends: list[str], messages: int, reps: int) -> list[Row]:
    scratch = scratch_dir()
    try:
        source = str(scratch / "source.db")
        await fill(f"sqlite:///{source}", messages)
        # Fold the fill's write-ahead log into the file, as the first reader's close would:
        # every repetition then reads the same file, not the first one through a large WAL.
        with contextlib.closing(sqlite3.connect(source)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows: list[Row] = []
        for name in backends:
            try:
                rows += await bench_backend(name, source, scratch, reps, messages)
            except (ConnectionError, ImportError) as exc:
                print(f"{name}: skipped ({exc})", file=sys.stderr)
        return rows
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.bulk",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--backend",
        action="append",
        choices=sorted(PLACES),
        help="repeatable; default: sqlite and postgres",
    )
    parser.add_argument("--quick", action="store_true", help="2,000 messages, 1 repetition")
    parser.add_argument("--messages", type=int, help="messages in the thread (default 100,000)")
    parser.add_argument("--reps", type=int, help="interleaved repetitions (default 3)")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--json", help="also write every sample to this file")
    args = parser.parse_args(argv)
    messages = args.messages or (2_000 if args.quick else 100_000)
    reps = args.reps or (1 if args.quick else 3)
    load = os.getloadavg()[0]
    rows = asyncio.run(run(args.backend or ["sqlite", "postgres"], messages, reps))
    table = markdown(rows)
    print(
        f"{messages:,} messages, {reps} repetitions, load {load:.2f} -> "
        f"{os.getloadavg()[0]:.2f}\n\n{table}"
    )
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps([vars(r) for r in rows], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
