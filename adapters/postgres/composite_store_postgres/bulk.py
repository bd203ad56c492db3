"""The bulk path of PostgreSQL imports: rows sent with ``COPY .. FROM STDIN``.

A multi-row ``INSERT`` binds every value as a parameter (seven per message), which psycopg
adapts one by one and the server parses as one long statement; ``COPY`` streams the rows in
PostgreSQL's text format, formatted by psycopg's C code, several times faster.

An import upserts by key. The rows are copied straight into the table first, under a
savepoint: the usual case (a copy into an empty or older destination, whose records the
copy tool has just looked up and found missing) is then one ``COPY``. Should a key exist
after all (the rows are changed records, or another writer got there first), the savepoint
is rolled back and the rows go through a temporary staging table, dropped at the end of the
transaction, and one ``INSERT .. SELECT .. ON CONFLICT`` from it. Either way the batch is
atomic and nothing but its rows changes.

A table whose every column is text or a timestamp (messages) is copied in COPY's binary
format, each column's psycopg dumper chosen once per COPY (``set_types``): a timestamp is then
eight bytes computed in C where the text format looks a dumper up for each datetime and
formats it (most of a message row's cost). Values are checked as in the text format (the
columns' bind processors for text: NUL, lone surrogates), and a timestamp goes as its UTC
instant to both columns: ``TIMESTAMPTZ`` and naive ``TIMESTAMP`` share their binary form,
microseconds since 2000-01-01, which the naive column reads as the UTC wall clock it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from itertools import count
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import errors
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.util import await_only

from composite_store.records.base import utc_from_wall_clock
from composite_store.sql.engine.prepared import driver_error
from composite_store.sql.types import UtcTimestamp, utc_wall_clock
from composite_store_postgres.json import PgText, checked_text

__all__ = ["copy_processor", "copy_rows", "utc_instant"]

#: Staging tables of one session get distinct names (two tables staged in one transaction).
_serial = count()
_SAVEPOINT = "composite_store_bulk"


async def _copy(
    driver: psycopg.AsyncConnection[Any],
    target: str,
    columns: str,
    rows: Sequence[Sequence[Any]],
    staging: str | None,
    types: list[str] | None,
) -> bool:
    """COPY ``rows`` into ``target`` (binary, of ``types``, unless it is None); with a
    ``staging`` table (a keyed table), under a savepoint, and on a duplicate key into
    ``staging`` instead. Whether they are staged."""
    async with driver.cursor() as cursor:
        if staging is None:
            await _stream(cursor, target, columns, rows, types)
            return False
        await cursor.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            await _stream(cursor, target, columns, rows, types)
        except errors.UniqueViolation:
            await cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        else:
            await cursor.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            return False
        await cursor.execute(
            f"CREATE TEMPORARY TABLE {staging} (LIKE {target} INCLUDING DEFAULTS) ON COMMIT DROP"
        )
        await _stream(cursor, staging, columns, rows, types)
        return True


async def _stream(
    cursor: psycopg.AsyncCursor[Any],
    table: str,
    columns: str,
    rows: Sequence[Sequence[Any]],
    types: list[str] | None,
) -> None:
    binary = "" if types is None else " (FORMAT BINARY)"
    async with cursor.copy(f"COPY {table} ({columns}) FROM STDIN{binary}") as stream:
        if types is not None:
            stream.set_types(types)
        for row in rows:
            await stream.write_row(row)


def copy_rows(
    conn: Connection,
    table: sa.Table,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    keyed: bool,
) -> sa.TableClause | None:
    """COPY ``rows`` of ``columns`` (values converted by :func:`copy_processor`) into
    ``table``; for a ``keyed`` table whose keys turn out to exist, into a staging table
    instead, returned for the upsert from it (else None)."""
    preparer = conn.dialect.identifier_preparer
    staging = f"composite_store_staging_{next(_serial)}" if keyed else None
    target = preparer.format_table(table)
    quoted = ", ".join(preparer.quote(c) for c in columns)
    driver = conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]
    plan = _binary_plan(table, conn.dialect)
    types = None if plan is None else [plan[c][0] for c in columns]
    try:
        staged = await_only(_copy(driver, target, quoted, rows, staging, types))
    except Exception as exc:
        # As a statement's failure would be raised (error maps, disconnect handling).
        raise driver_error(conn, exc, f"COPY {target} ({quoted}) FROM STDIN", None) from exc
    if not staged or staging is None:
        return None
    return sa.table(staging, *(sa.column(c) for c in columns))


# -- the binary format ----------------------------------------------------------------------------


def utc_instant(value: Any) -> datetime:
    """A timestamp (not None) as the aware datetime in UTC of the instant whose wall clock
    ``UtcTimestamp`` binds (``utc_wall_clock``): what the binary COPY writes to a timestamp
    column and to its shadow."""
    if value.__class__ is datetime and value.tzinfo is UTC:
        moment: datetime = value
        return moment
    wall = utc_wall_clock(value)
    assert wall is not None
    return utc_from_wall_clock(wall)


def _binary_column(
    column: sa.Column[Any], dialect: Dialect
) -> tuple[str, Callable[[Any], Any]] | None:
    """The binary COPY type of ``column`` and the conversion of its non-None values, or None
    when the binary format does not take it (JSONB and the rest go as text)."""
    process = column.type.bind_processor(dialect)
    if isinstance(column.type, PgText) and process is checked_text:
        return "text", process
    if isinstance(column.type, UtcTimestamp) and process is utc_wall_clock:
        return "timestamptz", utc_instant
    if isinstance(column.type, sa.DateTime) and column.type.timezone and process is None:
        return "timestamptz", utc_instant
    return None


@lru_cache(maxsize=64)
def _binary_plan(
    table: sa.Table, dialect: Dialect
) -> dict[str, tuple[str, Callable[[Any], Any]]] | None:
    """Each column of ``table`` with its binary COPY type and conversion, or None when one
    column is not of a type the binary format takes here (the table goes as text). Made once
    per table and dialect: ``copy_processor`` asks for it for every column of every page,
    ``copy_rows`` for every page."""
    plan = {}
    for column in table.columns:
        found = _binary_column(column, dialect)
        if found is None:
            return None
        plan[column.name] = found
    return plan


def copy_processor(column: sa.Column[Any], dialect: Dialect) -> Callable[[Any], Any] | None:
    """The conversion of a non-None value of ``column`` for ``copy_rows``: for a table copied
    in the binary format its binary conversion, else its bind processor (the text format)."""
    table = column.table
    plan = _binary_plan(table, dialect) if isinstance(table, sa.Table) else None
    if plan is not None:
        return plan[column.name][1]
    process: Callable[[Any], Any] | None = column.type.bind_processor(dialect)
    return process
