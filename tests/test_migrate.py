"""Schema versions and ``composite-store migrate``: upgrading from the previous release's schema.

"Version 0" is the schema before this release's indexes (``composite_store.schema.migrations``):
on SQL and MongoDB the tables without ``<prefix>ai_spans_started_at_idx`` and
``<prefix>traces_trace_id_start_time_idx``; on Redis the key space without the whole-table sets
of resources, scores and spans. Each test builds it by hand, checks that ``init()`` leaves it
as it is and reports the fix, runs ``migrate --dry-run`` (nothing changes) and ``migrate``, and
holds the result to the documented schema with ``describe_physical``.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from composite_store import cli, open_store
from composite_store.admin.copy import copy_domains
from composite_store.errors import CompositeStoreError, SchemaMismatchError
from composite_store.inmemory import InMemoryStore
from composite_store.schema import DOMAINS, table, tables_for
from composite_store.schema.drift import compare
from composite_store.schema.migrations import SchemaDriftWarning, current_version
from composite_store.sql.store import SqlStore
from composite_store.sql.tables import render_tables
from composite_store.store import Store

NEW_INDEXES = ("started_at_idx", "trace_id_start_time_idx")


def _run(fn: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return asyncio.run(fn())


async def _drift(store: Store) -> list[str]:
    found = []
    for dom in store.domains.values():
        physical = await dom.describe_physical()
        found += [d.message for d in compare(tables_for(dom.domain), physical)]
    return found


@asynccontextmanager
async def _current_store(url: str) -> AsyncIterator[Store]:
    """The store at ``url``, checked to be migrated: ``init()`` warns of no drift, ``inspect``
    finds none, and every domain records this release's version; closed afterwards."""
    store = open_store(url)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SchemaDriftWarning)
        await store.init()
    try:
        assert await _drift(store) == []
        for name, dom in store.domains.items():
            assert await dom.schema_version() == current_version(name), name
        yield store
    finally:
        await store.close()


async def _create_version_0_sql(url: str) -> None:
    """The previous release's tables: every documented table, without this release's
    indexes, and no version table."""
    store = open_store(url)
    assert isinstance(store, SqlStore)
    db = store.database
    metadata, tables = render_tables(db.dialect, db.prefix, db.schema)
    for tbl in tables.values():
        for index in list(tbl.indexes):
            # <table>_<suffix>, behind a schema prefix on PostgreSQL outside public.
            if (index.name or "").endswith(tuple(f"{tbl.name}_{s}" for s in NEW_INDEXES)):
                tbl.indexes.discard(index)

    def create(conn: Any) -> None:
        db.dialect.create_namespace(conn, db.schema)
        metadata.create_all(conn)

    try:
        await db.run(create, write=True)
    finally:
        await store.close()


def _upgrade(url: str, capsys: pytest.CaptureFixture[str], *, statements: int) -> str:
    """Check init() on version 0, dry-run and run migrate; return the dry-run output."""

    async def before() -> None:
        store = open_store(url)
        drift = r"at schema version 0.*composite-store migrate"
        with pytest.warns(SchemaDriftWarning, match=drift):
            await store.init()
        try:
            # init() altered nothing: the indexes are still missing, the version is 0.
            assert await store.observability.schema_version() == 0
            missing = [m for m in await _drift(store) if "no index" in m]
            assert len(missing) == 2, missing
        finally:
            await store.close()

    _run(before)
    assert cli.main(["migrate", url, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert f"version 0 -> {current_version('observability')}" in dry
    assert f"dry run: {statements} statement(s)" in dry
    _run(before)  # the dry run changed nothing
    assert cli.main(["migrate", url]) == 0
    done = capsys.readouterr().out
    assert f"applied {statements} statement(s)" in done

    async def after() -> None:
        async with _current_store(url):
            pass

    _run(after)
    # A second migrate has nothing left to do.
    assert cli.main(["migrate", url]) == 0
    assert "applied 0 statement(s)" in capsys.readouterr().out
    return dry


def test_sqlite_upgrade_from_version_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _run(lambda: _create_version_0_sql(url))
    dry = _upgrade(url, capsys, statements=2)
    index = 'CREATE INDEX mastra_ai_spans_started_at_idx ON mastra_ai_spans ("startedAt" DESC)'
    assert index in dry
    assert "outside a transaction" not in dry


def test_postgres_upgrade_builds_indexes_concurrently(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.servers import postgres

    url = postgres.session_url(request)
    _run(lambda: _create_version_0_sql(url))
    dry = _upgrade(url, capsys, statements=2)
    # In a schema other than public the name carries the schema, as Mastra's do.
    assert "CREATE INDEX CONCURRENTLY cs_" in dry
    assert "_mastra_ai_spans_started_at_idx ON " in dry
    assert "-- outside a transaction" in dry


def test_mariadb_upgrade_from_version_0(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.servers import mariadb

    url = mariadb.session_url(request)
    _run(lambda: _create_version_0_sql(url))
    dry = _upgrade(url, capsys, statements=2)
    assert "CREATE INDEX mastra_traces_trace_id_start_time_idx ON " in dry


def test_mongodb_upgrade_from_version_0(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.servers import mongodb

    url = mongodb.session_url(request)

    async def version_0() -> None:
        store = open_store(url)
        await store.init()
        try:
            conn = store.observability.conn  # type: ignore[attr-defined]
            for base, suffix in (("ai_spans", NEW_INDEXES[0]), ("traces", NEW_INDEXES[1])):
                await conn.db[f"mastra_{base}"].drop_index(f"mastra_{base}_{suffix}")
            await conn.db.drop_collection("mastra_composite_schema")
        finally:
            await store.close()

    _run(version_0)
    dry = _upgrade(url, capsys, statements=2)
    assert 'db.getCollection("mastra_ai_spans").createIndex({"startedAt": -1}' in dry


def test_redis_upgrade_backfills_the_new_sets(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older Redis store lacks the sets that list every resource, score and span; copying
    from it is refused until migrate has built them from the stored records."""
    from tests.support.servers import redis

    url = redis.session_url(request)
    new_sets = {
        "resources": "createdat_idx",
        "scorers": "createdat_idx",
        "ai_spans": "started_at_idx",
    }

    async def version_0() -> None:
        store = open_store(url)
        await store.init()
        try:
            for i in range(3):
                await store.memory.update_resource(resource_id=f"u{i}", working_memory=f"wm {i}")
            await store.scores.save_score(
                score={"id": "s1", "scorer_id": "a", "run_id": "r", "scorer": {}, "score": 1,
                       "input": 1, "output": 2, "source": "LIVE"}
            )
            await store.observability.create_span(
                span={"trace_id": "t", "span_id": "x", "parent_span_id": "missing-root",
                      "name": "n", "span_type": "TOOL_CALL", "is_event": False,
                      "started_at": "2026-01-01T00:00:00Z"}
            )
            conn = store.memory.conn  # type: ignore[attr-defined]
            prefix = conn.keys.prefix
            client = conn.client
            import json

            for base, name in new_sets.items():
                await client.delete(f"{prefix}{base}:{name}:{{*}}")
            for base in ("threads", "messages", "resources", "workflow_snapshot", "scorers",
                         "evals", "ai_spans", "traces"):
                catalog = f"{prefix}{base}:catalog"
                await client.hdel(catalog, "schema_version")
                listed = json.loads(await client.hget(catalog, "indexes"))
                kept = [i for i in listed if i[0] != f"{prefix}{base}_{new_sets.get(base)}"]
                await client.hset(catalog, "indexes", json.dumps(kept))
        finally:
            await store.close()

    async def refused() -> None:
        store = open_store(url)
        with pytest.warns(SchemaDriftWarning, match="at schema version 0"):
            await store.init()
        try:
            assert await store.memory.count_records(table="resources") == 0
            for domain in ("memory", "scores", "observability"):
                with pytest.raises(CompositeStoreError, match="composite-store migrate SRC_URL"):
                    await copy_domains(store, InMemoryStore(), domains=[domain])
            # Workflows needed no backfill: they copy.
            await copy_domains(store, InMemoryStore(), domains=["workflows"])
        finally:
            await store.close()

    _run(version_0)
    _run(refused)
    assert cli.main(["migrate", url, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "SCAN MATCH" in dry and "dry run: 3 statement(s) in 3 domain(s)" in dry
    assert cli.main(["migrate", url]) == 0
    assert "applied 3 statement(s)" in capsys.readouterr().out

    async def after() -> None:
        store = open_store(url)
        with warnings.catch_warnings():
            warnings.simplefilter("error", SchemaDriftWarning)
            await store.init()
        try:
            assert await _drift(store) == []
            copy = InMemoryStore()
            report = await copy_domains(store, copy)
            counts = {t.table: t.written for t in report.tables}
            assert (counts["resources"], counts["scorers"], counts["ai_spans"]) == (3, 1, 1)
        finally:
            await store.close()

    _run(after)


def test_init_refuses_a_newer_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"

    async def scenario() -> None:
        async with open_store(url):
            pass
        store = open_store(url)
        db = store.database  # type: ignore[attr-defined]
        await db.run(
            lambda conn: conn.exec_driver_sql(
                "UPDATE mastra_composite_schema SET version = 99 WHERE domain = 'scores'"
            ),
            write=True,
        )
        with pytest.raises(SchemaMismatchError, match=r"version 99, newer than this release"):
            await store.init()
        await store.close()

    _run(scenario)


def test_a_fresh_store_records_the_current_versions(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"

    async def scenario() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SchemaDriftWarning)
            async with open_store(url) as store:
                versions = {n: await d.schema_version() for n, d in store.domains.items()}
        assert versions == {n: current_version(n) for n in versions}
        # The version table carries the prefix; none of Mastra's tables has that name.
        import sqlite3

        with sqlite3.connect(tmp_path / "fresh.db") as db:
            names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "mastra_composite_schema" in names

    _run(scenario)


def test_sqlite_upgrade_from_version_3_builds_the_new_indexes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database the previous release created (version 3 recorded, without version 4's
    indexes) is served with a warning, and ``migrate`` builds the indexes: they are steps of a
    version of their own, which a database at 3 still runs."""
    import sqlite3

    path = tmp_path / "release3.db"
    url = f"sqlite:///{path}"
    index = "mastra_workflow_snapshot_resourceid_created_at_idx"

    async def version_3() -> None:
        async with open_store(url) as store:
            for dom in store.domains.values():
                await dom._write_schema_version(3)  # type: ignore[attr-defined]
        with sqlite3.connect(path) as db:
            db.execute(f"DROP INDEX {index}")
        store = open_store(url)
        with pytest.warns(SchemaDriftWarning, match="at schema version 3"):
            await store.init()  # index-only: served, not refused
        await store.close()

    _run(version_3)
    assert cli.main(["migrate", url]) == 0
    done = capsys.readouterr().out
    assert "version 3 -> 4" in done and index in done, done
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (index,)).fetchall()
    assert found == [(1,)]

    async def current() -> None:
        async with _current_store(url):
            pass

    _run(current)
    assert {current_version(name) for name in DOMAINS} == {4}


async def _create_version_1_sql(url: str) -> None:
    """The tables of release 1 (schema version 1): without the columns, Mastra indexes and
    primary key name that version 2 added, with version 1 recorded."""
    from composite_store.schema.migrations import (
        MIGRATIONS,
        AddColumns,
        CreateIndex,
        NamePrimaryKey,
        unchecked,
    )
    from composite_store.sql.tables import index_name

    store = open_store(url)
    assert isinstance(store, SqlStore)
    db = store.database
    prep = db.engine.dialect.identifier_preparer
    with unchecked():
        await store.init()
    statements: list[str] = []
    columns: list[str] = []  # dropped after the indexes that may cover them
    for migration in (m for m in MIGRATIONS if m.version == 2):
        for step in migration.steps:
            tbl = db.tables[step.table]
            if isinstance(step, CreateIndex):
                index = step.documented()
                if db.dialect.family not in index.families:
                    continue
                name = index_name(db.dialect, index, tbl.name, db.prefix, db.schema)
                where = f"{prep.quote_schema(db.schema)}." if db.schema else ""
                statements.append(f"DROP INDEX {where}{prep.quote(name)}")
            elif isinstance(step, AddColumns):
                columns += [
                    f"ALTER TABLE {prep.format_table(tbl)} DROP COLUMN {prep.quote(c)}"
                    for c in step.columns
                ]
            elif isinstance(step, NamePrimaryKey) and db.dialect.family == "postgresql":
                named = db.dialect.primary_key_name(table(step.table), db.prefix, db.schema)
                statements.append(
                    f"ALTER TABLE {prep.format_table(tbl)} RENAME CONSTRAINT {prep.quote(named)}"
                    f" TO {prep.quote(tbl.name + '_pkey')}"
                )

    def downgrade(conn: Any) -> None:
        for statement in statements + columns:
            conn.exec_driver_sql(statement)

    try:
        await db.run(downgrade, write=True)
        for dom in store.domains.values():
            await dom._write_schema_version(1)
    finally:
        await store.close()


def _upgrade_from_1(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    """init() refuses release 1's tables (writes need the new columns) and names migrate;
    migrate brings them to Mastra 1.x's; return migrate's output."""

    async def refused() -> None:
        store = open_store(url)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SchemaDriftWarning)
            with pytest.raises(SchemaMismatchError, match=r"at schema version 1.*migrate"):
                await store.init()
        await store.close()

    _run(refused)
    assert cli.main(["migrate", url]) == 0
    done = capsys.readouterr().out
    assert f"version 1 -> {current_version('memory')}" in done

    async def after() -> None:
        async with _current_store(url) as store:
            # A span with the new columns round-trips.
            await store.observability.create_span(
                span={"trace_id": "t", "span_id": "s", "name": "n", "span_type": "AGENT_RUN",
                      "started_at": "2026-01-01T00:00:00Z", "experiment_id": "x1"}
            )
            span = await store.observability.get_span(trace_id="t", span_id="s")
            assert span is not None and span.experiment_id == "x1"

    _run(after)
    return done


def test_sqlite_upgrade_from_version_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'release1.db'}"
    _run(lambda: _create_version_1_sql(url))
    done = _upgrade_from_1(url, capsys)
    assert 'ALTER TABLE mastra_ai_spans ADD COLUMN "experimentId" TEXT' in done
    assert "CREATE INDEX idx_experiment_results_experimentid ON " in done


def test_postgres_upgrade_from_version_1_names_the_spans_key(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    from tests.support.servers import postgres

    url = postgres.session_url(request)
    _run(lambda: _create_version_1_sql(url))
    done = _upgrade_from_1(url, capsys)
    schema = url.rsplit("schema=", 1)[1]
    assert f'RENAME CONSTRAINT mastra_ai_spans_pkey TO {schema}_mastra_ai_spans_traceid' in done
    found = postgres.find()
    assert not isinstance(found, str)
    with psycopg.connect(found.url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        (name,) = conn.execute(
            "SELECT conname FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
            "WHERE n.nspname = %s AND c.contype = 'p' AND c.conrelid::regclass::text LIKE "
            "'%%mastra_ai_spans'",
            (schema,),
        ).fetchone()
    assert name == f"{schema}_mastra_ai_spans_traceid_spanid_pk"
