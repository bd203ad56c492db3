"""SQLite, the embedded default: ``sqlite:///PATH`` (stdlib ``sqlite3``, no extra needed).

Files follow Mastra's libSQL layout: timestamps as ``YYYY-MM-DDTHH:MM:SS.sssZ`` text, JSON as
text, WAL journal, a busy timeout and ``synchronous=NORMAL``. Every operation runs in one
transaction on the store's worker thread; writes take the write lock up front
(``BEGIN IMMEDIATE``), so read-modify-writes are atomic across processes too.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import time
import urllib.parse
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import ReflectedIndex
from sqlalchemy.sql.expression import Executable
from sqlalchemy.types import TypeEngine

from composite_store.errors import (
    CompositeStoreError,
    ConfigurationError,
    ConflictError,
    ValidationError,
)
from composite_store.schema import SQLITE, Column, ColumnType
from composite_store.sql.datasets import SqlDatasets
from composite_store.sql.dialect import PLACEMENT_OPTIONS, SqlDialect
from composite_store.sql.engine.prepared import driver_error
from composite_store.sql.experiments import SqlExperiments
from composite_store.sql.memory import SqlMemory
from composite_store.sql.observability import SqlObservability
from composite_store.sql.scores import SqlScores
from composite_store.sql.store import SqlStore
from composite_store.sql.types import IntegerBoolean, IsoTimestamp
from composite_store.sql.workflow_definitions import SqlWorkflowDefinitions
from composite_store.sql.workflows import SqlWorkflows
from composite_store.urls import unknown_url_option

__all__ = [
    "SqliteDatasets",
    "SqliteDialect",
    "SqliteExperiments",
    "SqliteMemory",
    "SqliteObservability",
    "SqliteScores",
    "SqliteStore",
    "SqliteWorkflowDefinitions",
    "SqliteWorkflows",
]

#: Milliseconds a writer waits for another process's lock before failing.
BUSY_TIMEOUT_MS = 5000


def install_pragmas(engine: Engine, *, wal: bool, synchronous: bool = True) -> None:
    """Set each new connection up as Mastra sets its files: a busy timeout, WAL (``wal``:
    a file, not ``:memory:``) and synchronous=NORMAL. A read-only connection skips the two
    that would write the file's header."""
    busy_error: type[Exception] = engine.dialect.loaded_dbapi.OperationalError

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Transactions are ours (BEGIN below), not pysqlite's implicit ones.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if wal:
            _enable_wal(cursor, busy_error)
        if synchronous:
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


def _enable_wal(cursor: Any, busy_error: type[Exception]) -> None:
    """Switch the file to WAL, retrying while other processes hold it.

    Switching a fresh file reads its header under a shared lock and then needs an exclusive
    one; when several processes open the file at once, SQLite answers "database is locked"
    at once rather than call the busy handler (waiting there could deadlock). The first
    process to get through switches the file; the others then find it in WAL already.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except busy_error as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


@contextlib.contextmanager
def _ignored_parameters_refused() -> Iterator[None]:
    """Around ``create_engine``: a query parameter of the URL that SQLAlchemy's pysqlite
    dialect would pass over with a warning (neither sqlite3's nor, without ``uri=true``, a
    SQLite URI parameter) is a ``ConfigurationError`` instead: a typo must not be a setting
    silently ignored."""
    with warnings.catch_warnings():
        # Only that warning ("Query string argument(s) 'x', 'y' are not accepted ...").
        warnings.filterwarnings("error", "Query string argument", sa.exc.SAWarning)
        try:
            yield
        except sa.exc.SAWarning as ignored:
            names = re.findall(r"'([^']+)'", str(ignored).partition(" are not accepted")[0])
            if not names:  # pragma: no cover - SQLAlchemy reworded its warning
                raise ConfigurationError(f"invalid SQLite URL: {ignored}") from None
            raise ConfigurationError(unknown_url_option(names[0], PLACEMENT_OPTIONS)) from None


class SqliteDialect(SqlDialect):
    name: ClassVar[str] = "sqlite"
    family: ClassVar[str] = SQLITE
    alter_table_in_place: ClassVar[bool] = False
    update_returning: ClassVar[bool] = sqlite3.sqlite_version_info >= (3, 35)
    error_map: ClassVar[Mapping[type[BaseException], type[CompositeStoreError]]] = {
        sa.exc.IntegrityError: ConflictError,
        sqlite3.IntegrityError: ConflictError,
        sa.exc.DBAPIError: CompositeStoreError,
    }

    def create_engine(self, url: str, options: Mapping[str, Any]) -> Engine:
        rest = url.split("://", 1)[1] if "://" in url else url
        if rest and not rest.startswith("/"):
            # sqlite://x.db: the host part of a URL, not a path. SQLite URLs have three
            # slashes before a relative path and four before an absolute one.
            path = rest.split("?", 1)[0]
            raise ValidationError(
                f"invalid SQLite URL {url!r}: a file path follows three slashes; did you mean "
                f"'sqlite:///{path}' (relative) or 'sqlite:////{path.lstrip('/')}' (absolute)?"
            )
        with _ignored_parameters_refused():
            engine = sa.create_engine(
                url,
                connect_args={"check_same_thread": False, "isolation_level": None},
                **options,
            )
        memory = engine.url.database in (None, "", ":memory:")
        install_pragmas(engine, wal=not memory)
        return engine

    def embedded(self, url: str | None) -> bool:
        # docstring inherited
        return True

    def read_only_engine(self, url: str, options: Mapping[str, Any]) -> Engine | None:
        # docstring inherited
        path = sa.engine.make_url(url).database
        if path in (None, "", ":memory:"):
            return None
        file = Path(path).resolve()
        target = f"file:{urllib.parse.quote(str(file))}?mode=ro"

        def connect() -> sqlite3.Connection:
            # A missing file reads as what it is, a database without tables, and stays
            # missing (mode=ro never creates one; neither does an empty in-memory stand-in).
            where = target if file.is_file() else ":memory:"
            return sqlite3.connect(where, uri=True, check_same_thread=False, isolation_level=None)

        engine = sa.create_engine("sqlite://", creator=connect, **options)
        install_pragmas(engine, wal=False, synchronous=False)
        return engine

    def begin(self, conn: Connection, *, write: bool) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    def timestamp_type(self) -> TypeEngine[Any]:
        return IsoTimestamp()

    def column_type(self, column: Column) -> TypeEngine[Any]:
        # Mastra declares booleans INTEGER (0/1); SQLAlchemy's BOOLEAN would have NUMERIC
        # affinity.
        if column.type is ColumnType.BOOLEAN:
            return IntegerBoolean()
        return super().column_type(column)

    def upsert(
        self,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        update: Sequence[str],
    ) -> Executable:
        stmt = sqlite_dialect.insert(table).values(list(rows))
        if not update:
            return stmt.on_conflict_do_nothing(index_elements=list(key))
        return stmt.on_conflict_do_update(
            index_elements=list(key), set_={c: stmt.excluded[c] for c in update}
        )

    #: Imports as one ``executemany`` of the one-row upsert: sqlite3 steps the same prepared
    #: statement row after row in C, where a multi-row upsert binds and parses every value.
    bulk_load: ClassVar[bool] = True

    def bulk_upsert(
        self,
        conn: Connection,
        table: sa.Table,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        key: Sequence[str],
    ) -> None:
        # docstring inherited
        binds = {c: sa.bindparam(c, type_=table.c[c].type) for c in columns}
        update = [c for c in columns if c not in key]
        stmt: Any = table.insert().values(binds)
        if key:
            stmt = self.upsert(table, [binds], key, update)
        compiled = stmt.compile(dialect=conn.dialect)
        position = {name: i for i, name in enumerate(columns)}
        order = [position[name] for name in compiled.positiontup or ()]
        # The values come in the statement's order already (the usual case): no copy.
        values = rows if order == list(range(len(columns))) else [
            [row[i] for i in order] for row in rows
        ]
        cursor = conn.connection.cursor()
        try:
            cursor.executemany(compiled.string, values)
        except Exception as exc:
            raise driver_error(conn, exc, compiled.string, None) from exc
        finally:
            cursor.close()

    def documented_types(self, physical: TypeEngine[Any]) -> frozenset[ColumnType]:
        # SQLite stores by type affinity, and Mastra keeps JSON and ISO-8601 timestamps in
        # TEXT, 64-bit integers and booleans in INTEGER. DATETIME holds nothing documented:
        # its values would not sort against Mastra's timestamp text.
        if isinstance(physical, sa.Boolean):
            return frozenset({ColumnType.BOOLEAN})
        if isinstance(physical, sa.Integer):
            return frozenset({ColumnType.INTEGER, ColumnType.BIGINT, ColumnType.BOOLEAN})
        if isinstance(physical, sa.String):
            return frozenset({ColumnType.TEXT, ColumnType.JSON, ColumnType.TIMESTAMP})
        if isinstance(physical, sa.DateTime):
            return frozenset()
        return super().documented_types(physical)

    def index_partial(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> bool:
        # PRAGMA index_list reports it (columns: seq, name, unique, origin, partial).
        quote = conn.dialect.identifier_preparer.quote
        where = f"{quote(schema)}." if schema else ""
        rows = conn.exec_driver_sql(f"PRAGMA {where}index_list({quote(table)})")
        return any(row[1] == index["name"] and row[4] for row in rows)

    def index_directions(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> tuple[bool, ...] | None:
        # SQLAlchemy does not reflect index directions on SQLite; PRAGMA index_xinfo does.
        if not index["name"]:
            return None
        quote = conn.dialect.identifier_preparer.quote
        where = f"{quote(schema)}." if schema else ""
        rows = conn.exec_driver_sql(f"PRAGMA {where}index_xinfo({quote(index['name'])})")
        # Columns: seqno, cid, name, desc, coll, key; key=0 rows are the implicit rowid.
        return tuple(bool(row[3]) for row in rows if row[5])


class SqliteMemory(SqlMemory):
    """Threads, messages and resources in a SQLite file."""

    dialect_cls = SqliteDialect


class SqliteWorkflows(SqlWorkflows):
    """Workflow snapshots in a SQLite file."""

    dialect_cls = SqliteDialect


class SqliteScores(SqlScores):
    """Scorer and eval results in a SQLite file."""

    dialect_cls = SqliteDialect


class SqliteObservability(SqlObservability):
    """AI spans and OpenTelemetry spans in a SQLite file."""

    dialect_cls = SqliteDialect


class SqliteDatasets(SqlDatasets):
    """Datasets, versioned items and the version log in a SQLite file."""

    dialect_cls = SqliteDialect


class SqliteExperiments(SqlExperiments):
    """Experiments and their results in a SQLite file."""

    dialect_cls = SqliteDialect


class SqliteWorkflowDefinitions(SqlWorkflowDefinitions):
    """Workflow definitions and their versions in a SQLite file (beta)."""

    dialect_cls = SqliteDialect


class SqliteStore(SqlStore):
    """Every domain in one SQLite file: ``SqliteStore("sqlite:///agent.db")``."""

    dialect_cls = SqliteDialect
    domain_classes = {
        "memory": SqliteMemory,
        "workflows": SqliteWorkflows,
        "workflow_definitions": SqliteWorkflowDefinitions,
        "datasets": SqliteDatasets,
        "experiments": SqliteExperiments,
        "scores": SqliteScores,
        "observability": SqliteObservability,
    }
