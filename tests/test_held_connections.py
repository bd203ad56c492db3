"""Connections held between operations on the async servers (``sql.engine.connections``).

Against the real PostgreSQL and MariaDB servers: an operation reuses the previous one's
connection; a connection the server dropped is found (by the ping after idling, or by the
first statement of a hot one, which is then run again once on a new connection, writes
included, applied once); the pool's size and timeout still bound concurrency; a cancelled
operation's connection is never reused. The same holds for operations of one prepared
statement (``SqlDatabase.fetch``/``execute``), which PostgreSQL awaits on the driver directly,
with no greenlet (``SqlDialect.driver_executor``), and MariaDB through ``run``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Executable

from composite_store.errors import BackendUnavailableError, ConflictError
from composite_store.records.memory import Thread
from composite_store.sql.database import SqlDatabase
from composite_store.sql.engine import Prepared
from composite_store.sql.store import SqlStore
from tests.support.sql_stores import run_on_store, scalar

BACKENDS = ["postgres", "mariadb"]
#: The server's id of the session and how another session ends it, per backend.
SESSION_ID = {"postgres": "SELECT pg_backend_pid()", "mariadb": "SELECT CONNECTION_ID()"}
KILL = {"postgres": "SELECT pg_terminate_backend({})", "mariadb": "KILL {}"}
SLEEP = {"postgres": "SELECT pg_sleep({})", "mariadb": "SELECT SLEEP({})"}
#: The same as SQL functions, for prepared statements.
SESSION_FUNCTION = {"postgres": "pg_backend_pid", "mariadb": "connection_id"}
SLEEP_FUNCTION = {"postgres": "pg_sleep", "mariadb": "sleep"}


def _select_function(name: str, *args: float) -> Executable:
    return sa.select(getattr(sa.func, name)(*(sa.literal(a) for a in args)))


def _prepared(db: SqlDatabase, name: str, *args: float) -> Prepared:
    """``SELECT name(*args)`` from the database's statement cache, as domains prepare theirs."""
    return db.statements.get(_select_function, name, *args)


def _url(backend: str, request: pytest.FixtureRequest, **options: Any) -> str:
    from tests.support.servers import mariadb, postgres

    module = {"postgres": postgres, "mariadb": mariadb}[backend]
    url: str = module.session_url(request)
    for key, value in options.items():
        url += f"{'&' if '?' in url else '?'}{key}={value}"
    return url


def _count_calls(db: SqlDatabase, method: str) -> list[int]:
    """Count the calls of ``db``'s coroutine method ``method`` from now on, into the one-item
    list returned."""
    calls = [0]
    wrapped = getattr(db, method)

    async def counted(*args: Any) -> Any:
        calls[0] += 1
        return await wrapped(*args)

    setattr(db, method, counted)
    return calls


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
def test_a_statement_on_a_dropped_connection_runs_again_on_a_new_one(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """``fetch`` of one prepared statement (the direct path on PostgreSQL) finds a hot
    connection dropped by its statement and runs it once more on a new connection."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = _prepared(db, SESSION_FUNCTION[backend])
        [(first,)] = await db.fetch(session)
        assert [tuple(r) for r in await db.fetch(session)] == [(first,)]  # held: the same one
        assert db._held is not None
        db._held.ping_after = 3600.0
        await _kill(db, backend, first)
        [(second,)] = await db.fetch(session)
        assert second != first

    run_on_store(_url(backend, request), test)


@pytest.mark.parametrize("idle", [True, False], ids=["pinged-after-idle", "hot"])
def test_a_statement_of_its_own_pings_a_connection_that_sat_idle(
    idle: bool, request: pytest.FixtureRequest
) -> None:
    """The direct path takes an idle connection without awaiting only when it needs no check
    (``HeldConnections.take``): one idle for longer than ``ping_after`` is pinged first, so
    the drop is found before the statement, which then runs once; a hot one is found dropped
    by the statement, which runs again."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = _prepared(db, SESSION_FUNCTION["postgres"])
        [(first,)] = await db.fetch(session)
        assert db._held is not None
        db._held.ping_after = 0.0 if idle else 3600.0
        await _kill(db, "postgres", first)
        tries = _count_calls(db, "_run_direct")
        [(second,)] = await db.fetch(session)
        assert second != first
        assert tries == [1 if idle else 2]

    run_on_store(_url("postgres", request), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_connection_older_than_recycle_is_replaced(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """``pool_recycle``: a connection that old goes back to SQLAlchemy's pool (which replaces
    it) before an operation, on the direct path too."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = _prepared(db, SESSION_FUNCTION[backend])
        [(first,)] = await db.fetch(session)
        [(again,)] = await db.fetch(session)
        await asyncio.sleep(1.2)
        [(second,)] = await db.fetch(session)
        assert again == first and second != first

    run_on_store(_url(backend, request, pool_recycle=1), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_idle_connections_beyond_the_pool_size_are_returned(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """After a burst, connections beyond ``pool_size`` that stayed idle for ``trim_after`` go
    back to SQLAlchemy's pool when the next operation ends."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        held = db._held
        assert held is not None
        sleep = _prepared(db, SLEEP_FUNCTION[backend], 0.1)
        await asyncio.gather(*(db.fetch(sleep) for _ in range(3)))
        burst = len(held._idle)
        held.trim_after = 0.0
        await db.fetch(_prepared(db, SESSION_FUNCTION[backend]))
        assert (burst, len(held._idle)) == (3, 1)

    run_on_store(_url(backend, request, pool_size=1, max_overflow=2), test)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("state", ["invalidated", "in a transaction"])
def test_a_connection_lost_or_mid_transaction_is_not_given_back_as_is(
    backend: str, state: str, request: pytest.FixtureRequest
) -> None:
    """``HeldConnections.give_back`` (the direct path's release without an await) leaves a
    connection the driver lost, or one left in a transaction, to ``release``, which drops
    it: neither may serve the next operation."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        held = db._held
        assert held is not None
        conn = await held.acquire()
        if state == "invalidated":
            await conn.invalidate()
        else:
            await conn.begin()
        assert not held.give_back(conn)
        await held.release(conn, interrupted=False)
        assert held._idle == [] and db.engine.pool.checkedout() == 0  # type: ignore[attr-defined]

    run_on_store(_url(backend, request), test)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_failed_statement_raises_our_error_and_keeps_the_connection(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """A statement the server refuses (a duplicate key) raises ConflictError through
    ``execute``, as through ``run``, and the connection serves the next operation."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        await store.memory.dangerously_clear_all()
        await store.memory.save_thread(thread=Thread(id="t1", resource_id="r1", title="t"))
        [(first,)] = await db.fetch(_prepared(db, SESSION_FUNCTION[backend]))
        insert = db.statements.get(_insert_thread, db)
        values = {
            "id": "t1", "resourceId": "r1", "title": "again", "metadata": None,
            "createdAt": "2026-01-01 00:00:00", "updatedAt": "2026-01-01 00:00:00",
        }
        with pytest.raises(ConflictError):
            await db.execute(insert, values)
        [(after,)] = await db.fetch(_prepared(db, SESSION_FUNCTION[backend]))
        assert after == first

    run_on_store(_url(backend, request), test)


def _insert_thread(db: SqlDatabase) -> Executable:
    tbl = db.tables["threads"]
    return tbl.insert().values(
        {c: sa.bindparam(c) for c in ("id", "resourceId", "title", "createdAt", "updatedAt")}
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cancelled_statement_leaves_no_connection_behind(
    backend: str, request: pytest.FixtureRequest
) -> None:
    async def test(store: SqlStore, db: SqlDatabase) -> None:
        session = _prepared(db, SESSION_FUNCTION[backend])
        [(first,)] = await db.fetch(session)
        task = asyncio.ensure_future(db.fetch(_prepared(db, SLEEP_FUNCTION[backend], 5)))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        [(second,)] = await db.fetch(session)
        assert second != first
        assert db.engine.pool.checkedout() == 1  # type: ignore[attr-defined]

    run_on_store(_url(backend, request, pool_size=1, max_overflow=0, pool_timeout=2), test)


def test_one_statement_operations_await_the_driver_directly_on_postgres(
    request: pytest.FixtureRequest,
) -> None:
    """On PostgreSQL the operations of one statement (point reads, single upserts, a message
    batch, pages with their totals, an include window, a span batch and a trace read) run no
    greenlet: what the greenlet path costs around one statement
    was a fifth of a point read's time (docs/benchmarks.md)."""

    async def test(store: SqlStore, db: SqlDatabase) -> None:
        memory, workflows = store.memory, store.workflows
        await memory.dangerously_clear_all()
        greenlet_runs = _count_calls(db, "_in_greenlet")
        await memory.save_thread(thread=Thread(id="t1", resource_id="r1", title="t"))
        await memory.save_messages(
            messages=[{"id": "m1", "thread_id": "t1", "role": "user", "content": "hi"}]
        )
        assert (await memory.get_thread_by_id(thread_id="t1")) is not None
        await memory.update_resource(resource_id="r1", working_memory="# notes")
        assert (await memory.get_resource_by_id(resource_id="r1")) is not None
        await workflows.persist_workflow_snapshot(workflow_name="w", run_id="r", snapshot={})
        assert await workflows.load_workflow_snapshot(workflow_name="w", run_id="r") == {}
        newest = await memory.list_messages(thread_id="t1", per_page=20, include_total=False)
        counted = await memory.list_messages(
            thread_id="t1", per_page=20, include=[{"id": "m1", "with_previous_messages": 1}]
        )
        threads = await memory.list_threads(filter={"resource_id": "r1"}, per_page=10)
        past_the_end = await memory.list_threads(filter={"resource_id": "r1"}, page=3, per_page=10)
        runs = await workflows.list_workflow_runs(workflow_name="w", per_page=10)
        assert [m.id for m in newest.items] == [m.id for m in counted.items] == ["m1"]
        assert (counted.total, threads.total, past_the_end.total, runs.total) == (1, 1, 1, 1)
        observability = store.get("observability")
        assert observability is not None
        await observability.batch_create_spans(
            records=[
                {"trace_id": "tr1", "span_id": f"s{i}", "name": "step", "span_type": "tool_call",
                 "started_at": "2026-01-01T00:00:00Z"}
                for i in range(3)
            ]
        )
        trace = await observability.get_trace(trace_id="tr1")
        assert trace is not None and len(trace.spans) == 3
        assert greenlet_runs == [0]

    run_on_store(_url("postgres", request), test)


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
