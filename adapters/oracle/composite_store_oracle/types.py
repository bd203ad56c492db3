"""Oracle column types: bounded keys, CLOB text and JSON, ``TIMESTAMP(3)`` and booleans.

Oracle has three traps the types below step around:

- SQLAlchemy's ``DateTime`` renders ``DATE``, which has no fraction of a second; timestamps are
  ``TIMESTAMP(3)`` holding the UTC wall clock (records keep milliseconds).
- ``''`` is ``NULL``. A documented NOT NULL text column that may legitimately hold ``''`` (a
  thread's title) is nullable here, and ``NULL`` reads back as ``''`` (the schema variant
  ``empty_string_is_null``, DESIGN.md section 9).
- A ``CLOB`` cannot be compared, sorted, grouped or indexed, and a bind larger than 4000 bytes
  cannot stand in a select list (``MERGE ... USING (SELECT :v FROM dual)``). Key text is
  therefore ``VARCHAR2(255 CHAR)``, lookup text (compared or sorted: span filters, statuses)
  ``VARCHAR2(1000 CHAR)``; other text and JSON is ``CLOB``, and :func:`input_type_handler`
  binds long strings as temporary LOBs.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import oracle
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import TypeCompiler
from sqlalchemy.types import TypeDecorator, UserDefinedType

from composite_store.errors import ValidationError
from composite_store.sql.types import UtcTimestamp, dumps, loads_json

__all__ = [
    "KEY_LENGTH",
    "LOB_THRESHOLD",
    "LOOKUP_LENGTH",
    "NativeJson",
    "OracleBoolean",
    "OracleClob",
    "OracleJson",
    "OracleText",
    "OracleTimestamp",
    "OracleVarchar",
    "Timestamp3",
    "input_type_handler",
]

#: Characters of a key column (VARCHAR2 ... CHAR): two- and three-column keys stay far below
#: Oracle's index key limit (about 6400 bytes on 8 KB blocks) even at 4 bytes a character.
KEY_LENGTH = 255
#: Characters of a lookup column (compared or sorted, not indexed): 1000 characters are at
#: most 4000 bytes, the VARCHAR2 limit of a database with MAX_STRING_SIZE=STANDARD.
LOOKUP_LENGTH = 1000
#: Bytes above which a string is bound as a temporary CLOB: a VARCHAR2 bind in a select list
#: (the ``MERGE`` source) may not exceed 4000 bytes (ORA-01461 otherwise).
LOB_THRESHOLD = 4000


# -- timestamps --------------------------------------------------------------------------------


class Timestamp3(oracle.TIMESTAMP):
    """``TIMESTAMP(3)``: Oracle's ``TIMESTAMP`` to the millisecond (SQLAlchemy renders no
    precision for it, and ``DateTime`` as ``DATE``)."""

    inherit_cache = True


@compiles(Timestamp3, "oracle")
def _compile_timestamp3(type_: Timestamp3, compiler: TypeCompiler, **kw: Any) -> str:
    return "TIMESTAMP(3)"


class OracleTimestamp(UtcTimestamp):
    """A ``TIMESTAMP(3)`` column holding the UTC wall clock, read back as an aware datetime."""

    impl = Timestamp3
    cache_ok = True


# -- text --------------------------------------------------------------------------------------


class OracleClob(UserDefinedType[str]):
    """``CLOB`` with no driver type of its own: the driver binds each value by its size
    (:func:`input_type_handler`), where SQLAlchemy's ``Text`` would declare every value an
    ``NVARCHAR`` and break ``MERGE`` sources longer than 4000 bytes."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "CLOB"


class OracleVarchar(TypeDecorator[str]):
    """``VARCHAR2(n CHAR)``: text that sits in a key or index, or that queries compare, sort or
    group by. With ``empty_is_null``, a documented NOT NULL column stored nullable because
    ``''`` is ``NULL`` in Oracle: ``NULL`` reads back as ``''``."""

    impl = sa.String
    cache_ok = True

    def __init__(self, length: int = KEY_LENGTH, *, empty_is_null: bool = False) -> None:
        super().__init__(length)
        self.length = length
        self.empty_is_null = empty_is_null

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        # Refused here, before anything is sent, rather than by the server mid-batch.
        if isinstance(value, str) and len(value) > self.length:
            raise ValidationError(
                f"a text value of {len(value)} characters is too long for an Oracle "
                f"VARCHAR2({self.length} CHAR) column (ids and other key text hold at most "
                f"{KEY_LENGTH} characters, names, types and statuses {LOOKUP_LENGTH})"
            )
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return "" if self.empty_is_null else None
        return str(value)


class OracleText(TypeDecorator[str]):
    """Unbounded text as ``CLOB``; with ``empty_is_null``, a documented NOT NULL column that
    Oracle stores nullable because ``''`` is ``NULL`` there: ``NULL`` reads back as ``''``."""

    impl = OracleClob
    cache_ok = True

    def __init__(self, *, empty_is_null: bool = False) -> None:
        super().__init__()
        self.empty_is_null = empty_is_null

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return "" if self.empty_is_null else None
        return str(value)


# -- JSON --------------------------------------------------------------------------------------


class NativeJson(UserDefinedType[Any]):
    """Oracle 21c+ ``JSON`` (binary OSON), bound as text like the CLOB form."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "JSON"


class OracleJson(TypeDecorator[Any]):
    """JSON written as compact text: a ``CLOB`` holding JSON text (Oracle 19c, the default),
    or with ``native`` the ``JSON`` type of Oracle 21c/23ai.

    Values are serialised here once (compact, no NaN), whatever serializer the engine has.
    Reads go through ``OracleDialect.read_column``, which selects the native type as text, so
    both forms decode the same way; a JSON string holding JSON text is parsed once more.
    """

    impl = OracleClob
    cache_ok = True

    def __init__(self, *, native: bool = False) -> None:
        super().__init__()
        self.native = native

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        return NativeJson() if self.native else OracleClob()

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        try:
            return dumps(value)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"value cannot be stored as JSON: {exc}") from None

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        if isinstance(value, (dict, list)):  # a driver that decoded native JSON itself
            return value
        try:
            return loads_json(value)
        except json.JSONDecodeError:
            return value


# -- booleans ----------------------------------------------------------------------------------


class OracleBoolean(TypeDecorator[bool]):
    """``BOOLEAN`` on Oracle 23ai, ``SMALLINT`` checked to 0/1 on earlier releases (chosen by
    SQLAlchemy from the server version when the table is created).

    Reads always give a Python bool: a table created on 19c keeps its number column after the
    server is upgraded to 23ai, where SQLAlchemy would no longer convert it.
    """

    impl = sa.Boolean
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> bool | None:
        return None if value is None else bool(value)


# -- binding -----------------------------------------------------------------------------------


def input_type_handler(cursor: Any, value: Any, arraysize: int) -> Any:
    """python-oracledb input type handler installed on every connection.

    It chooses the bind type of values whose statement did not declare one (the prepared
    fast path of ``composite_store.sql.engine.prepared`` never does): datetimes as ``TIMESTAMP``
    (the driver's default, ``DATE``, drops the milliseconds) and strings too long for a
    ``VARCHAR2`` in SQL as temporary ``CLOB``s. Everything else keeps the driver's default.
    """
    import oracledb

    if isinstance(value, datetime):
        return cursor.var(oracledb.DB_TYPE_TIMESTAMP, arraysize=arraysize)
    # Cheap test first: a string of at most 1000 characters is at most 4000 UTF-8 bytes.
    if (
        isinstance(value, str)
        and len(value) > LOB_THRESHOLD // 4
        and len(value.encode("utf-8", "surrogatepass")) > LOB_THRESHOLD
    ):
        return cursor.var(oracledb.DB_TYPE_CLOB, arraysize=arraysize)
    return None
