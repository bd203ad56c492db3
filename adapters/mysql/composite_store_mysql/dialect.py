"""``MysqlDialect``: what MariaDB and MySQL do differently from the shared relational code.

One class serves both servers; ``is_mariadb`` tells them apart (SQLAlchemy reads it from the
server version on first connect). Where their SQL differs (JSON equality), the statement is
compiled for the server actually connected, so a ``mysql://`` URL pointing at MariaDB works.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.engine.interfaces import ReflectedIndex
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.expression import Executable
from sqlalchemy.types import TypeEngine

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ConflictError,
    ValidationError,
)
from composite_store.schema import Column, ColumnType
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.types import dumps
from composite_store.urls import scheme_of
from composite_store_mysql.types import (
    ExactLongText,
    ExactVarchar,
    MysqlJson,
    MysqlTimestamp,
    exact_collation,
    json_equals,
    key_text,
    long_text,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["MysqlDialect", "async_url"]

#: URL schemes that name MySQL or MariaDB; all are served by asyncmy.
#: The same spellings as the registry's (composite_store.registry.known_adapters).
SCHEMES = ("mysql", "mysql+pymysql", "mysql+asyncmy", "mariadb", "mariadb+asyncmy")
#: MySQL and MariaDB refuse longer identifiers.
MAX_IDENTIFIER = 64
#: ER_LOCK_DEADLOCK: InnoDB rolled the whole transaction back, so it may simply run again.
#: (A lock wait timeout is not retried: it already waited innodb_lock_wait_timeout.)
TRANSIENT_ERRORS = frozenset({1213})
#: Server errors that refuse the login the URL describes, and what fixes each.
LOGIN_REFUSALS = {
    1044: "grant the user access to that database, or name another in the URL's path",
    1045: "check the user and password in the URL",
    1049: "create the database (CREATE DATABASE ...) or name an existing one in the URL's path",
    1698: "the server authenticates this user otherwise (unix_socket?); check the user in the URL",
}
#: ER_KEY_DOES_NOT_EXITS: an index a statement names (``FORCE INDEX``) is not in its table.
MISSING_INDEX = 1176
#: Prepared statements asyncmy keeps per connection (least recently used closed first): the
#: library's statements of every shape a workload uses, well under the servers'
#: max_prepared_stmt_count (16382) for a pool of dozens of connections.
STATEMENT_CACHE = 256
#: Seconds after which a pooled connection is replaced (below the servers' wait_timeout).
POOL_RECYCLE = 3600
#: Strict: a value that does not fit is an error, never silently truncated. Fixed per
#: connection so a server configured otherwise (ANSI_QUOTES, no strict mode) behaves the same.
SQL_MODE = (
    "STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
    "NO_ENGINE_SUBSTITUTION"
)


def async_url(url: str) -> str:
    """``url`` with the asyncmy driver and utf8mb4: ``mysql://`` -> ``mysql+asyncmy://``."""
    scheme = scheme_of(url)
    if scheme not in SCHEMES:
        raise ValidationError(
            f"not a MySQL/MariaDB URL: scheme {scheme!r} (expected mysql://, mysql+pymysql:// "
            "or mariadb://)"
        )
    parsed = make_url("mysql+asyncmy://" + url.split("://", 1)[1])
    if "charset" not in parsed.query:
        parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    return parsed.render_as_string(hide_password=False)


class MysqlDialect(SqlDialect):
    """MariaDB 10.11+ and MySQL 8.0+ through asyncmy (asyncio)."""

    name: ClassVar[str] = "mysql"
    driver: ClassVar[str] = "asyncmy"
    is_async: ClassVar[bool] = True
    supports_for_update: ClassVar[bool] = True
    # InnoDB appends the primary key (ascending) to secondary indexes: ascending indexes read
    # backwards serve the newest-first reads with their id tie-break (see SqlDialect).
    descending_indexes: ClassVar[bool] = False
    #: Not on: its plans hold (each window half held to its index range, :meth:`through_index`),
    #: but MariaDB 10.11 runs the one statement slower than the page and the window apart (W2i
    #: 1.5-1.9 ms against 1.2-1.7 ms a call, docs/benchmarks.md): it materializes each part
    #: and sorts the union, which costs more than the round trip saved on a local server.
    one_statement_listing: ClassVar[bool] = False
    # Driver connections stay in autocommit (switched once per connection: SQLAlchemy turns it
    # off when it sets the isolation level): a point read or one upsert is one round trip, not
    # the statement and a COMMIT; operations of several statements send BEGIN themselves.
    autocommit: ClassVar[bool] = True
    error_map: ClassVar[Mapping[type[BaseException], type[CompositeStoreError]]] = {
        # Duplicate keys (1062) and other constraint errors, wrapped by SQLAlchemy.
        sa.exc.IntegrityError: ConflictError,
        # Values the server refuses: too long for a key column (1406), out of range.
        sa.exc.DataError: ValidationError,
        # Every pooled connection stayed busy for pool_timeout seconds.
        sa.exc.TimeoutError: BackendUnavailableError,
        sa.exc.DBAPIError: CompositeStoreError,
    }

    def __init__(self) -> None:
        #: Whether the server is MariaDB; learned from the server by the first operation.
        self.is_mariadb: bool | None = None

    # -- engine ------------------------------------------------------------------------------------

    def create_engine(self, url: str, options: Mapping[str, Any]) -> AsyncEngine:
        # docstring inherited
        from sqlalchemy.ext.asyncio import create_async_engine

        if scheme_of(url).startswith("mariadb"):
            self.is_mariadb = True
        url, engine_options = self.engine_options(async_url(url), options)
        engine_options.setdefault("pool_pre_ping", True)
        # Bound values are user data (and can be large): keep them out of error messages.
        engine_options.setdefault("hide_parameters", True)
        engine_options.setdefault("pool_recycle", POOL_RECYCLE)
        # No gap locks: a read-modify-write of a missing row cannot deadlock with another.
        engine_options.setdefault("isolation_level", "READ COMMITTED")
        connect_args = dict(engine_options.pop("connect_args", {}))
        # asyncmy's own sql_mode= argument is sent unquoted, which the server rejects.
        connect_args.setdefault("init_command", f"SET SESSION sql_mode='{SQL_MODE}'")
        # Statements with parameters run as server-side prepared statements, kept per
        # connection: values travel in the binary protocol instead of being escaped into the
        # SQL text, and rows come back binary (a 10-span upsert: 240 -> 31 us of client CPU).
        # A URL's own ?stmt_cache_size= (0: off) goes to the driver as given.
        if "stmt_cache_size" not in make_url(url).query:
            connect_args.setdefault("stmt_cache_size", STATEMENT_CACHE)
        return create_async_engine(url, connect_args=connect_args, **engine_options)

    def is_transient(self, exc: sa.exc.DBAPIError) -> bool:
        # docstring inherited
        args: tuple[object, ...] = getattr(exc.orig, "args", ())
        return bool(args) and args[0] in TRANSIENT_ERRORS

    def login_refusal(self, exc: BaseException) -> str | None:
        # docstring inherited
        args: tuple[object, ...] = getattr(exc, "args", ())
        if len(args) < 2 or args[0] not in LOGIN_REFUSALS:
            return None
        return f"{self.server_name} refused the connection: {args[1]} ({LOGIN_REFUSALS[args[0]]})"

    def schema_refusal(self, exc: BaseException) -> str | None:
        # docstring inherited
        args: tuple[object, ...] = getattr(exc, "args", ())
        if len(args) < 2 or args[0] != MISSING_INDEX:
            return None
        return (
            f"{self.server_name} refused the read: {args[1]}. The database lacks a documented "
            "index, which this read names (FORCE INDEX) to keep its plan; run `composite-store "
            "inspect URL` with this store's URL: it reports the missing index and prints the "
            "CREATE INDEX that restores it"
        )

    @property
    def server_name(self) -> str:
        return "MariaDB" if self.is_mariadb else "MySQL/MariaDB"

    def execute_prepared(
        self, conn: Connection, sql: str, params: Any, fetch: bool
    ) -> tuple[list[Any] | None, int]:
        # docstring inherited
        from composite_store_mysql.cursor import execute_direct

        return execute_direct(conn, sql, params, fetch)

    def stream_prepared(
        self, conn: Connection, sql: str, params: Any, size: int
    ) -> Iterator[list[Any]]:
        # docstring inherited
        from composite_store_mysql.cursor import stream_direct

        return stream_direct(conn, sql, params, size)

    def upsert_returning(self) -> bool:
        # docstring inherited
        # MariaDB 10.5+ returns the row an INSERT .. ON DUPLICATE KEY UPDATE left; MySQL has
        # no RETURNING (and before the first operation the server is not known yet).
        return bool(self.is_mariadb)

    def ensure_autocommit(self, driver: Any) -> Awaitable[Any] | None:
        # docstring inherited
        return None if driver.get_autocommit() else driver.autocommit(True)

    def begin(self, conn: Connection, *, write: bool) -> None:
        # docstring inherited
        self.is_mariadb = bool(getattr(conn.dialect, "is_mariadb", False))

    def create_namespace(self, conn: Connection, schema: str | None) -> None:
        # docstring inherited
        if not schema:
            return
        # Look first: a user granted only that database may lack the CREATE privilege.
        schemata = sa.table("schemata", sa.column("schema_name"), schema="information_schema")
        exists = sa.select(sa.literal(1)).where(schemata.c.schema_name == schema)
        if conn.execute(exists).first() is None:
            quoted = conn.dialect.identifier_preparer.quote_identifier(schema)
            conn.exec_driver_sql(
                f"CREATE DATABASE IF NOT EXISTS {quoted} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )

    # -- types -------------------------------------------------------------------------------------

    def column_type(self, column: Column) -> TypeEngine[Any]:
        # docstring inherited
        if column.type is ColumnType.FLOAT:
            return sa.Double()  # MySQL's FLOAT is single precision
        return super().column_type(column)

    def json_type(self) -> TypeEngine[Any]:
        return MysqlJson()

    def timestamp_type(self) -> TypeEngine[Any]:
        return MysqlTimestamp()

    def text_type(self) -> TypeEngine[Any]:
        return long_text()

    def key_text_type(self) -> TypeEngine[Any]:
        return key_text()

    # -- statements --------------------------------------------------------------------------------

    def upsert(
        self,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        update: Sequence[str],
    ) -> Executable:
        # docstring inherited
        stmt = mysql.insert(table).values(list(rows))
        if not update:
            # Assigning the key to itself keeps the row; INSERT IGNORE would also hide errors.
            return stmt.on_duplicate_key_update({key[0]: table.c[key[0]]})
        return stmt.on_duplicate_key_update({c: stmt.inserted[c] for c in update})

    def through_index(self, select: sa.Select[Any], table: sa.Table, index: str) -> sa.Select[Any]:
        # docstring inherited
        # FORCE INDEX: MariaDB then costs only accesses through the index, and its range from
        # the window's target wins. Without it the range's cost changes with what the
        # connection ran before (the optimizer trace: 390 as read from the index alone, 1,391
        # once a statement of the page and a window had run), and a read of the thread by
        # thread_id alone (ref) won, from its far end to the target: 503-1,003 rows of a
        # 2,000-message thread, not 3.
        quoted = "`" + index.replace("`", "``") + "`"
        return select.with_hint(table, f"FORCE INDEX ({quoted})")

    def json_field(self, column: ColumnElement[Any], key: str) -> ColumnElement[Any]:
        # docstring inherited
        path = sa.literal(f'$."{key}"', sa.String)
        return sa.func.json_unquote(sa.func.json_extract(column, path), type_=sa.Text)

    def json_equals(
        self, column: ColumnElement[Any], key: str, value_json: ColumnElement[Any]
    ) -> ColumnElement[bool]:
        # docstring inherited
        return json_equals(column, f'$."{key}"', value_json)

    def json_array_contains(self, column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
        # docstring inherited
        contains = sa.func.json_contains(column, sa.literal(dumps(value), sa.String))
        return contains == 1

    def unique_name(self, table: str, columns: Sequence[str], schema: str | None) -> str:
        return f"{table}_{'_'.join(columns)}_key"[:MAX_IDENTIFIER]

    def alter_column(
        self, table: str, column: str, type_sql: str, nullable: bool, *, retype: bool
    ) -> str:
        # docstring inherited
        # MODIFY restates the whole column, so the type is given either way.
        null = "NULL" if nullable else "NOT NULL"
        return f"ALTER TABLE {table} MODIFY COLUMN {column} {type_sql} {null}"

    def exact_text(self, conn: Connection, table: sa.Table) -> list[str]:
        # docstring inherited
        wanted = exact_collation(conn.dialect)
        text_columns = [
            c for c in table.columns if isinstance(c.type, (ExactVarchar, ExactLongText))
        ]
        found: dict[str, str] = dict(
            conn.execute(
                sa.text(
                    "SELECT COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = COALESCE(:schema, DATABASE()) AND TABLE_NAME = :name"
                ),
                {"schema": table.schema, "name": table.name},
            ).all()
        )
        stale = [c for c in text_columns if found.get(c.name, wanted) != wanted]
        if not stale:
            return []
        prep = conn.dialect.identifier_preparer
        modify = ", ".join(
            f"MODIFY COLUMN {CreateColumn(c).compile(dialect=conn.dialect)}" for c in stale
        )
        return [f"ALTER TABLE {prep.format_table(table)} {modify}"]

    # -- introspection -----------------------------------------------------------------------------

    def documented_types(self, physical: TypeEngine[Any]) -> frozenset[ColumnType]:
        # docstring inherited
        # BOOLEAN is TINYINT(1) on both servers; MariaDB's JSON is LONGTEXT with a JSON_VALID
        # check, and reflects as such.
        if isinstance(physical, mysql.TINYINT):
            return frozenset({ColumnType.BOOLEAN})
        if isinstance(physical, mysql.LONGTEXT) and self.is_mariadb:
            return frozenset({ColumnType.TEXT, ColumnType.JSON})
        return super().documented_types(physical)

    def index_directions(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> tuple[bool, ...] | None:
        # Directions are not part of the layout here (``descending_indexes`` is off).
        return None
