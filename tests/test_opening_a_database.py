"""``init()`` of a relational store: what opening a database costs, and what it still finds.

A store opened per request or per worker pays its ``init()`` each time. The tables of the
database's schema are listed with one catalog query (``SqlDatabase.create``), and a table
listed is known to exist for every domain of the store: no check per table, as
SQLAlchemy's ``create_all(checkfirst=True)`` makes. A database that had none of a domain's
tables is at the current schema version once they are created, without a look at their
indexes. The tables themselves are rendered once for the databases of one layout
(``sql.tables.shared_tables``). These tests hold each shortcut to what it skips, on every
relational backend that runs here: the statements sent, and the tables and versions found.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import composite_store as cs
from composite_store.errors import SchemaMismatchError
from composite_store.schema import tables_for
from composite_store.schema.drift import compare
from composite_store.schema.migrations import SchemaDriftWarning, current_version
from composite_store.sql.database import SqlDatabase
from composite_store.sql.schema_versions import write_version
from composite_store.sql.store import SqlStore
from composite_store.urls import split_options
from tests.support.sql_stores import sql_store_url

BACKENDS = ["sqlite", "postgres", "mariadb"]
#: The table a CREATE TABLE statement creates, without its schema.
CREATED = re.compile(r"CREATE TABLE (?:\S+\.)?(\S+) \(")


async def _init_recording(url: str, **options: Any) -> tuple[SqlStore, list[str]]:
    """A new store of ``url``, initialized: the store and the SQL of every statement its
    ``init()`` sent. The caller closes the store."""
    store = cs.open_store(url, **options)
    assert isinstance(store, SqlStore)
    engine = store.database.engine
    sync_engine = getattr(engine, "sync_engine", engine)
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        sent.append(" ".join(statement.split()))

    sa.event.listen(sync_engine, "before_cursor_execute", record)
    try:
        await store.init()
    finally:
        sa.event.remove(sync_engine, "before_cursor_execute", record)
    return store, sent


@pytest.mark.parametrize("backend", BACKENDS)
def test_init_of_an_existing_database_lists_its_tables_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = sql_store_url(backend, request, tmp_path)

    async def main() -> None:
        async with cs.open_store(url):  # creates the tables (or finds the session's)
            pass
        store, sent = await _init_recording(url)
        try:
            # The listing (in autocommit: no BEGIN, no namespace check, as every table is
            # there) and one read of every domain's version, whatever the number of
            # domains; SQLAlchemy's check per table and a version read per domain were
            # 42 + 7 statements on PostgreSQL.
            assert len(store.domains) == 7
            assert len(sent) <= 2, sent
            versions = [s for s in sent if "composite_schema" in s]
            assert len(versions) == 1, sent
            # The store works on the tables it found.
            memory = store.memory
            await memory.save_resource(
                resource=cs.Resource(id="r-open", working_memory="# wm", metadata={})
            )
            found = await memory.get_resource_by_id(resource_id="r-open")
            assert found is not None and found.working_memory == "# wm"
        finally:
            await store.close()

    asyncio.run(main())


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_opening_reads_the_versions_afresh(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The versions read once for an opening are not served to a later one: a version that
    another process recorded in between (a newer release's ``migrate``) is seen, by a
    store's next ``init()`` and by a domain initialized on its own."""
    url = sql_store_url(backend, request, tmp_path)
    prefix = "versions_"
    newer = current_version("workflows") + 1

    async def main() -> None:
        async with cs.open_store(url, prefix=prefix):  # the tables, every version recorded
            pass
        first = cs.open_store(url, prefix=prefix)
        second = cs.open_store(url, prefix=prefix)
        other = cs.open_store(url, prefix=prefix)
        assert isinstance(first, SqlStore) and isinstance(other, SqlStore)
        try:
            await first.init()  # reads every version at once, all current
            assert await first.workflows.schema_version() == current_version("workflows")
            await second.memory.init()  # lists the tables: the rest of second is known
            await other.init()
            await write_version(other.database, "workflows", newer)
            await first.close()  # the next init() is another opening of the same database
            with pytest.raises(SchemaMismatchError, match="newer than this release"):
                await first.init()
            with pytest.raises(SchemaMismatchError, match="newer than this release"):
                await second.workflows.init()
        finally:
            await write_version(other.database, "workflows", current_version("workflows"))
            for store in (first, second, other):
                await store.close()

    asyncio.run(main())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_table_dropped_since_the_listing_of_another_store_is_created_again(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Another process drops a table between two stores' ``init()``: the second store's
    listing does not have it, and its ``init()`` creates it again."""
    url = sql_store_url(backend, request, tmp_path)
    prefix = "reopened_"

    async def main() -> None:
        async with cs.open_store(url, prefix=prefix) as first:
            assert isinstance(first, SqlStore)
            db = first.database
            resources = db.tables["resources"]
            assert resources.name in db.listed_tables or "resources" in db._created

            def drop(conn: Any) -> None:
                resources.drop(conn)

            await db.run(drop, write=True)
        store, sent = await _init_recording(url, prefix=prefix)
        try:
            created = [m[1] for s in sent if (m := CREATED.match(s))]
            assert created == [f"{prefix}resources"], sent
            await store.memory.save_resource(
                resource=cs.Resource(id="r-back", working_memory="back", metadata={})
            )
            found = await store.memory.get_resource_by_id(resource_id="r-back")
            assert found is not None and found.working_memory == "back"
        finally:
            await store.close()

    asyncio.run(main())


def test_opening_an_existing_postgres_database_takes_few_round_trips(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request a store's opening sends on PostgreSQL, as libpq traces them: the
    session settings in one (not BEGIN, SET, COMMIT), SQLAlchemy's look at the server without
    its HSTORE lookup (a savepoint, a catalog query, its release), the listing in autocommit
    (not BEGIN, listing, COMMIT) and one version read: 9 round trips, 16 before."""
    from composite_store_postgres.cursor import LeanAsyncConnection
    from psycopg import pq

    url = sql_store_url("postgres", request, tmp_path)
    trace = tmp_path / "trace.txt"
    traced_connections: list[Any] = []
    connect = LeanAsyncConnection.connect

    async def traced(cls: type[LeanAsyncConnection], *args: Any, **kwargs: Any) -> Any:
        conn = await connect(*args, **kwargs)
        traced_connections.append(conn)
        # libpq writes to the descriptor until untrace(): it stays open until then.
        conn.pgconn.trace(out.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        return conn

    async def main() -> None:
        async with cs.open_store(url):  # the tables exist from here on
            pass
        with monkeypatch.context() as patch:
            patch.setattr(LeanAsyncConnection, "connect", classmethod(traced))
            store = cs.open_store(url)
            try:
                await store.init()
                await store.memory.get_resource_by_id(resource_id="absent")
            finally:
                for conn in traced_connections:
                    conn.pgconn.untrace()
                await store.close()

    with trace.open("w") as out:
        asyncio.run(main())
    assert len(traced_connections) == 1, traced_connections
    lines = trace.read_text().splitlines()
    sent = [line.split("\t", 3)[-1].strip() for line in lines if line.startswith("F\t")]
    rounds = sum(1 for line in lines if "\tReadyForQuery\t" in line)
    assert sent[0].startswith('"SET enable_seqscan = off'), sent  # not after a BEGIN
    assert not [q for q in sent if "SAVEPOINT" in q or "hstore" in q], sent
    assert not [q for q in sent if "COMMIT" in q], sent
    # The opening's 9, then the read's one.
    assert rounds <= 10, sent


def test_init_creates_a_postgres_schema_that_does_not_exist(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The namespace is looked for only when the listing is empty (a schema that has tables
    exists): a schema that does not exist lists as empty, and ``init()`` creates it."""
    server, _ = split_options(sql_store_url("postgres", request, tmp_path), ("schema", "prefix"))
    name = f"opened_{secrets.token_hex(4)}"

    async def main() -> None:
        store, sent = await _init_recording(server, schema=name)
        try:
            assert any(f'CREATE SCHEMA IF NOT EXISTS "{name}"' in s for s in sent), sent
            await store.memory.save_resource(
                resource=cs.Resource(id="r-schema", working_memory="in it", metadata={})
            )
            again, sent = await _init_recording(server, schema=name)
            await again.close()
            looked = [s for s in sent if "FROM pg_catalog.pg_namespace WHERE" in s]
            assert not looked and not [s for s in sent if "CREATE" in s], sent
            found = await store.memory.get_resource_by_id(resource_id="r-schema")
            assert found is not None and found.working_memory == "in it"
        finally:
            drop = f'DROP SCHEMA IF EXISTS "{name}" CASCADE'
            await store.database.run(lambda conn: conn.exec_driver_sql(drop), write=True)
            await store.close()

    asyncio.run(main())


def test_a_new_database_is_at_the_current_versions_without_a_look_at_its_indexes(
    tmp_path: Path,
) -> None:
    """Tables this release just created need no migration: the version is recorded as
    current without reading their indexes back (700 statements on SQLite before)."""
    url = f"sqlite:///{tmp_path}/new.db"

    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SchemaDriftWarning)
            store, sent = await _init_recording(url)
        try:
            assert not [s for s in sent if "index_list" in s or "index_info" in s], sent
            versions = {n: await d.schema_version() for n, d in store.domains.items()}
            assert versions == {n: current_version(n) for n in versions}
            # Right to: what was created is the documented schema, every migration's index
            # included.
            for dom in store.domains.values():
                physical = await dom.describe_physical()
                assert [d.message for d in compare(tables_for(dom.domain), physical)] == []
        finally:
            await store.close()

    asyncio.run(main())


def test_databases_of_one_layout_share_their_rendered_tables(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``shared_tables``: the tables are rendered once per layout (backend dialect and its
    settings, prefix, schema) and never shared across layouts."""
    pg_url = sql_store_url("postgres", request, tmp_path)

    def database(url: str, **options: Any) -> SqlDatabase:
        store = cs.open_store(url, **options)  # nothing connects before init()
        assert isinstance(store, SqlStore)
        return store.database

    first = database(f"sqlite:///{tmp_path}/a.db")
    second = database(f"sqlite:///{tmp_path}/b.db")
    assert second.tables is first.tables and second.metadata is first.metadata
    other_prefix = database(f"sqlite:///{tmp_path}/a.db", prefix="other_")
    assert other_prefix.tables["threads"].name == "other_threads"
    postgres = database(pg_url)
    assert postgres.tables is not first.tables
    assert "createdAtZ" in postgres.tables["threads"].c  # PostgreSQL's shadow timestamps
    assert "createdAtZ" not in first.tables["threads"].c
    assert database(pg_url).tables is postgres.tables
    other_pg_prefix = database(pg_url, prefix="other_")
    assert other_pg_prefix.tables["threads"].name == "other_threads"
    assert other_pg_prefix.tables["threads"].schema == postgres.tables["threads"].schema
    server, _ = split_options(pg_url, ("schema", "prefix"))
    in_a, in_b = database(server, schema="schema_a"), database(server, schema="schema_b")
    assert (in_a.tables["threads"].schema, in_b.tables["threads"].schema) == (
        "schema_a",
        "schema_b",
    )
