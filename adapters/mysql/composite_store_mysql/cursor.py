"""How prepared statements run on MariaDB/MySQL: an asyncmy cursor, in one await per statement.

SQLAlchemy's adapted cursor enters, executes (under a lock the operation does not need: it holds
its connection alone), fetches and closes in separate awaits, each a greenlet switch. Here the
four are one coroutine, awaited once with SQLAlchemy's ``await_only`` from inside
``AsyncConnection.run_sync``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

__all__ = ["execute_direct"]


async def _execute(driver: Any, sql: str, params: Any, fetch: bool) -> tuple[list[Any] | None, int]:
    async with driver.cursor() as cursor:
        await cursor.execute(sql, params)
        rows = list(await cursor.fetchall()) if fetch else None
        return rows, cursor.rowcount


def execute_direct(
    conn: Connection, sql: str, params: Any, fetch: bool
) -> tuple[list[Any] | None, int]:
    """Run ``sql`` (``%s`` placeholders) with positional ``params`` on ``conn``'s driver."""
    dbapi_connection = conn.connection.dbapi_connection
    driver = dbapi_connection.driver_connection  # type: ignore[union-attr]
    try:
        result: tuple[list[Any] | None, int] = await_only(_execute(driver, sql, params, fetch))
    except AttributeError as exc:
        # asyncmy's way of saying its socket is gone (it reads from a transport set to None);
        # raised as SQLAlchemy's adapter does, so the disconnect is recognised as one.
        raise conn.dialect.loaded_dbapi.InternalError(
            "network operation failed due to asyncmy attribute error"
        ) from exc
    return result
