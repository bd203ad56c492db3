"""Connections held between operations on the async servers (``sql.engine.connections``).

Against the real PostgreSQL and MariaDB servers: an operation reuses the previous one's
connection; a connection the server dropped is found (by the ping after idling, or by the
first statement of a hot one, which is then run again once on a new connection, writes
included, applied once); the pool's size and timeout still bound concurrency; a cancelled
operation's connection is never reused.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.engine import Connection

from composite_store.errors import BackendUnavailableError
from composite_store.records.memory import Thread
from composite_store.sql.database import SqlDatabase
from composite_store.sql.store import SqlStore
from tests.support.sql_stores import run_on_store, scalar

BACKENDS = ["postgres", "mariadb"]
#: The server's id of the session and how another session ends it, per backend.
SESSION_ID = {"postgres": "SELECT pg_backend_pid()", "mariadb": "SELECT CONNECTION_ID()"}
KILL = {"postgres": "SELECT pg_terminate_backend({})", "mariadb": "KILL {}"}
SLEEP = {"postgres": "SELECT pg_sleep({})", "mariadb": "SELECT SLEEP({})"}


def _url(backend: str, request: pytest.FixtureRequest, **options: Any) -> str:
    from tests.support.servers import mariadb, postgres

    module = {"postgres": postgres, "mariadb": mariadb}[backend]
    url: str = module.session_url(request)
    for key, value in options.items():
        url += f"{'&' if '?' in url else '?'}{key}={value}"
    return url


async def _kill(db: SqlDatabase, backend: str, session: int) -> None:
    """End ``session`` from a connection of its own (outside the held ones)."""
    async with db.engine.connect() as other:  # type: ignore[union-attr]
        await other.exec_driver_sql(KILL[backend].format(int(session)))
        await other.commit()
    await asyncio.sleep(0.2)  # the server closes the socket asynchronously


@pytest.mark.parametrize("backend", BACKENDS)
def test_operations_reuse_one_connection(backend: str, request: pytest.FixtureRequest) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        sessions = {await db.run(scalar(SESSION_ID[backend])) for _ in range(5)}
        assert len(sessions) == 1

    run_on_store(_url(backend, request), test)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("idle", [True, False], ids=["pinged-after-idle", "hot"])
def test_a_dropped_connection_is_replaced(
    backend: str, idle: bool, request: pytest.FixtureRequest
) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        first = await db.run(scalar(SESSION_ID[backend]))
        assert db._held is not None
        # Idle: the ping before use finds the drop. Hot: the read's first statement does,
        # and the read runs again on a new connection.
        db._held.ping_after = 0.0 if idle else 3600.0
        await _kill(db, backend, first)
        runs = 0

        def session(conn: Connection) -> Any:
            nonlocal runs
            runs += 1
            return scalar(SESSION_ID[backend])(conn)

        # single: no BEGIN before the read (which would find the drop before ``session`` runs).
        second = await db.run(session, single=True)
        assert second != first
        assert runs == (1 if idle else 2)

    run_on_store(_url(backend, request), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_write_on_a_dropped_connection_is_applied_once(
    backend: str, request: pytest.FixtureRequest
) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        memory = store.memory
        await memory.dangerously_clear_all()
        assert db._held is not None
        db._held.ping_after = 3600.0
        await _kill(db, backend, await db.run(scalar(SESSION_ID[backend])))
        await memory.save_thread(thread=Thread(id="t1", resource_id="r1", title="kept"))
        page = await memory.list_threads()
        assert [(t.id, t.title) for t in page.items] == [("t1", "kept")]

    run_on_store(_url(backend, request), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrency_stays_within_the_pool(backend: str, request: pytest.FixtureRequest) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        pool = db.engine.pool
        most = 0

        def slow(conn: Connection) -> Any:
            nonlocal most
            most = max(most, pool.checkedout())  # type: ignore[attr-defined]
            return conn.exec_driver_sql(SLEEP[backend].format(0.05)).scalar()

        await asyncio.gather(*(db.run(slow) for _ in range(12)))
        assert most == 3  # pool_size 2 + max_overflow 1: every slot used, none more
        assert pool.checkedout() <= 3  # type: ignore[attr-defined]

    run_on_store(_url(backend, request, pool_size=2, max_overflow=1), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_waiting_for_a_connection_times_out(backend: str, request: pytest.FixtureRequest) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        holder = asyncio.ensure_future(db.run(scalar(SLEEP[backend].format(2))))
        await asyncio.sleep(0.3)
        with pytest.raises(BackendUnavailableError, match="busy"):
            await db.run(scalar("SELECT 1"))
        await holder
        assert await db.run(scalar("SELECT 1")) == 1

    run_on_store(_url(backend, request, pool_size=1, max_overflow=0, pool_timeout=0.5), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cancelled_operation_leaves_no_connection_behind(
    backend: str, request: pytest.FixtureRequest
) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        first = await db.run(scalar(SESSION_ID[backend]))
        task = asyncio.ensure_future(db.run(scalar(SLEEP[backend].format(5))))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The interrupted connection was dropped, not put back mid-statement; the pool's only
        # slot is free again.
        second = await db.run(scalar(SESSION_ID[backend]))
        assert second != first
        assert db.engine.pool.checkedout() == 1  # type: ignore[attr-defined]

    run_on_store(_url(backend, request, pool_size=1, max_overflow=0, pool_timeout=2), test)
