"""How prepared statements run on MariaDB/MySQL: an asyncmy cursor, in one await per statement.

SQLAlchemy's adapted cursor enters, executes (under a lock the operation does not need: it holds
its connection alone), fetches and closes in separate awaits, each a greenlet switch. Here the
four are one coroutine, awaited once with SQLAlchemy's ``await_only`` from inside
``AsyncConnection.run_sync``. The engines this adapter creates keep asyncmy's statement cache
on (``dialect.STATEMENT_CACHE``), so these statements run server-side prepared, their values
and rows in the binary protocol.

A read of every row (``Prepared.each``) streams instead: asyncmy's default cursor reads the
whole result into Python tuples before the first is returned; an unbuffered ``SSCursor`` reads
it from the socket a chunk at a time, so the driver rows of a large thread never all exist at
once beside the records built from them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

__all__ = ["execute_direct", "stream_direct"]

T = TypeVar("T")


async def _execute(driver: Any, sql: str, params: Any, fetch: bool) -> tuple[list[Any] | None, int]:
    async with driver.cursor() as cursor:
        await cursor.execute(sql, params)
        rows = list(await cursor.fetchall()) if fetch else None
        return rows, cursor.rowcount


def _await(conn: Connection, pending: Awaitable[T]) -> T:
    """``await_only(pending)``, with asyncmy's way of saying its socket is gone (it reads from a
    transport set to None: an AttributeError) raised as SQLAlchemy's adapter raises it, so the
    disconnect is recognised as one."""
    try:
        result: T = await_only(pending)
    except AttributeError as exc:
        raise conn.dialect.loaded_dbapi.InternalError(
            "network operation failed due to asyncmy attribute error"
        ) from exc
    return result


def _driver(conn: Connection) -> Any:
    return conn.connection.dbapi_connection.driver_connection  # type: ignore[union-attr]


def execute_direct(
    conn: Connection, sql: str, params: Any, fetch: bool
) -> tuple[list[Any] | None, int]:
    """Run ``sql`` (``%s`` placeholders) with positional ``params`` on ``conn``'s driver."""
    return _await(conn, _execute(_driver(conn), sql, params, fetch))


async def _open_unbuffered(driver: Any, sql: str, params: Any) -> Any:
    from asyncmy.cursors import SSCursor

    cursor = driver.cursor(SSCursor)
    try:
        await cursor.execute(sql, params)
    except Exception:
        await cursor.close()
        raise
    return cursor


def _drain(conn: Connection, cursor: Any) -> None:
    """Read what is left of ``cursor``'s result, so the connection can run its next statement.
    A failure (the connection lost) is raised: ``Prepared._stream`` raises it as SQLAlchemy
    would, which invalidates the connection on a disconnect."""
    _await(conn, cursor.close())


def stream_direct(conn: Connection, sql: str, params: Any, size: int) -> Iterator[list[Any]]:
    """Run the SELECT ``sql`` as :func:`execute_direct` does and yield its rows ``size`` at a
    time, read from the socket as they are needed (an unbuffered cursor).

    Closing the generator early, or an error while the rows are used, reads and discards the
    rest of the result, so the connection is ready for its next statement. An interruption
    (a cancellation) leaves the result unread: the connection is invalidated rather than
    drained, and never reused.
    """
    cursor = None
    try:
        cursor = _await(conn, _open_unbuffered(_driver(conn), sql, params))
        while rows := _await(conn, cursor.fetchmany(size)):
            yield list(rows)
    except (Exception, GeneratorExit):
        if cursor is not None:
            _drain(conn, cursor)
        raise
    except BaseException:
        conn.invalidate()  # interrupted mid-result: its state is unknown
        raise
    _drain(conn, cursor)
