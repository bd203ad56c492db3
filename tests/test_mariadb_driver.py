"""How the MariaDB adapter drives asyncmy (``composite_store_mysql.cursor``), on the real server.

Statements with parameters run as server-side prepared statements (the connection's statement
cache); a read of every row streams from an unbuffered cursor, and whatever ends the stream
early leaves the connection ready for its next statement (drained) or, when the operation was
interrupted, never reused.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Connection

from composite_store.records.memory import Message, Thread
from composite_store.sql.database import SqlDatabase
from composite_store.sql.store import SqlStore
from tests.support.sql_stores import run_on_store, scalar

#: The rows a stream reads at a time in these tests, and a result several times as long.
CHUNK, ROWS = 100, 1000
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def _run(
    request: pytest.FixtureRequest,
    test: Callable[[SqlStore, SqlDatabase], Awaitable[None]],
    query: str = "",
) -> None:
    from tests.support.servers import mariadb

    # One connection: every operation of a test meets what the previous one left.
    url = mariadb.session_url(request) + "?pool_size=1&max_overflow=0&pool_timeout=5" + query
    run_on_store(url, test)


def _stream(db: SqlDatabase, conn: Connection, sql: str) -> Any:
    return db.dialect.stream_prepared(conn, sql, [], CHUNK)


SEQUENCE = f"SELECT seq FROM seq_1_to_{ROWS}"


@pytest.mark.parametrize(("query", "prepared"), [("", True), ("&stmt_cache_size=0", False)])
def test_statements_with_parameters_run_prepared(
    request: pytest.FixtureRequest, query: str, prepared: bool
) -> None:
    status = "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = %s"

    def executed(conn: Connection) -> int:
        return int(conn.exec_driver_sql(status, ("COM_STMT_EXECUTE",)).scalar())  # type: ignore[arg-type]

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        await store.memory.save_thread(thread=Thread(id="t1", resource_id="u1", title="a"))
        before = await db.run(executed)
        for _ in range(3):
            assert await store.memory.get_thread_by_id(thread_id="t1") is not None
        after = await db.run(executed)
        if prepared:  # the three reads, and the status read itself
            assert after - before >= 4
        else:  # the URL turned the statement cache off
            assert after == before

    _run(request, test, query)


def test_every_message_of_a_long_thread_is_read_in_order(request: pytest.FixtureRequest) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        memory = store.memory
        await memory.save_thread(thread=Thread(id="long", resource_id="u1", title="a"))
        total = 2500  # more than one chunk of a stream (STREAM_CHUNK)
        for start in range(0, total, 500):
            await memory.save_messages(
                messages=[
                    Message(
                        id=f"m{i:05d}",
                        thread_id="long",
                        resource_id="u1",
                        role="user",
                        content={"format": 2, "parts": [{"type": "text", "text": f"{i}"}]},
                        created_at=EPOCH + timedelta(seconds=i),
                    )
                    for i in range(start, start + 500)
                ]
            )
        page = await memory.list_messages(thread_id="long", per_page=False)
        assert [m.id for m in page.items] == [f"m{i:05d}" for i in range(total)]
        assert page.total == total
        assert page.items[-1].content.parts == [{"type": "text", "text": f"{total - 1}"}]

    _run(request, test)


def test_a_stream_reads_its_rows_as_they_are_needed(request: pytest.FixtureRequest) -> None:
    def first_chunk(db: SqlDatabase) -> Callable[[Connection], tuple[int, bool, int]]:
        def read(conn: Connection) -> tuple[int, bool, int]:
            chunks = _stream(db, conn, SEQUENCE)
            first = next(chunks)
            driver: Any = conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]
            pending = bool(driver._result.unbuffered_active)  # the rest still on the socket
            rest = sum(len(chunk) for chunk in chunks)
            return len(first), pending, rest

        return read

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        assert await db.run(first_chunk(db), single=True) == (CHUNK, True, ROWS - CHUNK)

    _run(request, test)


def test_a_stream_closed_early_leaves_the_connection_ready(request: pytest.FixtureRequest) -> None:
    def stop_early(db: SqlDatabase) -> Callable[[Connection], int]:
        def read(conn: Connection) -> int:
            chunks = _stream(db, conn, SEQUENCE)
            next(chunks)
            chunks.close()
            return int(conn.exec_driver_sql("SELECT 41 + 1").scalar())  # type: ignore[arg-type]

        return read

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = await db.run(scalar("SELECT CONNECTION_ID()"))
        with warnings.catch_warnings():
            # asyncmy warns when a statement finds an unread result before it.
            warnings.simplefilter("error")
            assert await db.run(stop_early(db), single=True) == 42
        assert await db.run(scalar("SELECT CONNECTION_ID()")) == session

    _run(request, test)


def test_a_failure_while_reading_a_stream_drains_it(request: pytest.FixtureRequest) -> None:
    class Refused(Exception):
        pass

    def fail_midway(db: SqlDatabase) -> Callable[[Connection], None]:
        def read(conn: Connection) -> None:
            for chunk in _stream(db, conn, SEQUENCE):
                if chunk[0][0] > 2 * CHUNK:
                    raise Refused

        return read

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = await db.run(scalar("SELECT CONNECTION_ID()"))
        with pytest.raises(Refused):
            await db.run(fail_midway(db), single=True)
        assert await db.run(scalar("SELECT CONNECTION_ID()")) == session
        assert await db.run(scalar("SELECT 41 + 1")) == 42

    _run(request, test)


def test_an_interrupted_stream_leaves_no_connection_behind(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from composite_store_mysql import cursor

    drained: list[object] = []
    drain = cursor._drain
    monkeypatch.setattr(
        cursor, "_drain", lambda conn, found: (drained.append(found), drain(conn, found))[1]
    )
    # Rows larger than the server's network buffer, one a second: the first ones arrive, and the
    # cancellation finds the stream waiting for the next.
    slow = "SELECT REPEAT('x', 100000), SLEEP(1) FROM seq_1_to_30"

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = await db.run(scalar("SELECT CONNECTION_ID()"))
        task = asyncio.ensure_future(
            db.run(lambda conn: list(_stream(db, conn, slow)), single=True)
        )
        await asyncio.sleep(2.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Dropped, not drained (reading 30 slow rows) and put back.
        assert drained == []
        assert await db.run(scalar("SELECT CONNECTION_ID()")) != session
        assert db.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
        assert await db.run(scalar("SELECT 41 + 1")) == 42

    _run(request, test)
