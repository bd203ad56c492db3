"""composite_store_postgres.wire: statements of their own run straight through libpq, and give
what psycopg's cursor gives (rows, counts, errors), prepared as psycopg would prepare them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
import pytest
from composite_store_postgres import PostgresStore
from composite_store_postgres.cursor import LeanAsyncConnection, connect
from composite_store_postgres.wire import StatementRunner

T = TypeVar("T")


def _run(plain_url: str, body: Callable[[LeanAsyncConnection, str], Awaitable[T]]) -> T:
    """``body(conn, table)`` on a connection of the adapter's (autocommit, as the direct path
    runs), with a table ``table`` of its own: ``(id int primary key, name text, doc jsonb,
    at timestamptz)`` holding rows 1-3."""

    async def main() -> T:
        conn = await connect(plain_url, autocommit=True)
        table = f"wire_{uuid.uuid4().hex[:12]}"
        try:
            await conn.execute(
                f"CREATE TABLE {table} (id int PRIMARY KEY, name text, doc jsonb, at timestamptz)"
            )
            await conn.execute(
                f"INSERT INTO {table} VALUES"
                " (1, 'é', '{\"a\": [1, 2.5]}', '2026-01-02T03:04:05Z'),"
                " (2, NULL, NULL, NULL), (3, 'c', '\"s\"', '1999-12-31T23:59:59.999Z')"
            )
            return await asyncio.wait_for(body(conn, table), 30)
        finally:
            if not conn.broken:
                await conn.execute(f"DROP TABLE IF EXISTS {table}")
            await conn.close()

    return asyncio.run(main())


async def _ours(conn: LeanAsyncConnection) -> list[str]:
    """The runner's statements prepared on the server (psycopg's are ``_pg3_*``)."""
    cur = await conn.execute(
        "SELECT name FROM pg_prepared_statements WHERE starts_with(name, '_cs_') ORDER BY name",
        prepare=False,
    )
    return [r[0] for r in await cur.fetchall()]


async def _cursor(
    conn: LeanAsyncConnection, sql: str, params: Sequence[Any], fetch: bool
) -> tuple[list[Any] | None, int]:
    """What psycopg's raw cursor gives for the same statement."""
    cur = psycopg.AsyncRawCursor(conn)
    try:
        await cur.execute(sql, params)
        rows = await cur.fetchall() if fetch else None
        return rows, cur.rowcount
    finally:
        await cur.close()


_CASES: list[tuple[str, list[Any], bool]] = [
    ("SELECT id, name, doc, at FROM {t} ORDER BY id", [], True),
    ("SELECT id, name, doc, at FROM {t} WHERE id = $1", [1], True),
    ("SELECT id FROM {t} WHERE id = $1", [99], True),
    ("SELECT $1::text, $2::int, $3::jsonb, $4::timestamptz", ["x", None, '{"k": 1}', None], True),
    ("SELECT name FROM {t} WHERE name = $1", ["é"], True),
    ("UPDATE {t} SET name = name WHERE id > $1", [1], False),
    ("UPDATE {t} SET name = name WHERE id = $1 RETURNING id, name", [3], True),
    ("DELETE FROM {t} WHERE id = $1", [99], False),
    ("INSERT INTO {t} (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = "
     "excluded.name", [3, "c"], False),
]


@pytest.mark.parametrize("threshold", [None, 0, 2])
def test_rows_and_counts_are_the_cursors(plain_url: str, threshold: int | None) -> None:
    """Every statement, run unprepared (threshold None), prepared from its first run (0), and
    across its preparation (third run, with 2), gives the rows and the count psycopg's cursor
    gives."""

    async def body(conn: LeanAsyncConnection, table: str) -> None:
        conn.prepare_threshold = threshold
        runner = conn.statements()
        for sql, params, fetch in _CASES:
            statement = sql.format(t=table)
            expected = await _cursor(conn, statement, params, fetch)
            for _ in range(4):
                assert await runner.run(statement, params, fetch, None) == expected, statement
        assert (runner.prepared > 0) == (threshold is not None)

    _run(plain_url, body)


def test_a_statement_is_prepared_after_threshold_runs(plain_url: str) -> None:
    """As psycopg prepares its own: once ``prepare_threshold`` runs preceded (the fourth run
    with 3), from then on under one name; never with ``prepare=False`` (PLAN_EACH_CALL
    statements)."""

    async def body(conn: LeanAsyncConnection, table: str) -> list[list[str]]:
        conn.prepare_threshold = 3
        runner = conn.statements()
        seen = []
        for _ in range(5):
            await runner.run(f"SELECT name FROM {table} WHERE id = $1", [1], True, None)
            await runner.run(f"SELECT doc FROM {table} WHERE id = $1", [1], True, False)
            seen.append(await _ours(conn))
        return seen

    seen = _run(plain_url, body)
    assert seen[0] == seen[1] == seen[2] == []
    assert len(seen[3]) == 1 and seen[4] == seen[3]


def test_at_most_prepared_max_statements_stay_prepared(plain_url: str) -> None:
    """Past ``prepared_max`` the least recently used statement is deallocated on the server,
    and runs (correctly) unprepared until it is prepared again."""

    async def body(conn: LeanAsyncConnection, table: str) -> tuple[list[str], int]:
        conn.prepare_threshold, conn.prepared_max = 0, 2
        runner = conn.statements()
        # 0 and 1 prepared; 0 used again; 2 evicts the least recently used: 1, not 0.
        for i in (0, 1, 0, 2):
            sql = f"SELECT {i} + id FROM {table} WHERE id = $1"
            rows, _ = await runner.run(sql, [1], True, None)
            assert rows == [(i + 1,)]
        cur = await conn.execute(
            "SELECT statement FROM pg_prepared_statements WHERE starts_with(name, '_cs_')"
            " ORDER BY statement",
            prepare=False,
        )
        return [r[0] for r in await cur.fetchall()], runner.prepared

    on_server, prepared = _run(plain_url, body)
    assert prepared == 2
    assert [s.split(" + ")[0] for s in on_server] == ["SELECT 0", "SELECT 2"]


@pytest.mark.parametrize(("prepared_max", "kept"), [(0, 0), (None, 3)])
def test_prepared_max_is_read_as_psycopg_reads_it(
    plain_url: str, prepared_max: int | None, kept: int
) -> None:
    """``prepared_max=0`` keeps no statement prepared (each is deallocated at once, and still
    runs); None keeps them all."""

    async def body(conn: LeanAsyncConnection, table: str) -> int:
        conn.prepare_threshold, conn.prepared_max = 0, prepared_max
        runner = conn.statements()
        for i in range(3):
            sql = f"SELECT {i} + id FROM {table} WHERE id = $1"
            assert (await runner.run(sql, [1], True, None))[0] == [(i + 1,)]
        assert runner.prepared == kept
        return len(await _ours(conn))

    assert _run(plain_url, body) == kept


def test_a_statement_whose_prepared_form_is_gone_runs_again(plain_url: str) -> None:
    """``DEALLOCATE ALL`` (what psycopg sends after a rollback when it prepared statements of
    its own) or ``DISCARD ALL`` removes the runner's statements too: the next run finds its
    name unknown, ran nothing, and runs once more unprepared, then prepares again."""

    async def body(conn: LeanAsyncConnection, table: str) -> list[Any]:
        conn.prepare_threshold = 0
        runner = conn.statements()
        sql = f"SELECT name FROM {table} WHERE id = $1"
        results = [(await runner.run(sql, [1], True, None))[0]]
        for command in ("DEALLOCATE ALL", "DISCARD ALL"):
            await conn.execute(command, prepare=False)
            results.append((await runner.run(sql, [1], True, None))[0])
            results.append((await runner.run(sql, [3], True, None))[0])
        results.append(len(await _ours(conn)))
        return results

    assert _run(plain_url, body) == [[("é",)], [("é",)], [("c",)], [("é",)], [("c",)], 1]


def test_a_statement_whose_plan_ddl_changed_runs_again(plain_url: str) -> None:
    """A prepared ``SELECT *`` whose table gained a column fails on the server ("cached plan
    must not change result type") without running: it is deallocated and runs once more,
    with the new column."""

    async def body(conn: LeanAsyncConnection, table: str) -> list[Any]:
        conn.prepare_threshold = 0
        runner = conn.statements()
        sql = f"SELECT * FROM {table} WHERE id = $1"
        seen: list[Any] = [(await runner.run(sql, [2], True, None))[0]]
        await conn.execute(f"ALTER TABLE {table} ADD COLUMN extra int DEFAULT 7")
        seen += [(await runner.run(sql, [2], True, None))[0], len(await _ours(conn))]
        seen += [(await runner.run(sql, [2], True, None))[0], len(await _ours(conn))]
        return seen

    before, after, left, again, prepared = _run(plain_url, body)
    assert before == [(2, None, None, None)]
    assert after == again == [(2, None, None, None, 7)]
    assert left == 0  # the stale statement deallocated
    assert prepared == 1  # and the statement prepared anew on its next run


@pytest.mark.parametrize("threshold", [None, 1])
def test_errors_are_psycopgs_and_the_connection_stays_usable(
    plain_url: str, threshold: int | None
) -> None:
    async def body(conn: LeanAsyncConnection, table: str) -> list[type[BaseException]]:
        conn.prepare_threshold = threshold
        runner = conn.statements()
        failures: list[type[BaseException]] = []
        for sql, params in (
            (f"INSERT INTO {table} (id) VALUES ($1)", [1]),
            (f"INSERT INTO {table} (id) VALUES ($1)", [1]),  # prepared, where it is
            (f"SELEC id FROM {table}", []),
            ("SELECT 1 / $1::int", [0]),
        ):
            with pytest.raises(psycopg.Error) as caught:
                await runner.run(sql, params, False, None)
            failures.append(type(caught.value))
        assert await runner.run(f"SELECT count(*) FROM {table}", [], True, None) == ([(3,)], 1)
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        return failures

    assert _run(plain_url, body) == [
        psycopg.errors.UniqueViolation,
        psycopg.errors.UniqueViolation,
        psycopg.errors.SyntaxError,
        psycopg.errors.DivisionByZero,
    ]


def test_a_statement_larger_than_the_socket_buffer_is_sent_whole(plain_url: str) -> None:
    """libpq's flush may leave part of a large statement unsent: the wait for writing goes to
    psycopg's own wait, and the reply is read as usual."""
    big = "x" * (8 * 1024 * 1024)

    async def body(conn: LeanAsyncConnection, table: str) -> Any:
        return await conn.statements().run("SELECT length($1::text)", [big], True, None)

    assert _run(plain_url, body) == ([(len(big),)], 1)


def test_no_result_is_kept_after_a_statement(plain_url: str) -> None:
    """The rows are loaded and the result let go: a page of 1,000 rows does not stay in
    memory for as long as the connection sits idle."""

    async def body(conn: LeanAsyncConnection, table: str) -> tuple[int, object]:
        runner = conn.statements()
        rows, _ = await runner.run("SELECT generate_series(1, $1::int)", [1000], True, None)
        return len(rows or ()), runner._tx.pgresult

    assert _run(plain_url, body) == (1000, None)


def test_a_cancelled_statement_is_cancelled_on_the_server(plain_url: str) -> None:
    """An interrupted wait goes to psycopg's, which cancels the query on the server before
    the cancellation reaches the caller."""
    marker = f"cs-wire-cancel-{uuid.uuid4().hex}"

    async def body(conn: LeanAsyncConnection, table: str) -> tuple[bool, bool]:
        task = asyncio.create_task(
            conn.statements().run(f"SELECT pg_sleep(30) /* {marker} */", [], True, None)
        )
        with psycopg.connect(plain_url, autocommit=True) as watcher:
            while not _running(watcher, marker):
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return _running(watcher, marker), conn.broken

    assert _run(plain_url, body) == (False, False)


def _running(watcher: psycopg.Connection, marker: str) -> bool:
    row = watcher.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
        "AND pid <> pg_backend_pid()",
        (f"%{marker}%",),
    ).fetchone()
    return bool(row and row[0])


def test_a_connection_the_server_ended_fails_as_a_disconnect(plain_url: str) -> None:
    """The next statement raises psycopg's OperationalError and leaves the connection broken
    (SQLAlchemy's psycopg dialect calls that a disconnect; the library reconnects)."""

    async def body(conn: LeanAsyncConnection, table: str) -> tuple[type[BaseException], bool]:
        runner = conn.statements()
        [(pid,)], _ = await runner.run("SELECT pg_backend_pid()", [], True, None)  # type: ignore[misc]
        with psycopg.connect(plain_url, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.3)
        with pytest.raises(psycopg.OperationalError) as caught:
            await runner.run("SELECT 1", [], True, None)
        return type(caught.value), conn.broken

    failure, broken = _run(plain_url, body)
    assert issubclass(failure, psycopg.OperationalError) and broken


@asynccontextmanager
async def _store(url: str) -> AsyncIterator[PostgresStore]:
    from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

    schema = await create_namespace(url)
    store = PostgresStore(store_url(url, schema), pool_size=1)
    try:
        await store.init()
        yield store
    finally:
        await store.close()
        await drop_namespace(url, schema)


def test_the_stores_statements_of_their_own_go_through_the_runner(url: str) -> None:
    """A point read, an upsert and a page of the library run on the connection's runner (its
    prepared statements are the ones on the server), with the records they always gave."""
    from composite_store import Resource, Thread

    async def main() -> tuple[list[str], Any, Any]:
        async with _store(url) as store:
            memory = store.memory
            at = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
            for i in range(8):
                await memory.save_resource(
                    resource=Resource(id="r1", working_memory=f"v{i}", metadata={"i": i},
                                      created_at=at, updated_at=at)
                )
                found = await memory.get_resource_by_id(resource_id="r1")
                await memory.save_thread(thread=Thread(id=f"t{i}", resource_id="r1"))
                page = await memory.list_threads(filter={"resource_id": "r1"}, per_page=5)
            runner = await memory.db.run(  # type: ignore[attr-defined]
                lambda conn: conn.connection.dbapi_connection.driver_connection._composite_runner,
                single=True,
            )
            assert isinstance(runner, StatementRunner)
            names = await memory.db.run(  # type: ignore[attr-defined]
                lambda conn: [
                    r[0]
                    for r in conn.exec_driver_sql(
                        "SELECT statement FROM pg_prepared_statements"
                        " WHERE starts_with(name, '_cs_')"
                    )
                ],
                single=True,
            )
            return names, found, page

    statements, found, page = asyncio.run(main())
    assert any("mastra_resources" in s and s.lstrip().startswith("SELECT") for s in statements)
    assert any("mastra_resources" in s and "INSERT" in s for s in statements)
    assert any("mastra_threads" in s and "INSERT" in s for s in statements)
    assert found.working_memory == "v7" and found.metadata == {"i": 7}
    assert found.created_at == datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert [t.id for t in page.items] == ["t7", "t6", "t5", "t4", "t3"] and page.total == 8


def test_a_connection_told_not_to_prepare_prepares_nothing(url: str) -> None:
    """``connect_args={"prepare_threshold": None}`` (psycopg's setting, for poolers that
    cannot keep prepared statements, such as PgBouncer in transaction mode before 1.21):
    the runner then never prepares."""
    from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

    async def main() -> tuple[int, str | None]:
        schema = await create_namespace(url)
        store = PostgresStore(
            store_url(url, schema), pool_size=1, connect_args={"prepare_threshold": None}
        )
        try:
            await store.init()
            memory = store.memory
            await memory.update_resource(resource_id="r1", working_memory="w")
            for _ in range(12):
                found = await memory.get_resource_by_id(resource_id="r1")
            prepared = await memory.db.run(  # type: ignore[attr-defined]
                lambda conn: conn.exec_driver_sql(
                    "SELECT count(*) FROM pg_prepared_statements"
                ).scalar_one(),
                single=True,
            )
            return prepared, found.working_memory if found else None
        finally:
            await store.close()
            await drop_namespace(url, schema)

    assert asyncio.run(main()) == (0, "w")
