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
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import errors
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

from composite_store.sql.engine.prepared import driver_error

__all__ = ["copy_rows"]

#: Staging tables of one session get distinct names (two tables staged in one transaction).
_serial = count()
_SAVEPOINT = "composite_store_bulk"


async def _copy(
    driver: psycopg.AsyncConnection[Any],
    target: str,
    columns: str,
    rows: Sequence[Sequence[Any]],
    staging: str | None,
) -> bool:
    """COPY ``rows`` into ``target``; with a ``staging`` table (a keyed table), under a
    savepoint, and on a duplicate key into ``staging`` instead. Whether they are staged."""
    async with driver.cursor() as cursor:
        if staging is None:
            await _stream(cursor, target, columns, rows)
            return False
        await cursor.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            await _stream(cursor, target, columns, rows)
        except errors.UniqueViolation:
            await cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        else:
            await cursor.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            return False
        await cursor.execute(
            f"CREATE TEMPORARY TABLE {staging} (LIKE {target} INCLUDING DEFAULTS) ON COMMIT DROP"
        )
        await _stream(cursor, staging, columns, rows)
        return True


async def _stream(
    cursor: psycopg.AsyncCursor[Any], table: str, columns: str, rows: Sequence[Sequence[Any]]
) -> None:
    async with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as stream:
        for row in rows:
            await stream.write_row(row)


def copy_rows(
    conn: Connection,
    table: sa.Table,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    keyed: bool,
) -> sa.TableClause | None:
    """COPY ``rows`` of ``columns`` into ``table``; for a ``keyed`` table whose keys turn out
    to exist, into a staging table instead, returned for the upsert from it (else None)."""
    preparer = conn.dialect.identifier_preparer
    staging = f"composite_store_staging_{next(_serial)}" if keyed else None
    target = preparer.format_table(table)
    quoted = ", ".join(preparer.quote(c) for c in columns)
    driver = conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]
    try:
        staged = await_only(_copy(driver, target, quoted, rows, staging))
    except Exception as exc:
        # As a statement's failure would be raised (error maps, disconnect handling).
        raise driver_error(conn, exc, f"COPY {target} ({quoted}) FROM STDIN", None) from exc
    if not staged or staging is None:
        return None
    return sa.table(staging, *(sa.column(c) for c in columns))
