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

from typing import Any

import psycopg
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

__all__ = ["execute_raw"]


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
