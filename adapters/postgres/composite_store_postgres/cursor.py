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
import re
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

__all__ = ["INDEX_PLANS", "LeanAsyncConnection", "connect", "execute_raw", "stream_raw"]

RV = TypeVar("RV")

#: What every connection of the adapter's engines runs once, when it opens: its plans never fall
#: back to a sequential scan where an index can serve the statement. Every statement the
#: library sends is written to be served by an index (tests/test_query_plans.py), but a
#: plan psycopg keeps prepared is made once, from the tables' sizes at that moment: a point
#: read prepared while its table held one page scanned the whole table after it grew to
#: 300,000 rows (15 ms a read instead of 0.2 ms) until an ANALYZE invalidated the plan; a
#: message batch's lookups did the same from its first batches on (1 -> 13 ms a batch over
#: 40,000 messages). With sequential scans disabled the planner still uses one where no
#: index applies; elsewhere the plan no longer depends on the statistics, so statements can
#: stay prepared (a message batch: 1.0 -> 0.6 ms).
INDEX_PLANS = "SET enable_seqscan = off"

#: Sent with :data:`INDEX_PLANS`: JIT compilation off. A disabled scan still costs its plan
#: 10^10, above every ``jit_*_above_cost``, so each statement with no index to use (scores
#: listed by ``runId``, say) was JIT-compiled with inlining and optimization on every call:
#: 120-300 ms for a table of 50 rows, against 0.1 ms to run it. Point reads and short pages
#: gain nothing from JIT anyway. A URL that sets ``jit`` itself keeps its value.
NO_JIT = "SET jit = off"

_SETS_SEQSCAN = re.compile(r"\benable_seqscan\b")
_SETS_JIT = re.compile(r"\bjit\s*=")

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
    #: Whether the session runs with :data:`INDEX_PLANS` (set by :func:`connect`).
    index_plans = False

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


async def connect(*args: Any, **kwargs: Any) -> LeanAsyncConnection:
    """``LeanAsyncConnection.connect(*args, **kwargs)``, then :data:`INDEX_PLANS` and
    :data:`NO_JIT` (the engines' ``async_creator_fn``), unless the URL sets
    ``enable_seqscan`` itself (``options=-c enable_seqscan=on``; ``jit`` likewise). Session
    settings, not startup options: connection poolers such as PgBouncer refuse unknown
    startup parameters. Committed, so that the pool's reset (a ROLLBACK) keeps them."""
    conn = await LeanAsyncConnection.connect(*args, **kwargs)
    given = f"{args} {kwargs.get('options', '')}"
    if _SETS_SEQSCAN.search(given):
        return conn  # the user's own choice, as given
    settings = INDEX_PLANS if _SETS_JIT.search(given) else f"{INDEX_PLANS}; {NO_JIT}"
    try:
        await conn.execute(settings, prepare=False)
        if not conn.autocommit:
            await conn.commit()
        conn.index_plans = True
    except BaseException:
        await conn.close()
        raise
    return conn


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
    # Where plans use the indexes whatever the tables' sizes (INDEX_PLANS) every statement may
    # stay prepared; elsewhere (a user's engine, or the URL kept sequential scans) one whose
    # plan must follow the tables (PLAN_EACH_CALL) is planned for every call.
    index_plans = getattr(driver, "index_plans", False)
    prepare = False if not index_plans and sql.startswith(PLAN_EACH_CALL) else None
    try:
        await cursor.execute(sql, params, prepare=prepare)
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
