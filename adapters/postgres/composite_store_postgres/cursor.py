"""How prepared statements run on PostgreSQL: psycopg's raw cursor, in one await per statement.

psycopg's ordinary cursor rewrites every query from ``%(name)s`` placeholders to PostgreSQL's
``$1`` before sending it, and caches the rewrite only for statements under 50 parameters and
4 KiB; a multi-row upsert exceeds both, so each batch paid a full parse of its SQL text. The
statements are compiled with ``$n`` placeholders instead (``PostgresDialect.statement_dialect``)
and sent as they are by ``AsyncRawCursor``; psycopg still prepares them server-side after a few
runs. Statements run inside ``AsyncConnection.run_sync``: execute, fetch and close are one
coroutine, awaited once with SQLAlchemy's ``await_only`` (one greenlet switch, not three).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

__all__ = ["execute_raw", "stream_raw"]


async def _execute(
    driver: psycopg.AsyncConnection[Any], sql: str, params: Any, fetch: bool
) -> tuple[list[Any] | None, int]:
    cursor: psycopg.AsyncRawCursor[Any] = psycopg.AsyncRawCursor(driver)
    try:
        await cursor.execute(sql, params)
        return (await cursor.fetchall() if fetch else None), cursor.rowcount
    finally:
        await cursor.close()


def execute_raw(
    conn: Connection, sql: str, params: Any, fetch: bool
) -> tuple[list[Any] | None, int]:
    """Run ``sql`` (``$n`` placeholders) with positional ``params`` on ``conn``'s driver."""
    driver = conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]
    result: tuple[list[Any] | None, int] = await_only(_execute(driver, sql, params, fetch))
    return result


def stream_raw(conn: Connection, sql: str, params: Any, size: int) -> Iterator[list[Any]]:
    """Run the SELECT ``sql`` as :func:`execute_raw` does and yield its rows ``size`` at a
    time: libpq holds the result in its compact form, and only one chunk at a time becomes
    Python tuples (a read of every message of a large thread builds its records meanwhile)."""
    driver = conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]
    cursor: psycopg.AsyncRawCursor[Any] = psycopg.AsyncRawCursor(driver)
    try:
        await_only(cursor.execute(sql, params))
        while rows := await_only(cursor.fetchmany(size)):
            yield rows
    finally:
        await_only(cursor.close())
