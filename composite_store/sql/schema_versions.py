"""Schema versions in SQL: the ``<prefix>composite_schema`` table, and migration steps rendered
as DDL through the dialect.

The table has one row per domain (``domain`` key, ``version``, ``updatedAt``) in the store's
schema, next to the documented tables; its name cannot collide with Mastra's tables. A
``CreateIndex`` step renders the documented index as the dialect compiles it, with the
dialect's options for building an index on a table in use (PostgreSQL: ``CONCURRENTLY``, run
outside a transaction).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import CreateIndex as CreateIndexDDL

from composite_store.errors import map_errors
from composite_store.records.base import now_utc
from composite_store.schema import Column, ColumnType, table
from composite_store.schema.drift import index_matches
from composite_store.schema.migrations import (
    AddColumns,
    CreateIndex,
    ExactText,
    NamePrimaryKey,
    Statement,
    Step,
    opening,
    version_table,
)
from composite_store.sql.database import SqlDatabase
from composite_store.sql.introspect import describe_physical
from composite_store.sql.tables import index_name

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "migration_plan",
    "read_version",
    "version_at_init",
    "versions_table",
    "write_version",
]

_tables: weakref.WeakKeyDictionary[SqlDatabase, sa.Table] = weakref.WeakKeyDictionary()
_created: weakref.WeakSet[SqlDatabase] = weakref.WeakSet()


@dataclass
class _VersionsRead:
    """Every domain's recorded version, read once for one opening of a store."""

    opening: object
    versions: dict[str, int]


_read_for_opening: weakref.WeakKeyDictionary[SqlDatabase, _VersionsRead] = (
    weakref.WeakKeyDictionary()
)


def versions_table(db: SqlDatabase) -> sa.Table:
    """The version table of ``db``'s namespace (rendered once per database)."""
    found = _tables.get(db)
    if found is None:
        stamp = db.dialect.column_type(Column("updatedAt", ColumnType.TIMESTAMP, nullable=False))
        found = sa.Table(
            version_table(db.prefix),
            sa.MetaData(),
            sa.Column("domain", sa.String(64), primary_key=True, autoincrement=False),
            sa.Column("version", sa.Integer(), nullable=False),
            sa.Column("updatedAt", stamp, nullable=False),
            schema=db.schema,
        )
        _tables[db] = found
    return found


def _known(db: SqlDatabase) -> bool:
    """Whether ``db``'s version table is known to exist: created, or found by the listing."""
    return db in _created or versions_table(db).name in db.listed_tables


async def _ensure(db: SqlDatabase) -> sa.Table:
    tbl = versions_table(db)
    if not _known(db):

        def create(conn: Connection) -> None:
            db.dialect.create_namespace(conn, db.schema)
            tbl.create(conn, checkfirst=True)

        await db.run_ddl(create)
    _created.add(db)
    return tbl


async def read_version(db: SqlDatabase, domain: str) -> int | None:
    """The version recorded for ``domain``, None when none is (or the table does not exist:
    reading creates nothing)."""
    tbl = versions_table(db)
    stmt = sa.select(tbl.c.version).where(tbl.c.domain == domain)

    def read(conn: Connection) -> int | None:
        if not _known(db) and not sa.inspect(conn).has_table(tbl.name, schema=tbl.schema):
            return None
        found: int | None = conn.execute(stmt).scalar()
        return found

    # Reads that need no common snapshot: in autocommit, without BEGIN and COMMIT.
    return await db.run(read, single=True)


async def version_at_init(db: SqlDatabase, domain: str) -> int | None:
    """The version recorded for ``domain``, as ``init()`` checks it.

    The domains of a store share its database and settle one after the other within one
    opening of the store (``Store.init``), just after its tables were listed
    (``SqlDatabase.create``). The first of them reads every domain's version with one
    query; the others take theirs from that reading: opening a database costs one version
    read, not one per domain (PostgreSQL: 7 round trips). Each domain writes only its own
    version, so what the others took stays true for them. Nothing is kept past the opening:
    a domain initialized on its own, or one settling before the version table exists (a new
    database), reads as :func:`read_version` does."""
    current = opening()
    tbl = versions_table(db)
    if current is None or not _known(db):
        return await read_version(db, domain)
    reading = _read_for_opening.get(db)
    if reading is None or reading.opening is not current:
        stmt = sa.select(tbl.c.domain, tbl.c.version)

        def read(conn: Connection) -> dict[str, int]:
            return {name: version for name, version in conn.execute(stmt)}

        # In autocommit, as read_version: the reading needs no common snapshot.
        reading = _VersionsRead(current, await db.run(read, single=True))
        _read_for_opening[db] = reading
    return reading.versions.get(domain)


async def write_version(db: SqlDatabase, domain: str, version: int) -> None:
    """Record ``version`` for ``domain``."""
    tbl = await _ensure(db)
    row = {"domain": domain, "version": version, "updatedAt": now_utc()}
    # An upsert: concurrent init() calls of several processes record the same version.
    stmt = db.dialect.upsert(tbl, [row], ["domain"], ["version", "updatedAt"])
    await db.run(lambda conn: conn.execute(stmt), write=True)


async def migration_plan(db: SqlDatabase, step: Step) -> list[Statement]:
    """The DDL ``step`` still needs on ``db`` (empty when done or nothing to do in SQL)."""
    if isinstance(step, AddColumns):
        return await _add_columns(db, step)
    if isinstance(step, NamePrimaryKey):
        return await _name_primary_key(db, step)
    if isinstance(step, ExactText):
        return await _exact_text(db, step)
    if not isinstance(step, CreateIndex):
        return []  # SQL lists every table through its key: no listing index to build
    spec = step.spec()
    documented = step.documented()
    if documented not in spec.indexes_for(db.dialect.family):
        # One of Mastra's indexes of another family, or one of ours that an index of this
        # family (created by its own step) already covers.
        return []
    found = await describe_physical(db, [spec])
    if not found:
        return []  # init() creates the table with all of its indexes
    if index_matches(found[0], documented)[0]:
        return []  # an index on these columns exists (drift in its shape is inspect's to say)
    live = db.tables[spec.base_name].to_metadata(sa.MetaData())
    name = index_name(db.dialect, documented, live.name, db.prefix, db.schema)
    index = next(i for i in live.indexes if i.name == name)
    for option, value in db.dialect.live_index_options.items():
        index.dialect_kwargs[option] = value
    ddl = CreateIndexDDL(index)
    text = str(ddl.compile(dialect=db.engine.dialect)).strip()
    if db.dialect.live_index_autocommit:
        return [Statement(text, lambda: _autocommit(db, ddl), transactional=False)]

    async def run() -> None:
        await db.run(lambda conn: conn.execute(ddl), write=True)

    return [Statement(text, run)]


async def _ddl(db: SqlDatabase, text: str) -> Statement:
    async def run() -> None:
        await db.run(lambda conn: conn.exec_driver_sql(text), write=True)

    return Statement(text, run)


async def _add_columns(db: SqlDatabase, step: AddColumns) -> list[Statement]:
    spec = table(step.table)
    found = await describe_physical(db, [spec])
    if not found:
        return []  # init() creates the table with every column
    tbl = db.tables[spec.base_name]
    prep = db.engine.dialect.identifier_preparer
    statements = []
    for name in step.columns:
        if found[0].column(name) is not None:
            continue
        col = tbl.c[name]
        type_sql = col.type.compile(dialect=db.engine.dialect)
        text = db.dialect.add_column(
            prep.format_table(tbl), prep.format_column(col), type_sql, nullable=True
        )
        statements.append(await _ddl(db, text))
    return statements


async def _name_primary_key(db: SqlDatabase, step: NamePrimaryKey) -> list[Statement]:
    spec = table(step.table)
    wanted = db.dialect.primary_key_name(spec, db.prefix, db.schema)
    if wanted is None:
        return []  # the backend names the key itself
    tbl = db.tables[spec.base_name]

    def current(conn: Connection) -> str | None:
        inspector = sa.inspect(conn)
        if not inspector.has_table(tbl.name, schema=tbl.schema):
            return None
        name: str | None = inspector.get_pk_constraint(tbl.name, schema=tbl.schema).get("name")
        return name

    have = await db.run(current)
    if have is None or have == wanted:
        return []
    prep = db.engine.dialect.identifier_preparer
    text = (
        f"ALTER TABLE {prep.format_table(tbl)} RENAME CONSTRAINT {prep.quote(have)} "
        f"TO {prep.quote(wanted)}"
    )
    return [await _ddl(db, text)]


async def _exact_text(db: SqlDatabase, step: ExactText) -> list[Statement]:
    tbl = db.tables[table(step.table).base_name]

    def statements(conn: Connection) -> list[str]:
        if not sa.inspect(conn).has_table(tbl.name, schema=tbl.schema):
            return []  # init() creates the table with exact text
        return db.dialect.exact_text(conn, tbl)

    return [await _ddl(db, text) for text in await db.run(statements)]


async def _autocommit(db: SqlDatabase, ddl: CreateIndexDDL) -> None:
    """Run ``ddl`` on a connection of its own, outside any transaction."""
    with map_errors(db.dialect.error_map):
        if db.is_async:
            engine: AsyncEngine = db.engine  # type: ignore[assignment]
            async with engine.connect() as aconn:
                conn = await aconn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(ddl)
            return
        assert isinstance(db.engine, Engine)
        sync_engine = db.engine

        def run() -> None:
            with sync_engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(ddl)

        await asyncio.to_thread(run)
