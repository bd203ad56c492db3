"""The adapter's own psycopg connection class (composite_store_postgres.cursor): the engines it
creates use it, and its cheaper wait leaves psycopg's behaviour as it was where it matters:
a cancelled statement is cancelled on the server, and large results are not kept."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from composite_store_postgres import PostgresStore
from composite_store_postgres import cursor as lean
from composite_store_postgres.cursor import KEEP_RESULT_ROWS, LeanAsyncConnection, sets_time_zone
from sqlalchemy.engine import Connection


def _driver(conn: Connection) -> object:
    return conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]


def test_engines_of_the_adapter_connect_with_the_lean_class(url: str) -> None:
    async def main() -> object:
        store = PostgresStore(url)
        try:
            return await store.memory.db.run(_driver, single=True)
        finally:
            await store.close()

    assert isinstance(asyncio.run(main()), LeanAsyncConnection)


def test_a_cancelled_statement_is_cancelled_on_the_server(url: str) -> None:
    """psycopg cancels the query of an interrupted wait on the server before the interruption
    reaches the caller; the lean wait hands interruptions to psycopg's, so the server is no
    longer running the statement once the caller sees the cancellation."""
    marker = f"cs-cancel-{uuid.uuid4().hex}"

    def sleep(conn: Connection) -> None:
        conn.exec_driver_sql(f"SELECT pg_sleep(30) /* {marker} */")

    async def main() -> None:
        store = PostgresStore(url)
        try:
            task = asyncio.create_task(store.memory.db.run(sleep, single=True))
            raw = psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))
            try:
                while not _running(raw, marker):  # the statement has reached the server
                    await asyncio.sleep(0.01)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert not _running(raw, marker)
            finally:
                raw.close()
        finally:
            await store.close()

    asyncio.run(main())


def _running(raw: psycopg.Connection, marker: str) -> bool:
    with raw.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE %s "
            "AND pid <> pg_backend_pid()",
            (f"%{marker}%",),
        )
        row = cur.fetchone()
    raw.commit()
    return bool(row and row[0])


def test_a_large_result_is_not_kept_by_the_cursor(url: str) -> None:
    """Inside a transaction (statements of their own go through libpq: tests/test_wire.py)."""
    from composite_store_postgres.cursor import execute_raw

    def read(conn: Connection, rows: int) -> bool:
        execute_raw(conn, "SELECT generate_series(1, $1::int)", [rows], True)
        kept = _driver(conn)._composite_cursor  # type: ignore[attr-defined]
        return kept is not None and not kept.closed

    async def main() -> tuple[bool, bool]:
        store = PostgresStore(url)
        try:
            db = store.memory.db
            small = await db.run(lambda conn: read(conn, KEEP_RESULT_ROWS))
            large = await db.run(lambda conn: read(conn, KEEP_RESULT_ROWS + 1))
            return small, large
        finally:
            await store.close()

    assert asyncio.run(main()) == (True, False)


def test_json_is_parsed_as_json_loads_parses_it(url: str) -> None:
    """JSONB and JSON values come back through the connection's own loader (parse_json) with
    the values ``json.loads`` gives for the server's text of them."""
    import json

    from composite_store_postgres.cursor import execute_raw

    documents = [
        '{"a": [1, 2.5, "é", {"n": null}], "b": true, "big": 12345678901234567890}',
        '"a string"',
        "[]",
        "-0.5e-3",
        '{"nested": {"deep": ["x", "y"]}, "emoji": "🙂"}',
    ]

    def read(conn: Connection) -> list[tuple[object, object, str]]:
        out = []
        for doc in documents:
            rows, _ = execute_raw(conn, "SELECT $1::jsonb, $1::json, $1::jsonb::text", [doc], True)
            assert rows is not None
            out.append(rows[0])
        return out

    async def main() -> list[tuple[object, object, str]]:
        store = PostgresStore(url)
        try:
            return await store.memory.db.run(read, single=True)
        finally:
            await store.close()

    for jsonb, plain, text in asyncio.run(main()):
        assert jsonb == json.loads(text)
        assert type(jsonb) is type(json.loads(text))
        assert plain == jsonb


#: A value for each parameter type of the prepared statements below (EXPLAIN EXECUTE needs one
#: for each; a generic plan does not depend on them).
_SAMPLE = {
    "text": "'x'",
    "character varying": "'x'",
    "text[]": "ARRAY['x']",
    "character varying[]": "ARRAY['x']::varchar[]",
    "integer": "1",
    "bigint": "1",
    "smallint": "1",
    "timestamp without time zone": "now()::timestamp",
    "timestamp with time zone": "now()",
}


@contextlib.asynccontextmanager
async def _store_of_its_own(
    url: str, options: str = ""
) -> AsyncIterator[tuple[PostgresStore, str]]:
    """A store on one connection (``pool_size=1``) in a namespace of its own, initialized,
    with ``options`` appended to its URL; closed and the namespace dropped afterwards."""
    from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

    schema = await create_namespace(url)
    store = PostgresStore(store_url(url, schema) + options, pool_size=1)
    try:
        await store.init()
        yield store, schema
    finally:
        await store.close()
        await drop_namespace(url, schema)


def _plans_after_growth(url: str, *, options: str = "") -> dict[str, str]:
    """Plans that the store's one connection would run for a thread point read and a message
    batch, prepared while the tables held one page each (vacuumed and analyzed, as
    autovacuum leaves a new deployment's tables), after the tables grew to 20,000 rows with
    no ANALYZE since: ``{"read": plan, "batch": plan}``, for those of the two prepared."""
    from composite_store import Message, Thread

    def plans(conn: Connection) -> dict[str, str]:
        prepared = conn.exec_driver_sql(
            "SELECT name, statement, parameter_types::text[] FROM pg_prepared_statements"
        ).all()
        out: dict[str, str] = {}
        for name, statement, types in prepared:
            if "INSERT INTO" in statement and "mastra_messages" in statement:
                kind = "batch"
            elif statement.lstrip().startswith("SELECT") and "mastra_threads" in statement:
                kind = "read"
            else:
                continue
            args = ", ".join(_SAMPLE[t] for t in types)
            rows = conn.exec_driver_sql(f"EXPLAIN EXECUTE {name}({args})").all()
            out[kind] = "\n".join(r[0] for r in rows)
        return out

    async def main() -> dict[str, str]:
        async with _store_of_its_own(url, options) as (store, schema):
            with psycopg.connect(
                url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True
            ) as raw:
                return await grow(store, schema, raw)

    async def grow(store: PostgresStore, schema: str, raw: psycopg.Connection) -> dict[str, str]:
        memory = store.memory
        for t in range(20):
            await memory.save_thread(thread=Thread(id=f"t{t}", resource_id="u1"))
        for table in ("mastra_threads", "mastra_messages"):
            raw.execute(f'ALTER TABLE "{schema}".{table} SET (autovacuum_enabled = false)')
            raw.execute(f'VACUUM ANALYZE "{schema}".{table}')
        # psycopg prepares a statement on its sixth run, and the server plans a prepared
        # statement for its values five times before it may keep one generic plan.
        for batch in range(15):
            await memory.save_messages(
                messages=[
                    Message(id=f"m{batch}-{i}", thread_id=f"t{batch}", resource_id="u1",
                            role="user", content="x")
                    for i in range(10)
                ]
            )
            await memory.get_thread_by_id(thread_id=f"t{batch}")
        raw.execute(
            f'INSERT INTO "{schema}".mastra_threads (id, "resourceId", title, metadata, '
            "\"createdAt\", \"updatedAt\") SELECT 'g' || g, 'u', '', '{}', now(), now() "
            "FROM generate_series(1, 20000) g"
        )
        raw.execute(
            f'INSERT INTO "{schema}".mastra_messages (id, thread_id, content, role, type, '
            "\"createdAt\", \"resourceId\") SELECT 'g' || g, 't1', 'x', 'user', 'v2', "
            "now(), 'u1' FROM generate_series(1, 20000) g"
        )
        return await memory.db.run(plans, single=True)

    return asyncio.run(main())


def test_prepared_plans_use_the_indexes_after_the_tables_grow(url: str) -> None:
    """The adapter's connections plan with sequential scans disabled (cursor.INDEX_PLANS), so
    a statement prepared while its tables were tiny keeps using their indexes once they are
    large: a point read and a message batch (whose plan PLAN_EACH_CALL would otherwise make
    for every call) are both prepared, and neither plan scans a table."""
    plans = _plans_after_growth(url)
    assert set(plans) == {"read", "batch"}, plans
    for kind, plan in plans.items():
        assert "Seq Scan" not in plan, f"{kind}:\n{plan}"
        assert "Index" in plan, f"{kind}:\n{plan}"


def test_a_url_that_keeps_sequential_scans_plans_each_batch_for_every_call(url: str) -> None:
    """``options=-c enable_seqscan=on`` in the URL keeps the server's planner as it is: the
    message batch is then never prepared (PLAN_EACH_CALL), and the point read's plan, made
    on a one-page table, is the scan that the adapter's setting exists to avoid."""
    plans = _plans_after_growth(url, options="&options=-c%20enable_seqscan%3Don")
    assert "batch" not in plans, plans
    assert "Seq Scan" in plans["read"], plans["read"]


def _unindexed_plan(url: str, *, options: str = "") -> str:
    """``EXPLAIN ANALYZE`` on the store's own connection of a read no index serves (scores
    by ``runId``): with sequential scans disabled its plan costs over 10^10."""

    async def main() -> str:
        async with _store_of_its_own(url, options) as (store, schema):
            sql = (
                f'EXPLAIN (ANALYZE, FORMAT TEXT) SELECT * FROM "{schema}".mastra_scorers '
                "WHERE \"runId\" = 'r1' ORDER BY \"createdAt\" DESC LIMIT 10"
            )
            rows = await store.scores.db.run(  # type: ignore[attr-defined]
                lambda conn: conn.exec_driver_sql(sql).all(), single=True
            )
            return "\n".join(r[0] for r in rows)

    return asyncio.run(main())


def test_a_read_no_index_serves_is_not_jit_compiled(url: str) -> None:
    """cursor.NO_JIT: the disabled scan's cost is above every JIT threshold, so without it
    every such read was compiled (120-300 ms for a 50-row table). The premise is checked on
    a store whose URL turns JIT back on (``-c jit=on``); a server without JIT skips."""
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as raw:
        if not raw.execute("SELECT pg_jit_available()").fetchone()[0]:  # type: ignore[index]
            pytest.skip("this PostgreSQL server has no JIT provider (pg_jit_available())")
    assert "JIT:" in _unindexed_plan(url, options="&options=-c%20jit%3Don"), (
        "premise: with sequential scans off and JIT on, the scan is JIT-compiled"
    )
    plan = _unindexed_plan(url)
    assert "Seq Scan" in plan, plan
    assert "JIT:" not in plan, plan


def _plain_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def test_the_reader_is_registered_once_for_consecutive_statements(url: str) -> None:
    """The socket's reader stays registered between statements (one ``add_reader`` for 20
    statements, not 20 pairs of register and unregister), and closing the connection
    unregisters it: asyncio must not keep a closed socket's number."""

    async def main() -> tuple[int, int, bool]:
        loop = asyncio.get_running_loop()
        added = 0
        add_reader = loop.add_reader

        def counting(fd: Any, callback: Any, *args: Any) -> None:
            nonlocal added
            added += 1
            add_reader(fd, callback, *args)

        conn = await LeanAsyncConnection.connect(_plain_url(url), autocommit=True)
        loop.add_reader = counting  # type: ignore[method-assign]  # after connecting's own waits
        cursor = conn.raw_cursor()
        values = []
        for i in range(20):
            await cursor.execute("SELECT $1::int", [i])
            values.append((await cursor.fetchall())[0][0])
        assert conn._reading is not None
        watched = conn._reading[0]
        await conn.close()
        return added, sum(values), loop.remove_reader(watched)

    added, total, still_registered = asyncio.run(main())
    assert total == sum(range(20))
    assert added == 1
    assert not still_registered


def test_a_socket_libpq_closes_leaves_no_registration_behind(url: str) -> None:
    """libpq closes its socket when it finds the connection lost, before anyone unregisters
    a reader; the next socket opened gets the same number. The reader watches a duplicate of
    libpq's socket, so that number is free for the next connection's own registration (with
    the socket itself registered: FileNotFoundError from epoll, seen under
    pg_terminate_backend in tests/reliability)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        conn = await LeanAsyncConnection.connect(_plain_url(url), autocommit=True)
        await conn.execute("SELECT 1")  # the reader is registered
        fd = conn.pgconn.socket
        other = socket.socket()
        try:
            os.dup2(other.fileno(), fd)  # libpq's socket closed, its number given to another
            loop.add_writer(fd, lambda: None)
            loop.remove_writer(fd)
        finally:
            other.close()
            await conn.close()  # libpq closes the number it holds: the replacement

    asyncio.run(asyncio.wait_for(main(), 20))


def test_an_idle_connection_the_server_ends_is_unregistered_and_fails_cleanly(url: str) -> None:
    """When the server closes an idle connection its socket turns readable with nobody
    awaiting a reply: the reader unregisters (a readable socket left registered would wake
    the loop on every turn), and the next statement raises psycopg's OperationalError."""

    async def main() -> tuple[bool, type[BaseException] | None]:
        conn = await LeanAsyncConnection.connect(_plain_url(url), autocommit=True)
        cursor = conn.raw_cursor()
        await cursor.execute("SELECT pg_backend_pid()")
        [(pid,)] = await cursor.fetchall()
        with psycopg.connect(_plain_url(url), autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.3)  # the loop runs: the reader sees the closed socket
        registered = asyncio.get_running_loop().remove_reader(conn.pgconn.socket)
        failure: type[BaseException] | None = None
        try:
            await cursor.execute("SELECT 1")
        except psycopg.OperationalError as exc:
            failure = type(exc)
        await conn.close()
        return registered, failure

    # Bounded: were the reader still registered, the test's own remove_reader would leave
    # the connection waiting for a reply forever.
    registered, failure = asyncio.run(asyncio.wait_for(main(), 20))
    assert not registered
    assert failure is not None and issubclass(failure, psycopg.OperationalError)


@contextlib.contextmanager
def _database_with(url: str, setting: str, value: str) -> Iterator[str]:
    """A throwaway database whose sessions default to ``setting = value`` (``ALTER DATABASE
    ... SET``, as a deployment may configure its server): its SQLAlchemy URL."""
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    name = f"cs_setting_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(plain, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        admin.execute(f"ALTER DATABASE {name} SET {setting} = '{value}'")
    try:
        yield url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(plain, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _session_zone_and_moment(url: str) -> tuple[str, datetime]:
    """The time zone of a store's session, and a ``TIMESTAMPTZ`` as the driver loads it there
    (the store's own connection and libpq runner, as the library's reads run)."""

    def zone(conn: Connection) -> str:
        return str(conn.exec_driver_sql("SHOW TimeZone").scalar())

    async def main() -> tuple[str, datetime]:
        store = PostgresStore(url, pool_size=1)
        try:
            found = await store.memory.db.run(zone, single=True)
            driver = await store.memory.db.run(_driver, single=True)
            assert isinstance(driver, LeanAsyncConnection)
            rows, _ = await driver.statements().run(
                "SELECT '2026-01-02T03:04:05.678Z'::timestamptz", [], True, False
            )
            assert rows is not None
            return found, rows[0][0]
        finally:
            await store.close()

    return asyncio.run(main())


def test_sessions_run_in_utc_whatever_the_servers_default(url: str) -> None:
    """cursor.UTC_SESSION: on a database whose sessions default to New York time, the
    adapter's connections run in UTC, and psycopg loads a ``TIMESTAMPTZ`` as
    ``timezone.utc`` itself (no ``ZoneInfo`` for the driver or ``_read_utc`` to convert)."""
    with _database_with(url, "TimeZone", "America/New_York") as zoned:
        zone, moment = _session_zone_and_moment(zoned)
    assert zone == "UTC"
    assert moment.tzinfo is UTC
    assert moment == datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def test_a_url_that_sets_the_time_zone_keeps_it(url: str) -> None:
    """``options=-c timezone=...`` in the URL is the user's choice: the session keeps it, and
    the same instant loads in that zone (the library's reads convert it to UTC,
    tests/conformance/test_postgres_tz.py)."""
    zone, moment = _session_zone_and_moment(url + "?options=-c%20timezone%3DAsia/Tokyo")
    assert zone == "Asia/Tokyo"
    assert moment.utcoffset() == timedelta(hours=9)
    assert moment == datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "environ", "chosen"),
    [
        ("('host=h',) ", {}, False),
        ("() -c enable_seqscan=on", {}, False),
        ("() -c timezone=Asia/Tokyo", {}, True),
        ("() -c TimeZone = 'Europe/Paris'", {}, True),
        ("('dbname=d options=-ctimezone=UTC',) ", {}, True),
        ("() ", {"PGTZ": "Europe/Paris"}, True),
        ("() ", {"PGTZ": ""}, False),
        ("() ", {"PGOPTIONS": "-c TimeZone=Europe/Paris"}, True),
        ("() ", {"PGOPTIONS": "-c jit=off"}, False),
        ("() -c log_timezone=Europe/Paris", {}, False),
    ],
)
def test_what_counts_as_the_users_time_zone(
    given: str, environ: dict[str, str], chosen: bool
) -> None:
    assert sets_time_zone(given, environ) is chosen


def _snapshot_compression(url: str, options: str = "") -> str:
    """How the server compressed a 22 KB workflow snapshot that a store saved (a row that
    large is always compressed): ``pg_column_compression`` of the stored value."""
    step = {"output": {"text": "agent output " * 8}}
    snapshot = {"steps": [dict(step, id=f"step-{i}") for i in range(150)]}

    async def main() -> str:
        async with _store_of_its_own(url, options) as (store, schema):
            await store.workflows.persist_workflow_snapshot(
                workflow_name="wf", run_id="r1", snapshot=snapshot
            )
            with psycopg.connect(_plain_url(url)) as raw:
                table = f'"{schema}".mastra_workflow_snapshot'
                row = raw.execute(f"SELECT pg_column_compression(snapshot) FROM {table}").fetchone()
            assert row is not None
            return str(row[0])

    return asyncio.run(main())


def _offers_lz4(url: str) -> bool:
    with psycopg.connect(_plain_url(url)) as raw:
        row = raw.execute(
            "SELECT 'lz4' = ANY (enumvals) FROM pg_settings"
            " WHERE name = 'default_toast_compression'"
        ).fetchone()
    return bool(row and row[0])


def test_large_values_are_compressed_with_lz4(url: str) -> None:
    """cursor.LZ4_COMPRESSION: what the store writes is compressed with LZ4, not the
    server's default pglz (three times the server's CPU for a snapshot). A server without
    LZ4 skips: its connections keep pglz, as the next tests' choices do."""
    if not _offers_lz4(url):
        pytest.skip("this PostgreSQL server was built without LZ4 (or is older than 14)")
    assert _snapshot_compression(url) == "lz4"


def test_a_url_that_chooses_a_compression_keeps_it(url: str) -> None:
    """``options=-c default_toast_compression=pglz`` in the URL is the user's choice."""
    options = "&options=-c%20default_toast_compression%3Dpglz"
    assert _snapshot_compression(url, options) == "pglz"


def test_a_compression_chosen_for_the_database_is_kept(url: str) -> None:
    """A database (or role, or server configuration) whose sessions default to pglz was
    configured so on purpose, a replica built without LZ4 say: the store keeps it."""
    with _database_with(url, "default_toast_compression", "pglz") as configured:
        assert _snapshot_compression(configured) == "pglz"


def test_the_servers_settings_are_read_once_per_target(
    plain_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading ``pg_settings`` costs the server about 1 ms: a target's first connection reads
    it (cursor.LZ4_COMPRESSION), the next sends the choice it made (cursor.LZ4_SESSION), and
    both sessions compress alike."""
    if not _offers_lz4(plain_url):
        pytest.skip("this PostgreSQL server was built without LZ4 (or is older than 14)")
    monkeypatch.setattr(lean, "_LZ4_CHOSEN", {})
    sent: list[str] = []
    execute = LeanAsyncConnection.execute

    async def recording(self: LeanAsyncConnection, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return await execute(self, query, *args, **kwargs)

    monkeypatch.setattr(LeanAsyncConnection, "execute", recording)

    async def main() -> list[tuple[str, str]]:
        found = []
        for _ in range(2):
            conn = await lean.connect(plain_url)
            try:
                cursor = await conn.execute(
                    "SELECT setting, source FROM pg_settings"
                    " WHERE name = 'default_toast_compression'"
                )
                found.append(await cursor.fetchone())
            finally:
                await conn.close()
        return found

    assert asyncio.run(main()) == [("lz4", "session"), ("lz4", "session")]
    opening = [query for query in sent if query.startswith("SET enable_seqscan")]
    assert len(opening) == 2, sent
    assert lean.LZ4_COMPRESSION in opening[0], opening[0]
    assert "pg_settings" not in opening[1], opening[1]
    assert opening[1].endswith(lean.LZ4_SESSION), opening[1]
