"""Column types and the one expression MariaDB and MySQL spell differently.

Text is utf8mb4 with a binary NO PAD collation everywhere: ids compare exactly as on
PostgreSQL and SQLite. The servers' default collations would make ``T1`` equal ``t1``, and
their PAD SPACE binary one (``utf8mb4_bin``) would make ``alice `` equal ``alice``: MariaDB's
``utf8mb4_nopad_bin`` and MySQL 8's ``utf8mb4_0900_bin`` are chosen when the DDL is compiled,
by which time SQLAlchemy's dialect knows the server (``is_mariadb``, the version). Key text is
a bounded ``VARCHAR`` so it can sit in a key or index.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeDecorator

from composite_store.errors import ValidationError
from composite_store.sql.types import UtcTimestamp, dumps, loads_json

__all__ = [
    "KEY_LENGTH",
    "ExactLongText",
    "ExactVarchar",
    "MysqlJson",
    "MysqlTimestamp",
    "exact_collation",
    "json_equals",
    "key_text",
    "long_text",
]

#: Characters of a key column: 255 x 4 bytes keeps two-column keys under InnoDB's 3072 bytes.
KEY_LENGTH = 255
CHARSET, COLLATION = "utf8mb4", "utf8mb4_bin"


def exact_collation(dialect: Dialect) -> str:
    """The binary collation of ``dialect``'s server that neither folds case nor pads: ids
    compare exactly (``utf8mb4_bin`` is PAD SPACE: ``'a '`` equals ``'a'``)."""
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    version = getattr(dialect, "server_version_info", None) or ()
    # MySQL 5.7 has no NO PAD binary collation (and is not supported: 8.0+).
    return "utf8mb4_0900_bin" if tuple(version) >= (8, 0) else COLLATION


class ExactVarchar(mysql.VARCHAR):
    """Key text: ``VARCHAR`` in the server's exact collation (:func:`exact_collation`)."""


class ExactLongText(mysql.LONGTEXT):
    """Long text (``LONGTEXT``) in the server's exact collation (:func:`exact_collation`)."""


@compiles(ExactVarchar, "mysql")
@compiles(ExactVarchar, "mariadb")
def _exact_varchar(type_: ExactVarchar, compiler: Any, **kw: Any) -> str:
    collation = exact_collation(compiler.dialect)
    text: str = compiler.visit_VARCHAR(
        mysql.VARCHAR(type_.length, charset=CHARSET, collation=collation), **kw
    )
    return text


@compiles(ExactLongText, "mysql")
@compiles(ExactLongText, "mariadb")
def _exact_long_text(type_: ExactLongText, compiler: Any, **kw: Any) -> str:
    collation = exact_collation(compiler.dialect)
    text: str = compiler.visit_LONGTEXT(
        mysql.LONGTEXT(charset=CHARSET, collation=collation), **kw
    )
    return text


def key_text() -> mysql.VARCHAR:
    return ExactVarchar(KEY_LENGTH, charset=CHARSET, collation=COLLATION)


def long_text() -> mysql.LONGTEXT:
    # TEXT holds only 64 KiB; message content and prompts may be longer.
    return ExactLongText(charset=CHARSET, collation=COLLATION)


class MysqlTimestamp(UtcTimestamp):
    """``DATETIME(3)``: the UTC wall clock to the millisecond, as records keep it."""

    impl = mysql.DATETIME
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(fsp=3)


class MysqlJson(TypeDecorator[Any]):
    """A ``JSON`` column (MariaDB: ``LONGTEXT`` checked by ``JSON_VALID``) holding compact JSON
    that is serialised here, whatever serializer the engine was configured with."""

    impl = mysql.JSON
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Any:
        def process(value: Any) -> str | None:
            if value is None:
                return None
            try:
                return dumps(value)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"value cannot be stored as JSON: {exc}") from None

        return process

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        def process(value: Any) -> Any:
            return None if value is None else loads_json(value)

        return process


class _JsonEquals(FunctionElement[bool]):
    """``document[path] == value`` compared as JSON (so ``2`` equals ``2.0``)."""

    type = sa.Boolean()
    inherit_cache = True
    name = "json_equals"


@compiles(_JsonEquals, "mysql")
def _compile_json_equals(element: _JsonEquals, compiler: SQLCompiler, **kw: Any) -> str:
    document, path, value = (compiler.process(c, **kw) for c in element.clauses)
    field = f"JSON_EXTRACT({document}, {path})"
    if compiler.dialect.is_mariadb:  # type: ignore[attr-defined]
        # MariaDB has no JSON type to cast to; JSON_EQUALS (10.7+) compares by value.
        return f"JSON_EQUALS({field}, {value})"
    return f"{field} = CAST({value} AS JSON)"


def json_equals(
    document: ColumnElement[Any], path: str, value_json: ColumnElement[Any]
) -> ColumnElement[bool]:
    """``document[path] == value`` for a JSON path and an expression holding JSON text."""
    return _JsonEquals(document, sa.literal(path, sa.String), value_json)
