"""Reads of a long thread stop after the rows they return (rows read, not timings), whatever
plan the statistics would otherwise pick.

A newest-N page and each half of an include window must be served from the
``(thread_id, createdAt)`` index from where they start, on every relational engine: the
server reports the rows it read when it runs the library's own statements (MariaDB's
``ANALYZE``, PostgreSQL's ``EXPLAIN ANALYZE``), with the values the library binds; SQLite,
which reports no rows, shows the index and the bounds it is searched with (``EXPLAIN QUERY
PLAN``). Before the include window read its ids first, MariaDB read half of a 2,000-message
thread for a target in the middle. A window finds the target's thread and createdAt itself, and
where the dialect says so (``one_statement_listing``) the page and every window are one
statement (``SqlMemory._listing``): on every engine, each half of each window of that statement
must still be an index range from its target, searched with those values as constants, and so
must a window alone after it ran (MariaDB's plan of a half changed with what the connection had
run before, until each half was held to its index: ``SqlDialect.through_index``).
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store import OrderBy, open_store
from composite_store.errors import SchemaMismatchError
from composite_store.records.memory import Message, Thread
from composite_store.sql.engine import Prepared
from composite_store.sql.memory import SqlMemory
from composite_store.sql.store import SqlStore
from tests.support.sql_stores import sql_store_url

BACKENDS = ["sqlite", "postgres", "mariadb"]
THREAD = 2000
#: The targets of include windows: the middle of the thread, and halfway to either end.
TARGETS = (500, 1000, 1500)
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def _table_accesses(conn: Connection, prepared: Prepared, values: Any) -> list[dict[str, Any]]:
    """MariaDB: every table access of the statement as ``ANALYZE FORMAT=JSON`` reports it."""
    [(plan,)] = prepared.run_variant(conn, "ANALYZE FORMAT=JSON " + prepared.sql, values)
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            access = node.get("table")
            if isinstance(access, dict) and "access_type" in access:
                found.append(access)
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(json.loads(plan))
    return found


def _rows_read(backend: str, conn: Connection, prepared: Prepared, values: Any) -> int:
    """The most rows any table access of the statement read, as the server reports it."""
    if backend == "mariadb":
        # A const access (a row by its primary key, read while planning) reports no r_rows.
        accesses = _table_accesses(conn, prepared, values)
        return int(max(float(a["r_rows"]) for a in accesses if a.get("r_rows") is not None))
    lines = prepared.run_variant(conn, "EXPLAIN (ANALYZE) " + prepared.sql, values)
    scans = [
        int(m.group(1)) + int(m.group(2) or 0)
        for (line,) in lines
        if "Scan" in line
        for m in [re.search(r"actual time=\S+ rows=(\d+).*?(?:Removed by Filter: (\d+))?$", line)]
        if m
    ]
    return max(scans)


def _window_halves_from_the_index(
    backend: str, conn: Connection, prepared: Prepared, messages: str, values: Any, windows: int
) -> None:
    """Each half of each of the statement's ``windows`` include windows is an index range of
    ``messages`` on (thread_id, createdAt) from the target, its thread and createdAt searched
    for as constants (no full read of the table anywhere in the statement)."""
    if backend == "sqlite":
        plan = [row[3] for row in prepared.run_variant(conn, "EXPLAIN QUERY PLAN " + prepared.sql,
                                                       values)]
        for bound in ("<", ">"):
            found = [line for line in plan if f"(thread_id=? AND createdAt{bound}?)" in line]
            assert len(found) == windows, plan
        assert not [line for line in plan if line.startswith(("SCAN mastra", "SCAN target"))]
        return
    if backend == "mariadb":
        accesses = [a for a in _table_accesses(conn, prepared, values)
                    if a.get("table_name") in (messages, "target")]
        ranges = [a for a in accesses if a["access_type"] == "range"
                  and a.get("used_key_parts", [])[:2] == ["thread_id", "createdAt"]]
        assert len(ranges) == 2 * windows, accesses
        assert not [a for a in accesses if a["access_type"] == "ALL"], accesses
        return
    lines = [line for (line,) in prepared.run_variant(conn, "EXPLAIN " + prepared.sql, values)]
    searched = re.compile(
        r'Index Cond: \(\(thread_id = (\$\d+|\(InitPlan \d+\)\.col1)\) AND \("createdAt" ([<>])='
    )
    bounds = sorted(m.group(2) for line in lines for m in [searched.search(line)] if m)
    assert bounds == ["<"] * windows + [">"] * windows, lines
    assert not [line for line in lines if "Seq Scan on " + messages in line], lines


async def _store_with_thread(url: str, thread_id: str, messages: int) -> SqlStore:
    """The store of ``url``, initialized, holding thread ``thread_id`` of ``messages`` messages
    ``m00000``, ``m00001``, ... a second apart from ``EPOCH``; the caller closes it."""
    store = open_store(url)
    assert isinstance(store, SqlStore)
    try:
        await store.init()
        await store.memory.save_thread(thread=Thread(id=thread_id, resource_id="r"))
        for start in range(0, messages, 200):
            await store.memory.save_messages(
                messages=[
                    Message(
                        id=f"m{i:05d}", thread_id=thread_id, role="user",
                        content={"format": 2, "parts": [{"type": "text", "text": "x"}]},
                        created_at=EPOCH + timedelta(seconds=i),
                    )
                    for i in range(start, min(messages, start + 200))
                ]
            )
    except BaseException:
        await store.close()
        raise
    return store


@pytest.mark.parametrize("backend", BACKENDS)
def test_long_thread_reads_stop_at_the_page(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = sql_store_url(backend, request, tmp_path)  # outside the event loop

    async def go() -> None:
        store = await _store_with_thread(url, "long", THREAD)
        try:
            memory = store.memory
            newest = OrderBy(field="createdAt", direction="DESC")
            newest_ids = [f"m{i:05d}" for i in range(THREAD - 1, THREAD - 21, -1)]
            window_ids = {
                target: [f"m{i:05d}" for i in range(target - 2, target + 3)] for target in TARGETS
            }
            includes = [
                {"id": f"m{target:05d}", "with_previous_messages": 2, "with_next_messages": 2}
                for target in TARGETS
            ]
            page = await memory.list_messages(
                thread_id="long", per_page=20, include_total=False, order_by=newest
            )
            assert [m.id for m in page.items] == newest_ids
            page = await memory.list_messages(
                thread_id="long", per_page=20, include_total=False, order_by=newest,
                include=includes,
            )
            ids = [m.id for m in page.items]
            assert ids[:20] == newest_ids
            assert sorted(ids[20:]) == sorted(i for w in window_ids.values() for i in w)
            alone = await memory.list_messages(thread_id="long", per_page=0, include=includes[1:2])
            assert [m.id for m in alone.items] == window_ids[TARGETS[1]]

            db = store.database
            compiled = len(db.statements)
            assert isinstance(memory, SqlMemory)
            # The statements those calls ran, from the cache: had their shape differed, a new
            # one would be compiled here ("limit": the most rows a part of one returns).
            halves = {
                f"{key}{w}": value
                for w, target in enumerate(TARGETS)
                for key, value in (("mid", f"m{target:05d}"), ("before", 2), ("after", 2))
            }
            # The page and the three windows in one statement, as list_messages reads them
            # where the dialect does (``one_statement_listing``).
            together = memory._listing((1, False, (), True, False), len(TARGETS))
            if db.dialect.one_statement_listing:
                assert len(db.statements) == compiled, "not the statements list_messages ran"
            statements: dict[str, tuple[Prepared, dict[str, Any]]] = {
                # Checked first, on every engine: once it had run on a connection, MariaDB
                # read a window alone (below) from its thread's far end there too, unless
                # each half is held to its index (``SqlDialect.through_index``).
                "newest 20 and three windows": (
                    together, {"v0": "long", "offset": 0, "limit": 21, **halves}
                ),
                "newest 20": (
                    memory._messages_page(1, False, (), True, True),
                    {"v0": "long", "offset": 0, "limit": 21},
                ),
                # The target, its thread's owner and both halves in one statement.
                "2 before, 2 after": (
                    memory._listing(None, 1),
                    {"mid0": f"m{TARGETS[1]:05d}", "before0": 2, "after0": 2, "limit": 2},
                ),
            }
            windows = {"newest 20 and three windows": len(TARGETS), "2 before, 2 after": 1}
            assert len(db.statements) == compiled + (not db.dialect.one_statement_listing), (
                "not the statements list_messages ran"
            )
            analyze = "ANALYZE TABLE {}" if backend == "mariadb" else "ANALYZE {}"
            table = db.engine.dialect.identifier_preparer.format_table(db.tables["messages"])

            def check(conn: Connection) -> dict[Any, int]:
                result = conn.exec_driver_sql(analyze.format(table))
                if result.returns_rows:
                    result.fetchall()
                for key, n in windows.items():
                    listing, values = statements[key]
                    _window_halves_from_the_index(
                        backend, conn, listing, db.tables["messages"].name, values, n
                    )
                if backend == "sqlite":
                    return {}  # SQLite reports no rows read: the index ranges are the check
                return {
                    key: _rows_read(backend, conn, prepared, values)
                    for key, (prepared, values) in statements.items()
                }

            read = await db.run(check, write=True)
            for key, (_, values) in statements.items() if backend != "sqlite" else ():
                # The rows returned, plus the one that ends the scan (a tie-break filter).
                assert read[key] <= values["limit"] + 2, (key, read[key])
            if backend == "postgres":
                # The plan the statistics can switch to: over Mastra's (thread_id, createdAt
                # DESC) alone the id tie-break needs a sort, incremental (stops early) or,
                # where the planner estimates few rows, full (reads every row past the
                # target). Ruling the incremental one out shows which the index leaves.
                def without_incremental_sort(conn: Connection) -> dict[Any, int]:
                    conn.exec_driver_sql("SET LOCAL enable_incremental_sort = off")
                    return {
                        key: _rows_read(backend, conn, prepared, values)
                        for key, (prepared, values) in statements.items()
                    }

                read = await db.run(without_incremental_sort, write=True)
                for key, (_, values) in statements.items():
                    assert read[key] <= values["limit"] + 2, ("no incremental sort", key, read[key])
        finally:
            await store.close()

    asyncio.run(go())



@pytest.mark.parametrize("backend", BACKENDS)
def test_a_window_without_its_index(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Without the messages' (thread_id, createdAt) index (a damaged or hand-made database),
    an include window is still read right where the optimizer picks the plan (SQLite,
    PostgreSQL: more rows read). MariaDB's window halves name the index (``through_index``),
    so there the read is refused, as a ``SchemaMismatchError`` naming the index and the
    command that prints its ``CREATE INDEX`` (docs/operations.md), not the server's bare
    message."""
    url = sql_store_url(backend, request, tmp_path)  # outside the event loop

    async def go() -> None:
        store = await _store_with_thread(url, "t", 10)
        try:
            memory = store.memory
            db = store.database
            messages = db.tables["messages"]

            def drop_indexes(conn: Connection) -> None:
                # Index objects of a table of their own: one made on the store's table would
                # join it (shared by every store of the process) and be created by later inits.
                alone = sa.Table(
                    messages.name, sa.MetaData(), sa.Column("thread_id"), schema=messages.schema
                )
                for found in sa.inspect(conn).get_indexes(messages.name, schema=messages.schema):
                    index = sa.Index(found["name"], alone.c.thread_id)
                    conn.execute(sa.schema.DropIndex(index))
                assert not sa.inspect(conn).get_indexes(messages.name, schema=messages.schema)

            await db.run(drop_indexes, write=True)
            include = [{"id": "m00005", "with_previous_messages": 2, "with_next_messages": 2}]
            if backend != "mariadb":
                page = await memory.list_messages(thread_id="t", per_page=0, include=include)
                assert [m.id for m in page.items] == [f"m{i:05d}" for i in range(3, 8)]
                return
            with pytest.raises(SchemaMismatchError) as refused:
                await memory.list_messages(thread_id="t", per_page=0, include=include)
            message = str(refused.value)
            assert f"Key '{db.prefix}messages_thread_id_createdat_idx' doesn't exist" in message
            assert "composite-store inspect URL" in message and "CREATE INDEX" in message
        finally:
            await store.close()

    asyncio.run(go())
