"""``SqlDialect``: the named hooks through which one relational backend differs from another.

Shared SQL (``composite_store.sql.memory`` and friends) never asks which backend it runs on;
it calls these hooks. A backend package subclasses ``SqlDialect`` and overrides what differs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.engine.interfaces import ReflectedIndex
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.expression import Executable
from sqlalchemy.types import TypeEngine

from composite_store.domains.base import Capabilities
from composite_store.errors import CompositeStoreError, ValidationError
from composite_store.schema import (
    MASTRA_FAMILIES,
    SHADOW_TIMESTAMPS,
    Column,
    ColumnType,
    Index,
    TableSpec,
)
from composite_store.sql.engine.prepared import DriverExecutor, driver_chunks, driver_cursor
from composite_store.sql.types import JsonText
from composite_store.urls import split_options

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["PLACEMENT_OPTIONS", "POOL_OPTIONS", "URL_OPTIONS", "SqlDialect"]

#: Connection-pool settings a server URL may carry as query parameters, with their parsers.
POOL_OPTIONS: Mapping[str, Callable[[str], Any]] = {
    "max_overflow": int,
    "pool_recycle": int,
    "pool_size": int,
    "pool_timeout": float,
}

#: The query parameters that say where a relational store's tables are: taken out of the URL
#: by the store (or a standalone domain's database) before the driver sees it.
PLACEMENT_OPTIONS: tuple[str, ...] = ("prefix", "schema")

#: The query parameters a relational store's URL carries for composite-store itself; any other
#: goes to the driver.
URL_OPTIONS: tuple[str, ...] = (*PLACEMENT_OPTIONS, *POOL_OPTIONS)


class SqlDialect:
    """Defaults fit a generic SQLAlchemy backend; subclasses override what differs."""

    #: Backend family name (``sqlite``, ``postgresql``, ``mysql``, ...).
    name: ClassVar[str] = "sql"
    #: The family whose physical layout the tables follow: ``postgresql`` and ``sqlite``
    #: (libSQL too) are Mastra's (``schema.MASTRA_FAMILIES``: Mastra's own indexes and
    #: names); other backends derive theirs from the portable schema.
    family: ClassVar[str] = "sql"
    #: Dialect options of a ``CREATE INDEX`` a migration runs on a table in use (PostgreSQL:
    #: ``{"postgresql_concurrently": True}``, which does not block writers).
    live_index_options: ClassVar[Mapping[str, Any]] = {}
    #: Whether those options keep the statement out of a transaction (``CONCURRENTLY`` must).
    live_index_autocommit: ClassVar[bool] = False
    #: Whether ``create_engine`` returns an ``AsyncEngine`` (else operations hop to a thread).
    is_async: ClassVar[bool] = False
    #: PostgreSQL writes every timestamp ``c`` twice: naive ``c`` and ``"cZ" TIMESTAMPTZ``.
    shadow_timestamps: ClassVar[bool] = False
    #: ``SELECT ... FOR UPDATE`` locks rows for read-modify-writes (else the write transaction
    #: itself must be exclusive, as SQLite's ``BEGIN IMMEDIATE`` is).
    supports_for_update: ClassVar[bool] = False
    #: The schema tables live in when none is given (PostgreSQL writes ``public`` out).
    default_schema: ClassVar[str | None] = None
    #: Whether indexes keep the documented DESC directions. InnoDB (MySQL, MariaDB) appends the
    #: primary key, ascending, to every secondary index, so there an ascending index read
    #: backwards serves ``ORDER BY "createdAt" DESC, id DESC`` with no sort, and a DESC one
    #: serves neither direction with the id tie-break (a sort of the whole thread).
    descending_indexes: ClassVar[bool] = True
    #: Whether a page of messages and its include windows are read in one statement
    #: (``SqlMemory._listing``: a ``UNION ALL`` reading the messages table once a part), which
    #: saves a server a round trip a window. Off, the page and each window are a statement of
    #: their own. On where measured and its plans checked (tests/test_query_plans.py):
    #: PostgreSQL. Not on SQLite, where no round trip is saved and the one statement costs the
    #: engine more than the two (docs/benchmarks.md), nor on MariaDB (its dialect says why).
    one_statement_listing: ClassVar[bool] = False
    #: What every domain on this backend guarantees.
    capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True,
        concurrent_updates=True,
        compare_and_set=True,
        transactions=True,
        sort_threads=True,
        metadata_filters=True,
        list_scores_by_span=True,
        span_attribute_filters=True,
    )
    #: Driver exceptions -> our errors, in order; see ``errors.map_errors``.
    error_map: ClassVar[Mapping[type[BaseException], type[CompositeStoreError]]] = {}

    # -- engine ------------------------------------------------------------------------------------

    def create_engine(self, url: str, options: Mapping[str, Any]) -> Engine | AsyncEngine:
        """Create the engine for ``url`` (no I/O happens here)."""
        return sa.create_engine(url, **options)

    #: Keyword options of this dialect beyond SQLAlchemy's engine options (``SqlStore``
    #: refuses any other).
    own_options: ClassVar[frozenset[str]] = frozenset()

    def engine_options(
        self, url: str, options: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        """Split pool settings given as URL query parameters (``?pool_size=10``) off ``url``
        and merge them under the keyword ``options`` (keywords win).

        Server backends call this in ``create_engine``: the driver would reject them as
        connection parameters.
        """
        url, query = split_options(url, POOL_OPTIONS)
        parsed: dict[str, Any] = {}
        for key, raw in query.items():
            try:
                parsed[key] = POOL_OPTIONS[key](raw)
            except ValueError:
                raise ValidationError(
                    f"invalid URL option {key}={raw!r}: expected a number"
                ) from None
        parsed.update(options)
        return url, parsed

    def statement_dialect(self, dialect: Dialect) -> Dialect:
        """The dialect prepared statements (``sql.engine.prepared``) are compiled with, given the
        engine's; the default is the engine's own."""
        return dialect

    def execute_prepared(
        self, conn: Connection, sql: str, params: Any, fetch: bool
    ) -> tuple[list[Any] | None, int]:
        """Run one prepared statement (``sql.engine.prepared``) on the operation's connection: the
        rows when ``fetch`` (else None) and the driver's row count. The default uses a cursor of
        the DB-API connection; async backends drive their own driver in one await."""
        return driver_cursor(conn, sql, params, fetch)

    def driver_executor(self) -> DriverExecutor | None:
        """How one prepared statement is awaited on the async driver's own connection straight
        from the event loop, or None (the default): then it runs through
        :meth:`execute_prepared`, inside the operation's greenlet. ``SqlDatabase.fetch`` and
        ``SqlDatabase.execute`` use it for operations of one statement in autocommit, which
        need neither the greenlet nor SQLAlchemy's connection bookkeeping around it."""
        return None

    def stream_prepared(
        self, conn: Connection, sql: str, params: Any, size: int
    ) -> Iterator[list[Any]]:
        """Run one prepared SELECT and yield its rows in lists of at most ``size``, for reads
        of every row (``Prepared.each``), so that driver rows never pile up beside the records
        built from them. The default uses ``fetchmany`` on a cursor of the DB-API connection;
        a backend whose prepared SQL that cursor does not take (another parameter style)
        drives its own driver."""
        return driver_chunks(conn, sql, params, size)

    def embedded(self, url: str | None) -> bool:
        """Whether the database at ``url`` runs inside this process (an embedded file), its
        work done on this process's CPU rather than awaited from a server; ``url`` is None
        for an engine the caller built. Server backends: never."""
        return False

    def read_only_engine(self, url: str, options: Mapping[str, Any]) -> Engine | None:
        """An engine on ``url`` that cannot create or change anything, for ``Domain.attach``
        (``composite-store inspect``), or None when connecting creates nothing anyway (server
        backends: a connection creates no database). Embedded files say otherwise: opening one
        creates a missing file and switches it to WAL."""
        return None

    def login_refusal(self, exc: BaseException) -> str | None:
        """Why the server refused the connection the URL describes (no such database, user or
        password), in our words with the fix, or None when ``exc`` is no such refusal. The
        default knows none."""
        return None

    def schema_refusal(self, exc: BaseException) -> str | None:
        """Why the server refused a statement over a part of the documented schema that the
        database lacks (an index the statement names: :meth:`through_index`), in our words
        with the fix, or None when ``exc`` is no such refusal. The default knows none."""
        return None

    def is_unavailable(self, exc: sa.exc.DBAPIError) -> bool:
        """Whether ``exc`` says the server cannot serve now (shutting down, restarting, the
        connection terminated by an operator): a retryable ``BackendUnavailableError``, not a
        failure of the operation. The default: never (the text checks of ``SqlDatabase.run``
        still apply)."""
        return False

    def is_transient(self, exc: sa.exc.DBAPIError) -> bool:
        """Whether the server aborted the operation's transaction in a way that running it
        again may cure (a deadlock victim, a serialization failure); the default: never."""
        return False

    def begin(self, conn: Connection, *, write: bool) -> None:
        """Start the operation's transaction; the default lets SQLAlchemy autobegin."""

    def clear_tables(self, conn: Connection, tables: Sequence[sa.Table]) -> None:
        """Delete every row of ``tables`` inside the operation's transaction
        (``dangerously_clear_all``); the default: one ``DELETE`` a table."""
        for table in tables:
            conn.execute(table.delete())

    #: ``UPDATE .. RETURNING`` and ``INSERT .. ON CONFLICT .. RETURNING`` (PostgreSQL, SQLite
    #: 3.35+): a write can say what it touched or wrote without another statement.
    update_returning: ClassVar[bool] = False
    def upsert_returning(self) -> bool:
        """Whether an upsert (``SqlDialect.upsert``) takes ``RETURNING`` and returns the row as
        stored (PostgreSQL, SQLite 3.35+, MariaDB 10.5+); the default: ``update_returning``."""
        return self.update_returning

    #: Data-modifying statements in a ``WITH`` (PostgreSQL): a message batch in one statement.
    writable_ctes: ClassVar[bool] = False

    #: Async drivers: whether operations run on driver connections kept in autocommit, a
    #: ``single`` operation (``SqlDatabase.run``) without BEGIN/COMMIT and any other in an
    #: explicit ``BEGIN`` .. ``COMMIT`` (see ``ensure_autocommit``).
    autocommit: ClassVar[bool] = False

    def ensure_autocommit(self, driver: Any) -> Awaitable[Any] | None:
        """What puts ``driver`` (the async driver's connection) in autocommit, or None when it is
        already (``autocommit`` dialects only)."""
        return None

    def create_namespace(self, conn: Connection, schema: str | None) -> None:
        """Create ``schema`` if the backend has schemas and it is missing."""

    # -- types -------------------------------------------------------------------------------------

    def column_type(self, column: Column) -> TypeEngine[Any]:
        """The physical type of a documented column."""
        kind = column.type
        if kind is ColumnType.JSON:
            return self.json_type()
        if kind is ColumnType.TIMESTAMP:
            return self.timestamp_type()
        if kind is ColumnType.TEXT:
            return self.key_text_type() if column.key else self.text_type()
        scalars: dict[ColumnType, TypeEngine[Any]] = {
            ColumnType.INTEGER: sa.Integer(),
            ColumnType.BIGINT: sa.BigInteger(),
            ColumnType.FLOAT: sa.Float(),
            ColumnType.BOOLEAN: sa.Boolean(),
        }
        return scalars[kind]

    def json_type(self) -> TypeEngine[Any]:
        return JsonText()

    def timestamp_type(self) -> TypeEngine[Any]:
        raise NotImplementedError

    def shadow_timestamp_type(self) -> TypeEngine[Any]:
        return sa.DateTime(timezone=True)

    def text_type(self) -> TypeEngine[Any]:
        """Unbounded text (messages, prompts, working memory)."""
        return sa.Text()

    def key_text_type(self) -> TypeEngine[Any]:
        """Text that can sit in a key or index (MySQL and Oracle need a bounded VARCHAR)."""
        return sa.Text()

    def variants(self) -> frozenset[str]:
        """The physical variants of the documented schema (``schema.VARIANTS``) this backend's
        tables use: the schema checks accept what they add, and nothing else."""
        return frozenset({SHADOW_TIMESTAMPS}) if self.shadow_timestamps else frozenset()

    def table_constraints(self, spec: TableSpec, table_name: str) -> Sequence[sa.Constraint]:
        """Extra constraints of a rendered table (Oracle: ``IS JSON`` checks); none by default."""
        return ()

    # -- statements --------------------------------------------------------------------------------

    def upsert(
        self,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        update: Sequence[str],
    ) -> Executable:
        """INSERT ``rows``, replacing ``update`` columns of rows whose ``key`` exists."""
        raise NotImplementedError

    #: A bulk path for imports (``bulk_upsert``): PostgreSQL's ``COPY``.
    bulk_load: ClassVar[bool] = False

    def bulk_upsert(
        self,
        conn: Connection,
        table: sa.Table,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        key: Sequence[str],
    ) -> None:
        """Upsert ``rows`` (bind values of ``columns``, in that order, already converted by
        :meth:`bulk_processor`) into ``table`` by ``key`` (append when it is empty)
        through the backend's bulk path (``bulk_load`` dialects), inside the operation's
        transaction: the import of ``composite_store.admin.copy``
        (``sql.transfer.import_rows``)."""
        raise NotImplementedError(f"{self.name} has no bulk load path here")

    def bulk_processor(
        self, column: sa.Column[Any], dialect: Dialect
    ) -> Callable[[Any], Any] | None:
        """The conversion of a non-None value of ``column`` for :meth:`bulk_upsert` (None:
        the value as it is): the column type's bind processor, the conversions and checks a
        statement binding the value runs. A dialect whose bulk path sends values in another
        form overrides it for some columns, checking the same and storing the same."""
        process: Callable[[Any], Any] | None = column.type.bind_processor(dialect)
        return process

    def upsert_from_select(
        self,
        table: sa.Table,
        columns: Sequence[str],
        select: sa.Select[Any],
        key: Sequence[str],
        update: Sequence[str],
    ) -> Any:
        """``INSERT INTO table (columns) <select>`` updating ``update`` on a ``key`` conflict
        (``writable_ctes`` dialects)."""
        raise NotImplementedError(f"{self.name} has no INSERT .. SELECT upsert here")

    def read_column(self, table: sa.Table, column: Column) -> ColumnElement[Any]:
        """How a documented column is selected (labelled with its documented name)."""
        return table.c[column.name]

    def through_index(self, select: sa.Select[Any], table: sa.Table, index: str) -> sa.Select[Any]:
        """``select``, which reads ``table`` by a range of index ``index`` (its physical name),
        held to that range where the engine's planner could trade it for another access path
        as its statistics or cost estimates change. The default leaves ``select`` as it is: the
        PostgreSQL and SQLite plans of such reads are checked to hold by
        tests/test_query_plans.py."""
        return select

    def json_field(self, column: ColumnElement[Any], key: str) -> ColumnElement[Any]:
        """The text value of top-level ``key`` of a JSON column."""
        return sa.func.json_extract(column, f'$."{key}"')

    def json_text(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        """A JSON column as searchable text (for ``LIKE``); Oracle cannot ``CAST`` to a LOB."""
        return sa.cast(column, sa.Text)

    def json_equals(
        self, column: ColumnElement[Any], key: str, value_json: ColumnElement[Any]
    ) -> ColumnElement[bool]:
        """``column[key] == value`` for a top-level key of a JSON object column, compared as
        JSON values; ``value_json`` is an expression (a bind parameter) holding the value's
        JSON text (``sql.types.dumps(value)``), so statements do not change with the value."""
        path = f'$."{key}"'
        # json_extract yields SQL values, in which true is 1 and an object is its JSON text:
        # the JSON types must match too (an integer and a real are both numbers), so that
        # true never matches 1, nor the string '{"a":1}' the object (rules/json_match.py).
        equals: ColumnElement[bool] = sa.and_(
            self.json_field(column, key) == sa.func.json_extract(value_json, "$"),
            _json_kind(sa.func.json_type(column, path)) == _json_kind(
                sa.func.json_type(value_json, "$")
            ),
        )
        return equals

    def json_array_contains(self, column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
        """Whether the JSON array in ``column`` holds the string ``value`` (span tags).

        The default reads the array with SQLite's ``json_each``; PostgreSQL would use ``@>``,
        MySQL ``JSON_CONTAINS``.
        """
        elements = sa.func.json_each(column).table_valued("value")
        return sa.exists(sa.select(1).select_from(elements).where(elements.c.value == value))

    def unique_name(self, table: str, columns: Sequence[str], schema: str | None) -> str:
        return f"{table}_{'_'.join(columns)}_key"

    def primary_key_name(self, spec: TableSpec, prefix: str, schema: str | None) -> str | None:
        """The primary key constraint's name, or None to let the database name it."""
        return None

    def index_name(self, index: Index, table: str, prefix: str, schema: str | None) -> str:
        """The physical name of documented ``index`` of ``table``: ``<table>_<suffix>``, or
        Mastra's own name on the backends whose tables are Mastra's."""
        if self.family in MASTRA_FAMILIES:
            return index.physical_name(table, prefix)
        return index.name(table)

    # -- drift fixes (``composite-store inspect``) -------------------------------------------------

    #: Whether ``ALTER TABLE`` can change a column's type or nullability and add keys (SQLite
    #: cannot: its fix is a fresh table filled by ``composite-store copy``).
    alter_table_in_place: ClassVar[bool] = True

    def add_column(self, table: str, column: str, type_sql: str, nullable: bool) -> str:
        """The statement adding ``column`` (quoted) of ``type_sql`` to ``table`` (quoted);
        the default is standard SQL (PostgreSQL, MySQL/MariaDB, SQLite)."""
        null = "" if nullable else " NOT NULL"
        return f"ALTER TABLE {table} ADD COLUMN {column} {type_sql}{null}"

    def alter_column(
        self, table: str, column: str, type_sql: str, nullable: bool, *, retype: bool
    ) -> str:
        """The statement giving existing ``column`` of ``table`` (both quoted) the nullability
        and, with ``retype``, the type ``type_sql``; the default is standard SQL as PostgreSQL
        takes it."""
        null = f"ALTER COLUMN {column} {'DROP' if nullable else 'SET'} NOT NULL"
        if not retype:
            return f"ALTER TABLE {table} {null}"
        return (
            f"ALTER TABLE {table} ALTER COLUMN {column} TYPE {type_sql} USING "
            f"{column}::{type_sql}, {null}"
        )

    def exact_text(self, conn: Connection, table: sa.Table) -> list[str]:
        """The statements that make the existing ``table``'s text columns compare exactly (the
        ``ExactText`` migration step); none where text already does (the default:
        PostgreSQL, SQLite, Oracle compare strings byte by byte)."""
        return []

    # -- introspection (the conformance suite's physical view) -----------------------------------

    def documented_types(self, physical: TypeEngine[Any]) -> frozenset[ColumnType]:
        """The documented types a reflected column type can hold: the schema checks' notion of
        "compatible".

        Written independently of :meth:`column_type` (which creates the tables), so a wrong
        mapping there shows up as a mismatch here. The default reads SQLAlchemy's generic
        type classes; a backend overrides it where its types hold more (SQLite's ``TEXT``
        holds JSON and timestamps) or reflect as something else (MariaDB's ``JSON`` is a
        ``LONGTEXT``).
        """
        if isinstance(physical, sa.Boolean):
            return frozenset({ColumnType.BOOLEAN})
        if isinstance(physical, sa.BigInteger):
            return frozenset({ColumnType.INTEGER, ColumnType.BIGINT})
        if isinstance(physical, sa.Integer):
            return frozenset({ColumnType.INTEGER})
        if isinstance(physical, (sa.Float, sa.Numeric)):
            return frozenset({ColumnType.FLOAT})
        if isinstance(physical, sa.DateTime):
            return frozenset({ColumnType.TIMESTAMP})
        if isinstance(physical, sa.JSON):
            return frozenset({ColumnType.JSON})
        if isinstance(physical, sa.String):  # sa.Text and CLOB included
            return frozenset({ColumnType.TEXT})
        return frozenset()

    def index_columns(self, conn: Connection, index: ReflectedIndex) -> tuple[str, ...]:
        """The column names of a reflected index; an expression part (no column name) shows
        as its SQL text. Oracle overrides it: a descending column reflects as an expression."""
        expressions = index.get("expressions") or []
        return tuple(
            name if name is not None else (expressions[i] if i < len(expressions) else "?")
            for i, name in enumerate(index["column_names"])
        )

    def index_partial(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> bool:
        """Whether a reflected index is partial (has a WHERE clause); the default reads
        SQLAlchemy's dialect options."""
        options = index.get("dialect_options") or {}
        return any(key.endswith("_where") and value is not None for key, value in options.items())

    def index_directions(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> tuple[bool, ...] | None:
        """Each column's direction (True: descending) of a reflected index, or None when the
        backend does not report directions.

        The default reads SQLAlchemy's ``column_sorting``. Where reflection reports it only
        for indexes that have a descending column (PostgreSQL), override this to read its
        absence as "all ascending".
        """
        sorting = index.get("column_sorting")
        if sorting is None:
            return None
        return tuple("desc" in sorting.get(name or "", ()) for name in index["column_names"])


def _json_kind(json_type: ColumnElement[Any]) -> ColumnElement[Any]:
    """SQLite's ``json_type`` with ``real`` taken for ``integer``: both are numbers."""
    # Literal SQL, not bound values: a prepared statement's text must not depend on values.
    real: ColumnElement[str] = sa.literal_column("'real'")
    integer: ColumnElement[str] = sa.literal_column("'integer'")
    return sa.case((json_type == real, integer), else_=json_type)
