"""``OracleDialect``: what Oracle Database does differently from the shared relational code.

Oracle 19c and 23ai through python-oracledb in thin mode. Every difference is a hook of
``SqlDialect``: bounded ``VARCHAR2`` keys and ``CLOB`` text (:mod:`composite_store_oracle.types`),
``MERGE`` upserts and SQL/JSON conditions (:mod:`composite_store_oracle.dml`), errors by code
(:mod:`composite_store_oracle.errors`).

Asynchronous: SQLAlchemy 2.1 ships ``oracle+oracledb_async``, python-oracledb's native asyncio
(thin mode, 2.0+), so operations await the socket directly instead of hopping to a worker
thread as a blocking driver would; every URL form is served by it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect, make_url
from sqlalchemy.engine.interfaces import ReflectedIndex
from sqlalchemy.sql.compiler import DDLCompiler
from sqlalchemy.sql.ddl import BaseDDLElement
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.expression import Executable
from sqlalchemy.sql.schema import SchemaItem
from sqlalchemy.types import TypeEngine

from composite_store.errors import (
    BackendUnavailableError,
    CompositeStoreError,
    ConflictError,
    ValidationError,
)
from composite_store.schema import EMPTY_STRING_IS_NULL, Column, ColumnType, TableSpec
from composite_store.sql.dialect import SqlDialect
from composite_store.urls import scheme_of, split_options, url_flag
from composite_store_oracle import dml, errors
from composite_store_oracle.types import (
    KEY_LENGTH,
    LOOKUP_LENGTH,
    OracleBoolean,
    OracleJson,
    OracleText,
    OracleTimestamp,
    OracleVarchar,
    input_type_handler,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["SCHEMES", "OracleDialect", "async_url", "use_input_types"]

#: URL schemes that name Oracle; all are served by python-oracledb's asyncio mode.
SCHEMES = ("oracle", "oracle+oracledb", "oracle+oracledb_async")
#: Oracle's identifier limit in bytes (since 12.2, with COMPATIBLE >= 12.2).
MAX_IDENTIFIER_BYTES = 128
#: Seconds after which a pooled connection is replaced (firewalls drop idle sessions).
POOL_RECYCLE = 1800


def async_url(url: str) -> str:
    """``url`` with python-oracledb's asyncio driver: ``oracle://`` -> ``oracle+oracledb_async://``."""
    scheme = scheme_of(url)
    if scheme not in SCHEMES:
        raise ValidationError(
            f"not an Oracle URL: scheme {scheme!r} (expected oracle:// or oracle+oracledb://)"
        )
    return "oracle+oracledb_async://" + url.split("://", 1)[1]


def _check_identifier(name: str) -> str:
    if len(name.encode("utf-8")) > MAX_IDENTIFIER_BYTES:
        raise ValidationError(
            f"identifier {name!r} is longer than Oracle's {MAX_IDENTIFIER_BYTES} bytes: "
            "use a shorter table prefix"
        )
    return name


class OracleDialect(SqlDialect):
    """Oracle Database 19c+ (23ai native types on request) through python-oracledb."""

    name: ClassVar[str] = "oracle"
    driver: ClassVar[str] = "oracledb"
    is_async: ClassVar[bool] = True
    supports_for_update: ClassVar[bool] = True
    error_map: ClassVar[Mapping[type[BaseException], type[CompositeStoreError]]] = {
        # What errors.handle_error did not classify by code.
        sa.exc.IntegrityError: ConflictError,
        sa.exc.DataError: ValidationError,
        # Every pooled connection stayed busy for pool_timeout seconds.
        sa.exc.TimeoutError: BackendUnavailableError,
        sa.exc.DBAPIError: CompositeStoreError,
    }

    def __init__(self) -> None:
        #: JSON columns as Oracle's native ``JSON`` type (21c+) instead of ``CLOB`` holding
        #: JSON text; set from the ``native_json`` option when the engine is created.
        self.native_json = False

    # -- engine ------------------------------------------------------------------------------------

    own_options: ClassVar[frozenset[str]] = frozenset({"native_json"})

    def create_engine(self, url: str, options: Mapping[str, Any]) -> AsyncEngine:
        # docstring inherited
        from sqlalchemy.ext.asyncio import create_async_engine

        url, query = split_options(async_url(url), ("native_json",))
        url, engine_options = self.engine_options(url, options)
        if "native_json" in query or "native_json" in engine_options:
            raw = engine_options.pop("native_json", query.get("native_json"))
            self.native_json = url_flag(raw, option="native_json")
        # Pre-ping replaces connections the server or a firewall closed while they sat idle.
        engine_options.setdefault("pool_pre_ping", True)
        # Bound values are user data (and can be large): keep them out of error messages.
        engine_options.setdefault("hide_parameters", True)
        engine_options.setdefault("pool_recycle", POOL_RECYCLE)
        engine = create_async_engine(make_url(url), **engine_options)
        errors.install(engine.sync_engine)
        sa.event.listen(engine.sync_engine, "connect", use_input_types)
        return engine

    def is_transient(self, exc: sa.exc.DBAPIError) -> bool:
        # docstring inherited
        return errors.error_code(exc.orig) in errors.TRANSIENT

    def create_namespace(self, conn: Connection, schema: str | None) -> None:
        # docstring inherited
        # An Oracle schema is a user, created by a DBA with its password, quota and grants;
        # a library must not do that. Check it exists, so the error says what to do.
        if not schema:
            return
        owner = conn.dialect.denormalize_name(schema)
        found = conn.execute(
            sa.text("SELECT 1 FROM all_users WHERE username = :owner"), {"owner": owner}
        ).first()
        if found is None:
            raise ValidationError(
                f"Oracle schema {schema!r} (user {owner}) does not exist: Oracle schemas are "
                "users, which composite-store does not create. Ask a DBA for it (CREATE USER "
                f"{owner} ... QUOTA UNLIMITED ON USERS; GRANT CREATE TABLE TO {owner}), or omit "
                "the schema option to use the connecting user's own schema"
            )

    # -- types -------------------------------------------------------------------------------------

    def column_type(self, column: Column) -> TypeEngine[Any]:
        # docstring inherited
        if column.type is ColumnType.TEXT:
            # '' is NULL in Oracle: a documented NOT NULL text column outside the keys is
            # stored nullable (variant empty_string_is_null) and reads NULL back as ''.
            empty = not column.nullable and not column.key
            if column.key:
                return OracleVarchar(KEY_LENGTH)
            if column.lookup:  # compared, sorted or grouped: a CLOB cannot be
                return OracleVarchar(LOOKUP_LENGTH, empty_is_null=empty)
            return OracleText(empty_is_null=empty)
        if column.type is ColumnType.BOOLEAN:
            return OracleBoolean()
        if column.type is ColumnType.FLOAT:
            # FLOAT(126): binary precision, a Python float without loss.
            return sa.Float()
        return super().column_type(column)

    def json_type(self) -> TypeEngine[Any]:
        return OracleJson(native=self.native_json)

    def timestamp_type(self) -> TypeEngine[Any]:
        return OracleTimestamp()

    def text_type(self) -> TypeEngine[Any]:
        return OracleText()

    def key_text_type(self) -> TypeEngine[Any]:
        return OracleVarchar(KEY_LENGTH)

    def variants(self) -> frozenset[str]:
        # docstring inherited
        return frozenset({EMPTY_STRING_IS_NULL})

    def table_constraints(self, spec: TableSpec, table_name: str) -> list[sa.Constraint]:
        # docstring inherited
        # Booleans are numbers before 23ai: keep them 0/1. (JSON CLOBs get no IS JSON check:
        # before 21c it refuses top-level scalars, which documented JSON columns may hold.)
        return [
            sa.CheckConstraint(
                sa.column(col.name).in_([0, 1]),
                name=_check_identifier(f"{table_name}_{col.name.lower()}_bool"),
            ).ddl_if(callable_=_numeric_booleans)
            for col in spec.columns
            if col.type is ColumnType.BOOLEAN
        ]

    # -- statements --------------------------------------------------------------------------------

    def upsert(
        self,
        table: sa.Table,
        rows: Sequence[Mapping[str, Any]],
        key: Sequence[str],
        update: Sequence[str],
    ) -> Executable:
        # docstring inherited
        lobs = frozenset(
            c.name for c in table.columns if isinstance(c.type, (OracleText, OracleJson))
        )
        # Booleans are documented NOT NULL, so their binds always carry their type (and CAST
        # to BOOLEAN is new in 23ai); every other column is cast to its own type.
        casts = frozenset(
            c.name for c in table.columns if c.name not in lobs
            and not isinstance(c.type, OracleBoolean)
        )
        return dml.merge(table, rows, key, update, lob_columns=lobs, cast_columns=casts)

    def read_column(self, table: sa.Table, column: Column) -> ColumnElement[Any]:
        # docstring inherited
        col = table.c[column.name]
        if column.type is ColumnType.JSON and self.native_json:
            # Native JSON as text: the driver would decode numbers its own way.
            return dml.JsonSerialize(col, type_=col.type).label(column.name)
        return col

    def json_text(self, column: ColumnElement[Any]) -> ColumnElement[Any]:
        # docstring inherited
        if self.native_json:
            return dml.JsonSerialize(column, type_=OracleText())
        return sa.type_coerce(column, OracleText())

    def json_field(self, column: ColumnElement[Any], key: str) -> ColumnElement[Any]:
        # docstring inherited
        return dml.JsonValue(column, key)

    def json_equals(
        self, column: ColumnElement[Any], key: str, value_json: ColumnElement[Any]
    ) -> ColumnElement[bool]:
        # docstring inherited
        return dml.JsonEqual(column, key, value_json)

    def json_array_contains(self, column: ColumnElement[Any], value: str) -> ColumnElement[bool]:
        # docstring inherited
        return dml.JsonArrayContains(column, value)

    def unique_name(self, table: str, columns: Sequence[str], schema: str | None) -> str:
        # docstring inherited
        return _check_identifier(f"{table}_{'_'.join(c.lower() for c in columns)}_key")

    def add_column(self, table: str, column: str, type_sql: str, nullable: bool) -> str:
        # docstring inherited
        # Oracle: ADD (column type [NOT NULL]), no COLUMN keyword.
        null = "" if nullable else " NOT NULL"
        return f"ALTER TABLE {table} ADD ({column} {type_sql}{null})"

    def alter_column(
        self, table: str, column: str, type_sql: str, nullable: bool, *, retype: bool
    ) -> str:
        # docstring inherited
        # Oracle: MODIFY (column [type] NULL | NOT NULL), no ALTER COLUMN.
        null = "NULL" if nullable else "NOT NULL"
        spec = f"{column} {type_sql} {null}" if retype else f"{column} {null}"
        return f"ALTER TABLE {table} MODIFY ({spec})"

    # -- introspection -----------------------------------------------------------------------------

    def documented_types(self, physical: TypeEngine[Any]) -> frozenset[ColumnType]:
        # docstring inherited
        from sqlalchemy.dialects import oracle

        text, json = ColumnType.TEXT, ColumnType.JSON
        if isinstance(physical, oracle.DATE):
            return frozenset()  # no fraction of a second: cannot hold a documented timestamp
        if isinstance(physical, (sa.CLOB, oracle.NCLOB)):
            return frozenset({text, json})
        if isinstance(physical, sa.JSON):
            return frozenset({json})
        if isinstance(physical, sa.Boolean):
            return frozenset({ColumnType.BOOLEAN})
        if isinstance(physical, (sa.Integer, sa.Numeric)) and not isinstance(physical, sa.Float):
            scale = getattr(physical, "scale", None)
            precision = getattr(physical, "precision", None)
            if isinstance(physical, sa.Integer) or not scale:
                # NUMBER(p) holds p digits; SMALLINT/INTEGER are NUMBER(38).
                if precision is None or precision >= 19:
                    return frozenset({ColumnType.INTEGER, ColumnType.BIGINT, ColumnType.BOOLEAN})
                if precision >= 10:
                    return frozenset({ColumnType.INTEGER, ColumnType.BOOLEAN})
                return frozenset({ColumnType.BOOLEAN})
            return frozenset({ColumnType.FLOAT})
        return super().documented_types(physical)

    def index_columns(self, conn: Connection, index: ReflectedIndex) -> tuple[str, ...]:
        # docstring inherited
        # A descending column makes Oracle build a function-based index: the column shows up
        # as an expression, the quoted (or upper-cased) column name.
        names = index["column_names"]
        expressions = index.get("expressions") or []
        return tuple(
            name if name is not None else _expression_column(conn, expressions[i])
            for i, name in enumerate(names)
        )

    def index_directions(
        self, conn: Connection, table: str, schema: str | None, index: ReflectedIndex
    ) -> tuple[bool, ...] | None:
        # docstring inherited
        sorting = index.get("column_sorting") or {}
        expressions = index.get("expressions") or []
        return tuple(
            name is None and "desc" in sorting.get(expressions[i], ())
            for i, name in enumerate(index["column_names"])
        )


def use_input_types(dbapi_conn: Any, record: Any) -> None:
    """``connect`` listener: bind values through :func:`types.input_type_handler`.

    Set on the driver's own connection: SQLAlchemy's asyncio adapter does not pass it on.
    """
    record.driver_connection.inputtypehandler = input_type_handler


def _numeric_booleans(
    ddl: BaseDDLElement,
    target: SchemaItem | str,
    bind: Connection | None,
    tables: list[sa.Table] | None = None,
    state: Any | None = None,
    *,
    dialect: Dialect,
    compiler: DDLCompiler | None = None,
    checkfirst: bool = False,
) -> bool:
    """``ddl_if`` rule: the 0/1 check exists only where booleans are numbers (before 23ai)."""
    return not (compiler.dialect if compiler is not None else dialect).supports_native_boolean


def _expression_column(conn: Connection, expression: str) -> str:
    """The column an index expression names: ``"createdAt"`` -> ``createdAt``,
    ``"CREATED_AT"`` -> ``created_at`` (as SQLAlchemy names reflected columns)."""
    text = expression.strip()
    if len(text) > 1 and text[0] == text[-1] == '"':
        text = text[1:-1]
    normalized: str = conn.dialect.normalize_name(text) or text
    return normalized
