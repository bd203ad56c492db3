"""How prepared statements run on PostgreSQL: psycopg's raw cursor, in one await per statement.

psycopg's ordinary cursor rewrites every query from ``%(name)s`` placeholders to PostgreSQL's
``$1`` before sending it, and caches the rewrite only for statements under 50 parameters and
4 KiB; a multi-row upsert exceeds both, so each batch paid a full parse of its SQL text. The
statements are compiled with ``$n`` placeholders instead (``PostgresDialect.statement_dialect``)
and sent as they are by ``AsyncRawCursor``; psycopg still prepares them server-side after a few
runs. Statements run inside ``AsyncConnection.run_sync``: execute, fetch and close are one
coroutine, awaited once with SQLAlchemy's ``await_only`` (one greenlet switch, not three).

The engines this adapter creates connect with :class:`LeanAsyncConnection`, which waits for
a reply more cheaply than psycopg's general wait and keeps one raw cursor for the prepared
statements (docs/benchmarks.md, "PostgreSQL, session 2026-12-01 (late)": about 25 us of a
point read's 85 us of client CPU). A connection of a user's own engine is a plain
``AsyncConnection`` and runs as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen
from psycopg.types.json import set_json_loads
from psycopg.waiting import READY_R, WAIT_R
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

from composite_store.records.json import parse_json
from composite_store.sql.engine.prepared import PLAN_EACH_CALL

__all__ = ["LeanAsyncConnection", "execute_raw", "stream_raw"]

RV = TypeVar("RV")

#: Rows above which a kept cursor is closed after its statement, rather than kept with its
#: result (a cursor holds its last result until the next statement; a page of 1,000 messages
#: would otherwise stay in memory for as long as the connection sits idle).
KEEP_RESULT_ROWS = 64


class _Continued:
    """The rest of a psycopg generator, for psycopg's own ``AsyncConnection.wait`` to carry on
    with: its next step is ``first`` (the wait it just yielded: one for writing, which the
    reply to a small statement never needs) or raises ``exc`` (an interruption, a
    cancellation, that arrived during :meth:`LeanAsyncConnection.wait`'s wait: psycopg then
    handles it exactly as if it had arrived during its own wait, cancelling the query on the
    server and reading what it still sends before raising the interruption); then the
    generator goes on as before.
    """

    def __init__(
        self, gen: Generator[Any, Any, Any], *, first: Any = None, exc: BaseException | None = None
    ) -> None:
        self.gen = gen
        self.first: Any = first
        self.exc = exc

    def __iter__(self) -> _Continued:
        return self

    def __next__(self) -> Any:
        if self.exc is not None:
            exc, self.exc = self.exc, None
            raise exc
        if self.first is not None:
            first, self.first = self.first, None
            return first
        return next(self.gen)

    def send(self, value: Any) -> Any:
        return self.gen.send(value)


class LeanAsyncConnection(psycopg.AsyncConnection[Any]):
    """psycopg's ``AsyncConnection`` with a cheaper wait for replies and a kept raw cursor.

    psycopg's wait arms a 0.1 s timer for every wait (to notice Ctrl-C between polls, which
    asyncio's own signal handling does already), and checks how long the loop has been busy;
    here a wait for the reply (the common case: the statement was sent, the socket will become
    readable) is one reader callback resolving one future. A wait with a timeout, one for
    writing (a statement larger than the socket's buffer), and every interruption go to
    psycopg's own wait, so behaviour is psycopg's: a cancelled query is cancelled on the
    server as psycopg does it.
    """

    # The slots psycopg's classes keep do not include ours.
    _composite_cursor: psycopg.AsyncRawCursor[Any] | None = None

    async def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        # docstring inherited
        if timeout is not None:
            return await super().wait(gen, interval, timeout)
        try:
            state = next(gen)
        except StopIteration as done:
            result: RV = done.value
            return result
        fileno = self.pgconn.socket
        loop = asyncio.get_running_loop()
        rest: Any
        try:
            while state == WAIT_R:
                ready: asyncio.Future[int] = loop.create_future()
                loop.add_reader(fileno, _resolve, ready)
                try:
                    await ready
                except BaseException as exc:  # noqa: BLE001 - psycopg's wait handles it
                    rest = _Continued(gen, exc=exc)
                    break
                finally:
                    loop.remove_reader(fileno)
                state = gen.send(READY_R)
            else:
                rest = _Continued(gen, first=state)
        except StopIteration as done:
            result = done.value
            return result
        except OSError as exc:  # as psycopg's wait: the socket was closed under us
            raise psycopg.OperationalError("connection socket closed") from exc
        return await super().wait(rest, interval, timeout)

    def raw_cursor(self) -> psycopg.AsyncRawCursor[Any]:
        """This connection's raw cursor for prepared statements (one at a time: a connection
        serves one operation at a time)."""
        cursor = self._composite_cursor
        if cursor is None or cursor.closed:
            cursor = self._composite_cursor = psycopg.AsyncRawCursor(self)
            # JSON and JSONB values parsed by the C scanner alone (parse_json): a trace read
            # parses three documents a span.
            set_json_loads(_parse_json_bytes, cursor)
        return cursor


def _parse_json_bytes(data: str | bytes) -> Any:
    return parse_json(data if isinstance(data, str) else data.decode())


def _resolve(ready: asyncio.Future[int]) -> None:
    if not ready.done():
        ready.set_result(READY_R)


async def _execute(
    driver: psycopg.AsyncConnection[Any], sql: str, params: Any, fetch: bool
) -> tuple[list[Any] | None, int]:
    if isinstance(driver, LeanAsyncConnection):
        cursor, close = driver.raw_cursor(), False
    else:
        cursor, close = psycopg.AsyncRawCursor(driver), True
    try:
        # Not prepared on the server when its plan must follow the tables (PLAN_EACH_CALL).
        await cursor.execute(sql, params, prepare=False if sql.startswith(PLAN_EACH_CALL) else None)
        rows = await cursor.fetchall() if fetch else None
        count = cursor.rowcount
        close = close or count > KEEP_RESULT_ROWS
        return rows, count
    except BaseException:
        close = True  # its state after a failure is psycopg's business: start afresh
        raise
    finally:
        if close:
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
