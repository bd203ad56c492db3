"""The bulk path of PostgreSQL imports: rows sent with ``COPY .. FROM STDIN`` into a staging table.

A multi-row ``INSERT`` binds every value as a parameter (seven per message), which psycopg
adapts one by one and the server parses as one long statement; ``COPY`` streams the rows in
PostgreSQL's text format, formatted by psycopg's C code, several times faster. The staging
table is a temporary copy of the target's columns, dropped at the end of the transaction, so
the upsert by key that follows (``INSERT .. SELECT .. ON CONFLICT``) keeps the import's
guarantees: existing records are overwritten, nothing else changes, and the batch is atomic.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import count
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

from composite_store.sql.engine.prepared import driver_error

__all__ = ["copy_into_staging"]

#: Staging tables of one session get distinct names (two tables staged in one transaction).
_serial = count()


async def _copy(
    driver: psycopg.AsyncConnection[Any], create: str, copy: str, rows: Sequence[Sequence[Any]]
) -> None:
    async with driver.cursor() as cursor:
        await cursor.execute(create)
        async with cursor.copy(copy) as stream:
            for row in rows:
                await stream.write_row(row)


def copy_into_staging(
    conn: Connection, table: sa.Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> sa.TableClause:
    """Create a temporary table shaped like ``table`` (dropped at COMMIT), ``COPY`` ``rows``
    of ``columns`` into it, and return it for the ``INSERT .. SELECT`` that follows."""
    preparer = conn.dialect.identifier_preparer
    name = f"composite_store_staging_{next(_serial)}"
    quoted = ", ".join(preparer.quote(c) for c in columns)
    create = (
        f"CREATE TEMPORARY TABLE {preparer.quote(name)} "
        f"(LIKE {preparer.format_table(table)} INCLUDING DEFAULTS) ON COMMIT DROP"
    )
    copy = f"COPY {preparer.quote(name)} ({quoted}) FROM STDIN"
    driver = conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]
    try:
        await_only(_copy(driver, create, copy, rows))
    except Exception as exc:
        # As a statement's failure would be raised (error maps, disconnect handling).
        raise driver_error(conn, exc, copy, None) from exc
    return sa.table(name, *(sa.column(c) for c in columns))
