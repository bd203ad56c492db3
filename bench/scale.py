"""``python -m bench.scale``: the reads of one agent turn at growing sizes, library vs raw.

    uv run python -m bench.scale --scale smoke                 # CI size: 2k and 20k messages
    uv run python -m bench.scale --scale full                  # docs: 10k -> 2M messages
    uv run python -m bench.scale --scale full --backend sqlite --markdown /tmp/scale.md
    uv run python -m bench --scale smoke                       # the same, from ``python -m bench``

Every read an agent makes on each turn (issue 19, item 3) must cost the same on a 10,000- and
a 2,000,000-message store: the newest 20 messages of a thread, an include window (2 before, 2
after a message in the middle of a long thread), a page of a resource's threads with its
total, a workflow's and a resource's newest runs, and a working-memory read. The fixture
grows step by step (each size adds rows to the previous one); a tenth of the messages go to
one long thread (200,000 at 2M), the rest to threads of 100 messages; one resource keeps
1,000 threads; runs spread over 10 workflows and 1,000 resources, but every 50th run belongs
to one resource (20 runs at 1k, 2,000 at 100k). Rows are bulk-loaded beside the library
(PostgreSQL ``COPY``, SQLite ``executemany``) into the tables the library's ``init()``
created, then the planner's statistics are refreshed (``ANALYZE``).

At each size each read runs ``--calls`` times through the library's public async API and,
interleaved, as the minimal raw statement (psycopg ``AsyncConnection`` in autocommit;
synchronous sqlite3 on the caller's thread); the table gives the median latency of each in
milliseconds; on PostgreSQL each cell also gives the most rows one scan of the library's
statement read (``EXPLAIN ANALYZE`` with the values it binds), the figure that load on a
shared machine does not move. "newest 20 + total" is ``list_messages``' default
(``include_total=True``): it counts the whole thread, which grows with it, as the raw count
does (the library's own callers pass ``include_total=False``).

PostgreSQL runs on a throwaway cluster of its own (``tests/support/servers``'
``ThrowawayPostgres``; 2M rows must not land in a shared database) unless ``--postgres-url``
names a server, where a private database is created and dropped. SQLite uses a file in a
temporary directory, removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from composite_store import Include, OrderBy, open_store
from composite_store.schema import shadow_name
from composite_store.sql.engine import Prepared
from composite_store.sql.memory import SqlMemory
from composite_store.sql.store import SqlStore
from composite_store.sql.workflows import SqlWorkflows

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
#: One message in this many goes to the long thread.
LONG_SHARE = 10
THREAD_SIZE, PAGE_THREADS, WORKFLOWS, RUN_RESOURCES = 100, 1000, 10, 1000
WM = "# Notes\n" + "- the user likes short answers\n" * 34  # ~1 KB of working memory


@dataclass(frozen=True)
class Scale:
    """The sizes one run grows the fixture through, and the calls per read at each."""

    name: str
    messages: tuple[int, ...]
    runs: tuple[int, ...]
    calls: int


SCALES = {
    "smoke": Scale("smoke", (2_000, 20_000), (200, 2_000), 15),
    "full": Scale(
        "full", (10_000, 100_000, 1_000_000, 2_000_000), (1_000, 10_000, 50_000, 100_000), 60
    ),
}


# -- the fixture -----------------------------------------------------------------------------


@dataclass
class Fixture:
    """The rows loaded so far (each step appends to them) and what the reads aim at."""

    messages: int = 0
    long: int = 0
    others: int = 0
    runs: int = 0
    resources: int = 0
    #: (id, createdAt) of the include window's target: the long thread's middle message.
    target: tuple[str, datetime] = ("", EPOCH)

    def message_rows(self, upto: int) -> Iterator[dict[str, Any]]:
        for i in range(self.messages, upto):
            at = EPOCH + timedelta(milliseconds=i)
            if i % LONG_SHARE == 0:
                mid, tid, rid = f"long-{self.long:07d}", "long", "r-long"
                self.long += 1
            else:
                t = self.others // THREAD_SIZE
                mid, tid, rid = f"m{self.others:08d}", f"t{t:06d}", f"r{t // 20:05d}"
                self.others += 1
            yield {
                "id": mid,
                "thread_id": tid,
                "resourceId": rid,
                "role": "user",
                "type": "v2",
                "content": json.dumps(
                    {"format": 2, "parts": [{"type": "text", "text": f"message {i}"}]},
                    separators=(",", ":"),
                ),
                "createdAt": at,
            }
        self.messages = upto
        # Long-thread message k was global message k * LONG_SHARE.
        k = self.long // 2
        self.target = (f"long-{k:07d}", EPOCH + timedelta(milliseconds=k * LONG_SHARE))

    def thread_rows(self, before_others: int) -> Iterator[dict[str, Any]]:
        """The threads the new messages opened (and, first, the long and the page ones)."""
        first = (before_others + THREAD_SIZE - 1) // THREAD_SIZE
        last = (self.others + THREAD_SIZE - 1) // THREAD_SIZE
        if before_others == 0 and self.others:
            yield _thread("long", "r-long", 0)
            for p in range(PAGE_THREADS):
                yield _thread(f"p{p:04d}", "r-page", p)
        for t in range(first, last):
            yield _thread(f"t{t:06d}", f"r{t // 20:05d}", t)

    def run_rows(self, upto: int) -> Iterator[dict[str, Any]]:
        for i in range(self.runs, upto):
            at = EPOCH + timedelta(seconds=i)
            status = "success" if i % 3 else "running"
            yield {
                "workflow_name": f"wf{i % WORKFLOWS}",
                "run_id": f"run{i:07d}",
                # One resource in fifty runs (20 at 1k runs, 2,000 at 100k): its page is full.
                "resourceId": "r-runs" if i % 50 == 0 else f"r{i % RUN_RESOURCES:05d}",
                "snapshot": json.dumps(
                    {
                        "runId": f"run{i:07d}",
                        "status": status,
                        "value": {},
                        "context": {"input": {"n": i}},
                        "serializedStepGraph": [],
                        "activePaths": [],
                        "timestamp": i,
                    }
                ),
                "createdAt": at,
                "updatedAt": at,
            }
        self.runs = upto

    def resource_rows(self, upto: int) -> Iterator[dict[str, Any]]:
        for i in range(self.resources, upto):
            at = EPOCH + timedelta(seconds=i)
            yield {
                "id": f"w{i:06d}",
                "workingMemory": WM,
                "metadata": None,
                "createdAt": at,
                "updatedAt": at,
            }
        self.resources = upto


def _thread(tid: str, rid: str, n: int) -> dict[str, Any]:
    at = EPOCH + timedelta(seconds=n)
    return {
        "id": tid,
        "resourceId": rid,
        "title": "bench",
        "metadata": None,
        "createdAt": at,
        "updatedAt": at,
    }


def _iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


class Engine:
    """One engine's bulk loader and raw statements, over the tables the library created."""

    name = ""

    async def load(self, table: str, rows: Iterator[dict[str, Any]]) -> int: ...
    async def analyze(self) -> None: ...
    async def close(self) -> None: ...

    #: read name -> an awaitable doing the raw read once (the fixture says what to aim at).
    def reads(self, fx: Fixture) -> dict[str, Callable[[], Awaitable[Any]]]:
        raise NotImplementedError


def _columns(store: SqlStore, domain: str, table: str) -> list[str]:
    tables = store.workflows.tables if domain == "workflows" else store.memory.tables
    return [c.name for c in tables[table].columns]


class SqliteEngine(Engine):
    name = "sqlite"

    def __init__(self, path: Path, store: SqlStore) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.store = store

    async def load(self, table: str, rows: Iterator[dict[str, Any]]) -> int:
        domain = "workflows" if table == "workflow_snapshot" else "memory"
        cols = _columns(self.store, domain, table)
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" for _ in cols)
        sql = f"INSERT INTO mastra_{table} ({names}) VALUES ({marks})"
        n = 0
        self.conn.execute("BEGIN")
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(
                tuple(_iso(v) if isinstance(v, datetime) else v for v in (row.get(c) for c in cols))
            )
            if len(batch) == 10_000:
                self.conn.executemany(sql, batch)
                n, batch = n + len(batch), []
        self.conn.executemany(sql, batch)
        self.conn.execute("COMMIT")
        return n + len(batch)

    async def analyze(self) -> None:
        self.conn.execute("ANALYZE")

    async def close(self) -> None:
        self.conn.close()

    def reads(self, fx: Fixture) -> dict[str, Callable[[], Awaitable[Any]]]:
        c = self.conn
        msg = 'id, content, role, type, "createdAt", thread_id, "resourceId"'
        run = 'workflow_name, run_id, "resourceId", snapshot, "createdAt", "updatedAt"'
        tid, _ = fx.target

        def q(sql: str, *args: Any) -> Callable[[], Awaitable[Any]]:
            async def go() -> Any:
                return c.execute(sql, args).fetchall()

            return go

        async def window() -> Any:
            [target] = c.execute(
                f"SELECT {msg} FROM mastra_messages WHERE id = ?", (tid,)
            ).fetchall()
            return [
                target,
                *c.execute(
                    f"SELECT * FROM (SELECT {msg} FROM mastra_messages WHERE thread_id = ? AND "
                    '("createdAt", id) < (?, ?) ORDER BY "createdAt" DESC, id DESC LIMIT 2) '
                    f"UNION ALL SELECT * FROM (SELECT {msg} FROM mastra_messages WHERE "
                    'thread_id = ? AND ("createdAt", id) > (?, ?) ORDER BY "createdAt", id '
                    "LIMIT 2)",
                    (target[5], target[4], tid, target[5], target[4], tid),
                ).fetchall(),
            ]

        newest = (
            f'SELECT {msg} FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt" '
            "DESC, id DESC LIMIT 21"
        )
        return {
            "newest 20": q(newest, "long"),
            "newest 20 + total": q(
                f"SELECT {msg}, (SELECT count(*) FROM mastra_messages WHERE thread_id = ?) "
                f'FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt" DESC, id DESC '
                "LIMIT 21",
                "long",
                "long",
            ),
            "include 2 + 2": window,
            "thread page 10 + total": q(
                'SELECT id, "resourceId", title, metadata, "createdAt", "updatedAt", '
                '(SELECT count(*) FROM mastra_threads WHERE "resourceId" = ?) FROM '
                'mastra_threads WHERE "resourceId" = ? ORDER BY "createdAt" DESC, id DESC '
                "LIMIT 51 OFFSET 500",
                "r-page",
                "r-page",
            ),
            "runs of a workflow": q(
                f"SELECT {run} FROM mastra_workflow_snapshot WHERE workflow_name = ? "
                'ORDER BY "createdAt" DESC, run_id DESC LIMIT 21',
                "wf0",
            ),
            "runs of a resource": q(
                f'SELECT {run} FROM mastra_workflow_snapshot WHERE "resourceId" = ? '
                'ORDER BY "createdAt" DESC, run_id DESC LIMIT 21',
                "r-runs",
            ),
            "working memory": q(
                'SELECT id, "workingMemory", metadata, "createdAt", "updatedAt" FROM '
                "mastra_resources WHERE id = ?",
                "w000000",
            ),
        }


class PostgresEngine(Engine):
    name = "postgres"

    def __init__(self, dsn: str, store: SqlStore) -> None:
        self.dsn, self.store = dsn, store
        self.conn: Any = None

    async def open(self) -> None:
        import psycopg

        self.conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)

    async def load(self, table: str, rows: Iterator[dict[str, Any]]) -> int:
        domain = "workflows" if table == "workflow_snapshot" else "memory"
        cols = _columns(self.store, domain, table)
        shadows = {shadow_name(c): c for c in ("createdAt", "updatedAt")}
        names = ", ".join(f'"{c}"' for c in cols)
        n = 0
        sql = f"COPY mastra_{table} ({names}) FROM STDIN"
        async with self.conn.cursor() as cur, cur.copy(sql) as copy:
            for row in rows:
                values = []
                for c in cols:
                    if c in shadows:
                        values.append(row[shadows[c]])  # TIMESTAMPTZ: the aware instant
                    else:
                        v = row.get(c)
                        # TIMESTAMP: the UTC wall clock, naive.
                        values.append(v.replace(tzinfo=None) if isinstance(v, datetime) else v)
                await copy.write_row(values)
                n += 1
        return n

    async def analyze(self) -> None:
        await self.conn.execute("ANALYZE")

    async def close(self) -> None:
        await self.conn.close()

    def reads(self, fx: Fixture) -> dict[str, Callable[[], Awaitable[Any]]]:
        c = self.conn
        ts = 'COALESCE("{0}Z", "{0}" AT TIME ZONE \'UTC\')'
        msg = f'id, content, role, type, {ts.format("createdAt")}, thread_id, "resourceId"'
        run = (
            f'workflow_name, run_id, "resourceId", snapshot, {ts.format("createdAt")}, '
            f"{ts.format('updatedAt')}"
        )
        tid, _ = fx.target

        def q(sql: str, *args: Any) -> Callable[[], Awaitable[Any]]:
            async def go() -> Any:
                return await (await c.execute(sql, args)).fetchall()

            return go

        async def window() -> Any:
            cur = await c.execute(
                f'SELECT {msg}, "createdAt" FROM mastra_messages WHERE id = %s', (tid,)
            )
            [target] = await cur.fetchall()
            cur = await c.execute(
                f"(SELECT {msg} FROM mastra_messages WHERE thread_id = %s AND "
                '("createdAt", id) < (%s, %s) ORDER BY "createdAt" DESC, id DESC LIMIT 2) '
                f"UNION ALL (SELECT {msg} FROM mastra_messages WHERE thread_id = %s AND "
                '("createdAt", id) > (%s, %s) ORDER BY "createdAt", id LIMIT 2)',
                (target[5], target[7], tid, target[5], target[7], tid),
            )
            return [target, *await cur.fetchall()]

        return {
            "newest 20": q(
                f'SELECT {msg} FROM mastra_messages WHERE thread_id = %s ORDER BY "createdAt" '
                "DESC, id DESC LIMIT 21",
                "long",
            ),
            "newest 20 + total": q(
                f"SELECT {msg}, (SELECT count(*) FROM mastra_messages WHERE thread_id = %s) "
                'FROM mastra_messages WHERE thread_id = %s ORDER BY "createdAt" DESC, id DESC '
                "LIMIT 21",
                "long",
                "long",
            ),
            "include 2 + 2": window,
            "thread page 10 + total": q(
                f'SELECT id, "resourceId", title, metadata, {ts.format("createdAt")}, '
                f"{ts.format('updatedAt')}, (SELECT count(*) FROM mastra_threads WHERE "
                '"resourceId" = %s) FROM mastra_threads WHERE "resourceId" = %s ORDER BY '
                '"createdAt" DESC, id DESC LIMIT 51 OFFSET 500',
                "r-page",
                "r-page",
            ),
            "runs of a workflow": q(
                f"SELECT {run} FROM mastra_workflow_snapshot WHERE workflow_name = %s "
                'ORDER BY "createdAt" DESC, run_id DESC LIMIT 21',
                "wf0",
            ),
            "runs of a resource": q(
                f'SELECT {run} FROM mastra_workflow_snapshot WHERE "resourceId" = %s '
                'ORDER BY "createdAt" DESC, run_id DESC LIMIT 21',
                "r-runs",
            ),
            "working memory": q(
                f'SELECT id, "workingMemory", metadata, {ts.format("createdAt")}, '
                f"{ts.format('updatedAt')} FROM mastra_resources WHERE id = %s",
                "w000000",
            ),
        }


def library_reads(store: SqlStore, fx: Fixture) -> dict[str, Callable[[], Awaitable[Any]]]:
    memory, workflows = store.memory, store.workflows
    desc = OrderBy(field="createdAt", direction="DESC")
    tid, _ = fx.target
    window = [Include(id=tid, with_previous_messages=2, with_next_messages=2)]
    return {
        "newest 20": lambda: memory.list_messages(
            thread_id="long", per_page=20, order_by=desc, include_total=False
        ),
        "newest 20 + total": lambda: memory.list_messages(
            thread_id="long", per_page=20, order_by=desc
        ),
        "include 2 + 2": lambda: memory.list_messages(thread_id="long", per_page=0, include=window),
        "thread page 10 + total": lambda: memory.list_threads(
            filter={"resource_id": "r-page"}, page=10, per_page=50
        ),
        "runs of a workflow": lambda: workflows.list_workflow_runs(
            workflow_name="wf0", page=0, per_page=20, include_total=False
        ),
        "runs of a resource": lambda: workflows.list_workflow_runs(
            resource_id="r-runs", page=0, per_page=20, include_total=False
        ),
        "working memory": lambda: memory.get_resource_by_id(resource_id="w000000"),
    }


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Row:
    read: str
    #: size label -> (library ms, raw ms), medians.
    cells: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: size label -> the most rows one scan of the library's statement read (PostgreSQL).
    scanned: dict[str, int] = field(default_factory=dict)


async def _median_ms(fn: Callable[[], Awaitable[Any]], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def measure(
    lib: dict[str, Callable[[], Awaitable[Any]]],
    raw: dict[str, Callable[[], Awaitable[Any]]],
    calls: int,
) -> dict[str, tuple[float, float]]:
    """Median latency of each read, library and raw interleaved in rounds of 5 calls."""
    found: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in lib}
    for name in lib:  # warm caches and compiled statements
        await lib[name]()
        await raw[name]()
    rounds = max(1, calls // 5)
    order = list(lib)
    for _ in range(rounds):
        random.shuffle(order)
        for name in order:
            found[name][0].extend(await _median_ms(lib[name], 5))
            found[name][1].extend(await _median_ms(raw[name], 5))
    return {k: (statistics.median(a), statistics.median(b)) for k, (a, b) in found.items()}


async def check_same(
    lib: dict[str, Callable[[], Awaitable[Any]]], raw: dict[str, Callable[[], Awaitable[Any]]]
) -> None:
    """Both contenders return as many rows for each read (a cheap guard against a raw
    statement that reads less than the library's)."""
    for name in lib:
        got = await lib[name]()
        items = getattr(got, "items", None)
        n_lib = len(items) if items is not None else (0 if got is None else 1)
        n_raw = len(await raw[name]())
        # The raw pages read one row past the page, as the library does internally.
        if n_lib not in (n_raw, n_raw - 1):
            raise AssertionError(f"{name}: library returned {n_lib} rows, raw {n_raw}")


def _label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


async def bench_engine(
    name: str, scale: Scale, scratch: Path, pg_url: str | None, max_messages: int | None
) -> list[Row]:
    cleanup: list[Callable[[], Any]] = []
    try:
        if name == "sqlite":
            path = scratch / "scale.db"
            store = open_store(f"sqlite:///{path}")
            assert isinstance(store, SqlStore)
            await store.init()
            engine: Engine = SqliteEngine(path, store)
        else:
            assert pg_url is not None
            dsn, store_url = await _private_database(pg_url, cleanup)
            store = open_store(store_url)
            assert isinstance(store, SqlStore)
            await store.init()
            engine = pg = PostgresEngine(dsn, store)
            await pg.open()
        fx = Fixture()
        rows = {}
        for n, r in zip(scale.messages, scale.runs, strict=True):
            if max_messages is not None and n > max_messages:
                print(f"# {name}: stopping before {_label(n)} (--max-messages)", file=sys.stderr)
                break
            t0 = time.perf_counter()
            others = fx.others
            loaded = await engine.load("messages", fx.message_rows(n))
            await engine.load("threads", fx.thread_rows(others))
            await engine.load("workflow_snapshot", fx.run_rows(r))
            await engine.load("resources", fx.resource_rows(n // 100))
            await engine.analyze()
            print(
                f"# {name} {_label(n)}: +{loaded} messages, {r} runs loaded in "
                f"{time.perf_counter() - t0:.1f}s; load average {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
            )
            lib, raw = library_reads(store, fx), engine.reads(fx)
            await check_same(lib, raw)
            label = f"{_label(n)} / {_label(r)}"
            for read, cell in (await measure(lib, raw, scale.calls)).items():
                rows.setdefault(read, Row(read)).cells[label] = cell
            if name == "postgres":
                for read, scanned in (await rows_read(store, fx)).items():
                    rows[read].scanned[label] = scanned
        await engine.close()
        await store.close()
        return list(rows.values())
    finally:
        for undo in reversed(cleanup):
            undo()


async def rows_read(store: SqlStore, fx: Fixture) -> dict[str, int]:
    """PostgreSQL: the most rows any one scan read (``EXPLAIN ANALYZE``, rows returned plus
    rows removed by a filter) when the library's own statement for each read runs with the
    values it binds: the cost that must not grow with the store."""
    import re

    from composite_store.domains.workflows import RunQuery
    from composite_store.rules.paging import window

    memory, workflows = store.memory, store.workflows
    assert isinstance(memory, SqlMemory) and isinstance(workflows, SqlWorkflows)
    tid, _ = fx.target
    newest = window(0, 20, default=20)

    def runs(name: str | None, resource: str | None) -> tuple[Prepared, dict[str, Any]]:
        return workflows.runs_page(RunQuery(name, resource, None, None, newest, False))

    def explain(conn: Any) -> dict[str, int]:
        statements: dict[str, tuple[Prepared, dict[str, Any]]] = {
            "newest 20": (
                memory._messages_page(1, False, (), True, True),
                {"v0": "long", "offset": 0, "limit": 21},
            ),
            "newest 20 + total": (
                memory._messages_page(1, False, (), True, True, True),
                {"v0": "long", "offset": 0, "limit": 21},
            ),
            "include 2 + 2": (
                memory._listing(None, 1), {"mid0": tid, "before0": 2, "after0": 2}
            ),
            "thread page 10 + total": (
                memory._threads_page(True, (), "createdAt", True, True, True),
                {"rid": "r-page", "offset": 500, "limit": 51},
            ),
            "runs of a workflow": runs("wf0", None),
            "runs of a resource": runs(None, "r-runs"),
            "working memory": (memory.select_by("resources", "id"), {"id": "w000000"}),
        }
        found = {}
        for read, (stmt, values) in statements.items():
            lines = stmt.run_variant(conn, "EXPLAIN (ANALYZE) " + stmt.sql, values)
            scans = [
                int(m.group(1)) + int(m.group(2) or 0)
                for (line,) in lines
                if "Scan" in line
                for m in [
                    re.search(r"actual time=\S+ rows=(\d+).*?(?:Removed by Filter: (\d+))?$", line)
                ]
                if m
            ]
            found[read] = max(scans)
        return found

    result: dict[str, int] = await memory.db.run(explain)
    return result


def _throwaway_postgres(cleanup: list[Callable[[], Any]]) -> str:
    from tests.support.servers.postgres import ThrowawayPostgres

    server = ThrowawayPostgres.create()
    if isinstance(server, str):
        raise ConnectionError(f"no throwaway PostgreSQL: {server}")
    cleanup.append(server.tmp.cleanup)
    return server.url


async def _private_database(url: str, cleanup: list[Callable[[], Any]]) -> tuple[str, str]:
    """A database of its own on the server at ``url``: (its libpq DSN, its store URL)."""
    import psycopg

    base = url.split("?", 1)[0]
    name = f"composite_scale_{os.getpid()}"
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {name}")

    def drop() -> None:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    cleanup.append(drop)
    dsn = base.rsplit("/", 1)[0] + f"/{name}"
    return dsn, dsn


def markdown(engine: str, rows: Sequence[Row]) -> str:
    sizes = list(rows[0].cells) if rows else []
    head = "| read | " + " | ".join(f"{s} lib / raw ms" for s in sizes) + " |"
    lines = [f"#### {engine}", "", head, "|---|" + "---:|" * len(sizes)]
    for row in rows:
        cells = [
            f"{lib:.3f} / {raw:.3f}" + (f" ({row.scanned[size]:,} read)" if row.scanned else "")
            for size, (lib, raw) in row.cells.items()
        ]
        lines.append(f"| {row.read} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--scale", choices=sorted(SCALES), default="smoke")
    parser.add_argument(
        "--backend", action="append", choices=["postgres", "sqlite"], help="default: both"
    )
    parser.add_argument("--calls", type=int, help="calls per read and size (median taken)")
    parser.add_argument(
        "--max-messages", type=int, help="stop before a size above this (a machine too busy for 2M)"
    )
    parser.add_argument(
        "--postgres-url",
        help="a server to create a private database on (default: a throwaway cluster)",
    )
    parser.add_argument("--markdown", help="write the tables as Markdown to this file")
    args = parser.parse_args(argv)
    scale = SCALES[args.scale]
    if args.calls:
        scale = Scale(scale.name, scale.messages, scale.runs, args.calls)
    scratch = Path(tempfile.mkdtemp(prefix="composite-store-scale-"))
    tables, failed = [], False
    try:
        for name in args.backend or ["sqlite", "postgres"]:
            started = time.perf_counter()
            stop: list[Callable[[], Any]] = []
            try:
                # The throwaway cluster starts (and waits) outside the event loop.
                url = args.postgres_url
                if name == "postgres" and url is None:
                    url = _throwaway_postgres(stop)
                rows = asyncio.run(bench_engine(name, scale, scratch, url, args.max_messages))
            except (ConnectionError, ImportError) as exc:
                print(f"# {name}: skipped ({exc})", file=sys.stderr)
                continue
            except Exception:  # noqa: BLE001 - report it, run the other engine
                import traceback

                traceback.print_exc()
                failed = True
                continue
            finally:
                for undo in stop:
                    undo()
            tables.append(markdown(name, rows))
            print(f"# {name}: {time.perf_counter() - started:.0f}s", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = "\n\n".join(tables)
    print(text)
    print(
        f"\nscale: {scale.name}; calls per read and size: {scale.calls}; 1-minute load "
        f"average at the end: {os.getloadavg()[0]:.2f}"
    )
    if args.markdown:
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
