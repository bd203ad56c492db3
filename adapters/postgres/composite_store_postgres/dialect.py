"""``PostgresDialect``: what PostgreSQL does differently from the shared relational code.

Mastra's layout (DESIGN.md section 9): tables in a schema that is always written out, naive
``TIMESTAMP`` columns holding the UTC wall clock plus ``"cZ" TIMESTAMPTZ`` shadows read in
preference, ``JSONB`` for JSON, ``ON CONFLICT`` upserts and the snapshot key named after the
schema.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.engine.interfaces import ReflectedIndex
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.expression import Executable
from sqlalchemy.types import TypeEngine

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ConflictError,
    ValidationError,
)
from composite_store.schema import POSTGRESQL, Column, ColumnType, Index, TableSpec
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.engine import DriverExecutor
from composite_store.sql.tables import shadow
from composite_store.sql.types import UtcTimestamp, dumps
from composite_store.urls import scheme_of
from composite_store_postgres.json import Jsonb, PgText

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["PostgresDialect", "async_url"]

#: URL schemes that name PostgreSQL; all are served by psycopg 3 in async mode.
SCHEMES = ("postgresql", "postgresql+psycopg", "postgresql+psycopg_async", "postgres")
#: Operator intervention (admin/crash shutdown, cannot connect now, terminated backend) and
#: connection exceptions: the server cannot serve now; the call may be retried.
UNAVAILABLE_SQLSTATES = frozenset(
    {"57P01", "57P02", "57P03", "57P05", "08000", "08001", "08003", "08004", "08006"}
)
#: PostgreSQL truncates longer identifiers (NAMEDATALEN - 1 bytes).
MAX_IDENTIFIER_BYTES = 63
#: deadlock_detected, serialization_failure: the transaction rolled back and may run again.
TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})
#: Seconds after which a pooled connection is replaced (proxies and servers drop idle ones).
POOL_RECYCLE = 1800
#: Rows from which ``dangerously_clear_all`` truncates a table rather than deleting its rows
#: (``PostgresDialect.clear_tables``).
TRUNCATE_FROM_ROWS = 1000
#: lock_not_available: a lock wait ran past ``lock_timeout``.
LOCK_NOT_AVAILABLE = "55P03"


_LOGIN_REFUSALS = (
    (
        re.compile(r'database "([^"]+)" does not exist'),
        'the database "{0}" does not exist; create it (CREATE DATABASE "{0}") or name an '
        "existing one in the URL's path",
    ),
    (
        re.compile(r'role "([^"]+)" does not exist'),
        'the user "{0}" does not exist; create it (CREATE ROLE "{0}" LOGIN) or name another '
        "user in the URL",
    ),
    (
        re.compile(r'password authentication failed for user "([^"]+)"'),
        'the password of user "{0}" is wrong',
    ),
    (
        re.compile(r'no pg_hba\.conf entry for host "([^"]+)", user "([^"]+)", database "([^"]+)"'),
        'pg_hba.conf has no entry that lets user "{1}" reach database "{2}" from {0}',
    ),
)


def async_url(url: str) -> str:
    """``url`` with the psycopg async driver: ``postgresql://`` -> ``postgresql+psycopg://``."""
    scheme = scheme_of(url)
    if scheme not in SCHEMES:
        raise ValidationError(
            f"not a PostgreSQL URL: scheme {scheme!r} (expected postgresql:// or "
            "postgresql+psycopg://)"
        )
    return "postgresql+psycopg://" + url.split("://", 1)[1]


def _excluded(stmt: postgresql.Insert, update: Sequence[str]) -> dict[str, Any]:
    """``SET column = excluded.column`` for each of ``update`` (an upsert's conflict branch)."""
    return {c: stmt.excluded[c] for c in update}


def _identifier(name: str) -> str:
    """Lower-case and cut to PostgreSQL's limit, as Mastra builds constraint names (and as
    PostgreSQL itself would silently cut a longer one)."""
    encoded = name.lower().encode("utf-8")[:MAX_IDENTIFIER_BYTES]
    return encoded.decode("utf-8", errors="ignore")


class PostgresDialect(SqlDialect):
    """PostgreSQL 13+ through psycopg 3 (asyncio)."""

    name: ClassVar[str] = "postgresql"
    family: ClassVar[str] = POSTGRESQL
    driver: ClassVar[str] = "psycopg"
    is_async: ClassVar[bool] = True
    shadow_timestamps: ClassVar[bool] = True
    supports_for_update: ClassVar[bool] = True
    default_schema: ClassVar[str | None] = "public"
    # Migrations build indexes without blocking writers; CONCURRENTLY refuses a transaction.
    live_index_options: ClassVar[Mapping[str, Any]] = {"postgresql_concurrently": True}
    live_index_autocommit: ClassVar[bool] = True
    # Driver connections stay in autocommit: a point read or one upsert is one round trip;
    # operations of several statements send BEGIN themselves (SqlDatabase._driver_transaction).
    autocommit: ClassVar[bool] = True
    update_returning: ClassVar[bool] = True
    writable_ctes: ClassVar[bool] = True
    #: A page of messages and its include windows in one round trip: each part is planned as
    #: alone (an index range from its start), whatever the others.
    one_statement_listing: ClassVar[bool] = True
    error_map: ClassVar[Mapping[type[BaseException], type[CompositeStoreError]]] = {
        # UniqueViolation and the other constraint errors arrive wrapped by SQLAlchemy.
        sa.exc.IntegrityError: ConflictError,
        # Values the server refuses (out of range, bad encoding) after our own checks.
        sa.exc.DataError: ValidationError,
        # Every pooled connection stayed busy for pool_timeout seconds.
        sa.exc.TimeoutError: BackendUnavailableError,
        sa.exc.DBAPIError: CompositeStoreError,
    }

    # -- engine ------------------------------------------------------------------------------------

    def create_engine(self, url: str, options: Mapping[str, Any]) -> AsyncEngine:
        # docstring inherited
        from sqlalchemy.ext.asyncio import create_async_engine

        url, engine_options = self.engine_options(async_url(url), options)
        # Pre-ping replaces connections the server or a proxy closed while they sat idle.
        engine_options.setdefault("pool_pre_ping", True)
        # Bound values are user data (and can be large): keep them out of error messages.
        engine_options.setdefault("hide_parameters", True)
        engine_options.setdefault("pool_recycle", POOL_RECYCLE)
        # No documented column is HSTORE: without it, the first connection of each engine
        # does not look the type up (a savepoint, a catalog query and its release, 3 of the
        # round trips of every store's opening).
        engine_options.setdefault("use_native_hstore", False)
        # Connections of our own class: a cheaper wait per reply and a kept raw cursor
        # (.cursor); SQLAlchemy's psycopg dialect calls this instead of AsyncConnection.connect.
        # They also plan with the indexes whatever the tables' sizes (cursor.INDEX_PLANS).
        from composite_store_postgres.cursor import connect

        connect_args = dict(engine_options.get("connect_args") or {})
        connect_args.setdefault("async_creator_fn", connect)
        engine_options["connect_args"] = connect_args
        return create_async_engine(url, **engine_options)

    def statement_dialect(self, dialect: Dialect) -> Dialect:
        # docstring inherited
        # $n placeholders, which the raw cursor sends as they are (see .cursor).
        numbered = copy.copy(dialect)
        numbered.paramstyle = "numeric_dollar"
        numbered.positional = True
        return numbered

    def execute_prepared(
        self, conn: Connection, sql: str, params: Any, fetch: bool
    ) -> tuple[list[Any] | None, int]:
        # docstring inherited
        from composite_store_postgres.cursor import execute_raw

        return execute_raw(conn, sql, params, fetch)

    def driver_executor(self) -> DriverExecutor | None:
        # docstring inherited
        from composite_store_postgres.cursor import execute_on_driver

        return execute_on_driver

    def stream_prepared(
        self, conn: Connection, sql: str, params: Any, size: int
    ) -> Iterator[list[Any]]:
        # docstring inherited
        from composite_store_postgres.cursor import stream_raw

        return stream_raw(conn, sql, params, size)

    def clear_tables(self, conn: Connection, tables: Sequence[sa.Table]) -> None:
        """Delete every row of ``tables``: a table of ``TRUNCATE_FROM_ROWS`` rows or more is
        truncated (as Mastra's ``clearTable`` does), a smaller one deleted row by row.

        A ``DELETE`` leaves every row dead in the table and its indexes until a vacuum reaches
        them, and the next reads and unique checks of the same keys step over the dead
        entries (a test suite or a benchmark writing the same ids again after each clear
        read the same traces at half speed). ``TRUNCATE`` leaves nothing behind but costs a
        fixed few milliseconds a table (new files, synced at commit), more than deleting a
        few rows. It needs an exclusive lock: behind another session's lock it waits at most
        ``lock_timeout`` and the rows are deleted instead.
        """
        large: list[sa.Table] = []
        for table in tables:
            sample = sa.select(sa.literal(1)).select_from(table).limit(TRUNCATE_FROM_ROWS)
            rows = conn.execute(sa.select(sa.func.count()).select_from(sample.subquery()))
            if rows.scalar_one() >= TRUNCATE_FROM_ROWS:
                large.append(table)
            else:
                conn.execute(table.delete())
        if not large:
            return
        names = ", ".join(conn.dialect.identifier_preparer.format_table(t) for t in large)
        savepoint = conn.begin_nested()
        try:
            conn.execute(sa.text("SET LOCAL lock_timeout = '2s'"))
            conn.execute(sa.text(f"TRUNCATE {names}"))
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
            savepoint.rollback()
            for table in large:
                conn.execute(table.delete())
        else:
            savepoint.commit()

    def ensure_autocommit(self, driver: Any) -> Awaitable[Any] | None:
        # docstring inherited
        # psycopg switches without a round trip (it only stops sending BEGIN itself).
        return None if driver.autocommit else driver.set_autocommit(True)

    def is_transient(self, exc: sa.exc.DBAPIError) -> bool:
        # docstring inherited
        return getattr(exc.orig, "sqlstate", None) in TRANSIENT_SQLSTATES

    def is_unavailable(self, exc: sa.exc.DBAPIError) -> bool:
        # docstring inherited
        return getattr(exc.orig, "sqlstate", None) in UNAVAILABLE_SQLSTATES

    def login_refusal(self, exc: BaseException) -> str | None:
        # docstring inherited
        # libpq reports a refused login as text only (no SQLSTATE reaches psycopg before the
        # connection exists), so the server's FATAL messages are matched here.
        text = str(exc)
        for pattern, explain in _LOGIN_REFUSALS:
            found = pattern.search(text)
            if found:
                return "PostgreSQL refused the connection: " + explain.format(*found.groups())
        return None

    def create_namespace(self, conn: Connection, schema: str | None) -> None:
        # docstring inherited
        if not schema:
            return
        # Look first: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the
        # schema exists, which an application role given only its schema lacks.
        exists = sa.select(sa.literal(1)).where(
            sa.table("pg_namespace", sa.column("nspname"), schema="pg_catalog").c.nspname
            == schema
        )
        if conn.execute(exists).first() is None:
            quoted = conn.dialect.identifier_preparer.quote_identifier(schema)
            conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {quoted}")

    # -- types -------------------------------------------------------------------------------------

    def json_type(self) -> TypeEngine[Any]:
        return Jsonb()

    def timestamp_type(self) -> TypeEngine[Any]:
        # Naive TIMESTAMP holding the UTC wall clock, whatever the session time zone.
        return UtcTimestamp()

    def text_type(self) -> TypeEngine[Any]:
        return PgText()

    def key_text_type(self) -> TypeEngine[Any]:
        return PgText()

    # -- statements --------------------------------------------------------------------------------

    def upsert(
        self,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        update: Sequence[str],
    ) -> Executable:
        # docstring inherited
        stmt = postgresql.insert(table).values(list(rows))
        if not update:
            return stmt.on_conflict_do_nothing(index_elements=list(key))
        return stmt.on_conflict_do_update(index_elements=list(key), set_=_excluded(stmt, update))

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
        from composite_store_postgres.bulk import copy_rows

        staged = copy_rows(conn, table, columns, rows, keyed=bool(key))
        if staged is not None:
            update = [c for c in columns if c not in key]
            select = sa.select(*(staged.c[c] for c in columns))
            conn.execute(self.upsert_from_select(table, columns, select, key, update))

    def bulk_processor(
        self, column: sa.Column[Any], dialect: Dialect
    ) -> Callable[[Any], Any] | None:
        # docstring inherited
        from composite_store_postgres.bulk import copy_processor

        return copy_processor(column, dialect)

    def upsert_from_select(
        self, table: sa.Table, columns: Sequence[str], select: sa.Select[Any],
        key: Sequence[str], update: Sequence[str],
    ) -> Any:
        # docstring inherited
        stmt = postgresql.insert(table).from_select(list(columns), select)
        return stmt.on_conflict_do_update(index_elements=list(key), set_=_excluded(stmt, update))

    def read_column(self, table: sa.Table, column: Column) -> ColumnElement[Any]:
        # docstring inherited
        if column.type is not ColumnType.TIMESTAMP:
            return table.c[column.name]
        # The shadow column is exact whatever the writer's session time zone; the naive one
        # (UTC wall clock) covers rows written before the shadows existed.
        naive = sa.func.timezone(sa.literal_column("'UTC'"), table.c[column.name])
        chosen = sa.func.coalesce(table.c[shadow(column.name)], naive)
        return sa.type_coerce(chosen, UtcTimestamp()).label(column.name)

    def json_field(self, column: ColumnElement[Any], key: str) -> ColumnElement[Any]:
        # docstring inherited
        return column.op("->>", return_type=sa.Text)(sa.literal(key, sa.Text))

    def json_equals(
        self, column: ColumnElement[Any], key: str, value_json: ColumnElement[Any]
    ) -> ColumnElement[bool]:
        # docstring inherited
        # Compare as JSONB, so 2 matches 2.0 and a nested object matches by value.
        field = column.op("->", return_type=postgresql.JSONB)(sa.literal(key, sa.Text))
        return field == sa.cast(value_json, postgresql.JSONB)

    def json_array_contains(self, column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
        # docstring inherited
        return column.op("@>", return_type=sa.Boolean)(
            sa.cast(sa.literal(dumps([value]), sa.Text), postgresql.JSONB)
        )

    def unique_name(self, table: str, columns: Sequence[str], schema: str | None) -> str:
        # Mastra: public_mastra_workflow_snapshot_workflow_name_run_id_key.
        base = f"{table}_{'_'.join(columns)}_key"
        return _identifier(f"{schema}_{base}" if schema else base)

    def primary_key_name(self, spec: TableSpec, prefix: str, schema: str | None) -> str | None:
        # Mastra: <schema>_mastra_ai_spans_traceid_spanid_pk (its init() adds a key of that
        # name when none exists, which fails on a table keyed under another name).
        base = spec.primary_key_name(prefix)
        if base is None:
            return None
        return _identifier(f"{schema or 'public'}_{base}")

    def index_name(self, index: Index, table: str, prefix: str, schema: str | None) -> str:
        # Mastra prefixes most of its index names with the schema outside public.
        name = index.physical_name(table, prefix)
        if index.schema_prefixed and schema and schema != "public":
            name = f"{schema}_{name}"
        return _identifier(name)

    # -- introspection -----------------------------------------------------------------------------

    def index_directions(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> tuple[bool, ...] | None:
        # docstring inherited
        # SQLAlchemy reports column_sorting only for indexes with a non-default direction.
        sorting = index.get("column_sorting") or {}
        return tuple("desc" in sorting.get(name or "", ()) for name in index["column_names"])
