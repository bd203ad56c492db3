"""How prepared statements run on PostgreSQL: psycopg's raw cursor, in one await per statement.

psycopg's ordinary cursor rewrites every query from ``%(name)s`` placeholders to PostgreSQL's
``$1`` before sending it, and caches the rewrite only for statements under 50 parameters and
4 KiB; a multi-row upsert exceeds both, so each batch paid a full parse of its SQL text. The
statements are compiled with ``$n`` placeholders instead (``PostgresDialect.statement_dialect``)
and sent as they are by ``AsyncRawCursor``; psycopg still prepares them server-side after a few
runs. Execute, fetch and close are one awaitable (:func:`execute_on_driver`): an operation of
one statement (``SqlDatabase.fetch`` and ``execute``) awaits it from the event loop itself; a
statement of a longer operation is awaited once from the operation's greenlet with
SQLAlchemy's ``await_only`` (:func:`execute_raw`: one greenlet switch, not three). A statement
of its own (autocommit, no transaction open) skips the cursor too: :mod:`.wire` runs it on
libpq with psycopg's dumpers and loaders, and its coroutine is the awaitable itself.

The engines this adapter creates connect with :class:`LeanAsyncConnection`, which waits for
a reply more cheaply than psycopg's general wait (its reader stays registered, and reads the
reply in its callback) and keeps one raw cursor for the prepared statements
(docs/benchmarks.md, "PostgreSQL, session 2026-12-01 (late)" and "Session 2026-12-04"). A
connection of a user's own engine is a plain ``AsyncConnection`` and runs as before.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Generator, Iterator, Mapping
from typing import Any, TypeVar

import psycopg
from psycopg.abc import PQGen
from psycopg.types.json import set_json_loads
from psycopg.waiting import READY_R, WAIT_R
from sqlalchemy.engine import Connection
from sqlalchemy.util import await_only

from composite_store.records.json import parse_json
from composite_store.sql.engine.prepared import PLAN_EACH_CALL
from composite_store_postgres.wire import StatementRunner

__all__ = [
    "INDEX_PLANS",
    "LZ4_COMPRESSION",
    "LZ4_SESSION",
    "UTC_SESSION",
    "LeanAsyncConnection",
    "connect",
    "execute_on_driver",
    "execute_raw",
    "sets_time_zone",
    "stream_raw",
]

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

#: Sent at connect as well, unless the URL or libpq's environment (``PGTZ``, ``PGOPTIONS``)
#: sets a time zone: the session in UTC. Nothing the library sends depends on the session's
#: zone (naive columns hold the UTC wall clock and are read ``AT TIME ZONE 'UTC'``), but
#: psycopg reads every ``TIMESTAMPTZ`` into the session's zone, and a server's default
#: (``Etc/UTC``, a local zone) is a ``ZoneInfo`` where ``UTC`` alone is ``timezone.utc``:
#: each value then went through ``ZoneInfo`` in the driver and through ``astimezone`` in
#: ``sql.types._read_utc`` (a trace read of 10 spans: 141-162 -> 112-118 us of CPU). It also
#: makes Mastra's span trigger (``now()`` into the naive columns) write the UTC wall clock
#: on a shared database when composite-store writes the span.
UTC_SESSION = "SET TimeZone = 'UTC'"

#: Sent at connect as well: values the session writes that PostgreSQL compresses (a row past
#: about 2 KB: a workflow snapshot, a long message, a span's large input) are compressed with
#: LZ4 rather than the default pglz. On this project's machine the server wrote 5,000 copies
#: of a 5.6 KB snapshot in 148 ms with pglz and 52 ms with LZ4 (30 -> 10 us a row; stored
#: 980 -> 1,037 bytes), and pgbench upserting snapshots ran 10-24% more transactions a second
#: with one client, 0-16% with eight (docs/benchmarks.md, "Session 2026-12-07 (fourth)").
#: Every reader decompresses either method transparently (Mastra, pg_dump, a replica of the
#: same server). Chosen through ``pg_settings``, only where the setting still has its built-in
#: default (``source = 'default'``: not chosen in postgresql.conf, for the database or role,
#: or by the URL's ``options`` or ``PGOPTIONS``) and the server offers LZ4: a server built
#: without it, or older than PostgreSQL 14 (no such setting), keeps pglz rather than failing
#: the connection. Reading ``pg_settings`` builds every setting's row (about 1 ms of the
#: server's time, more than the rest of a connection's settings), so it is read once per
#: server, database, user and startup options in a process (:data:`_LZ4_CHOSEN`); the later
#: connections to the same target send :data:`LZ4_SESSION` where it chose LZ4.
LZ4_COMPRESSION = (
    "SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings"
    " WHERE name = 'default_toast_compression' AND source = 'default'"
    " AND 'lz4' = ANY (enumvals)"
)
#: :data:`LZ4_COMPRESSION`'s choice, once made for a connection's target.
LZ4_SESSION = "SET default_toast_compression = lz4"

#: Whether :data:`LZ4_COMPRESSION` chose LZ4, by connection target (host, port, database,
#: user, startup options). Entries are only ever set to what the server answered, so
#: concurrent first connections to one target at worst both ask.
_LZ4_CHOSEN: dict[tuple[str, int, str, str, bytes], bool] = {}

_IDLE = psycopg.pq.TransactionStatus.IDLE
_SETS_SEQSCAN = re.compile(r"\benable_seqscan\b")
_SETS_JIT = re.compile(r"\bjit\s*=")
#: ``timezone=`` (``-c timezone=``, ``-ctimezone=``), not ``log_timezone=``.
_SETS_TIMEZONE = re.compile(r"(?:^|[^a-z_]|-c)timezone\s*=", re.IGNORECASE)

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


class _HandOff:
    """What the reader hands the waiting task when the reply's generator asks for something
    other than more of the reply (``state``: a wait for writing): psycopg's wait takes over."""

    __slots__ = ("state",)

    def __init__(self, state: Any) -> None:
        self.state = state


class LeanAsyncConnection(psycopg.AsyncConnection[Any]):
    """psycopg's ``AsyncConnection`` with a cheaper wait for replies and a kept raw cursor.

    psycopg's wait registers a reader on the socket for every wait and unregisters it after
    (two ``epoll_ctl`` calls), arms a 0.1 s timer (to notice Ctrl-C between polls, which
    asyncio's own signal handling does already), and wakes the task for each part of a reply.
    Here the reader stays registered while the connection is in use, and the reply is read in
    the reader's callback: the task is woken once, with the generator's outcome. A wait with a
    timeout, one for writing (a statement larger than the socket's buffer), and every
    interruption go to psycopg's own wait, so behaviour is psycopg's: a cancelled query is
    cancelled on the server as psycopg does it.

    The reader is unregistered when data arrives with no reply awaited (a notice, or the
    server closing an idle connection: a readable socket nobody reads would wake the loop on
    every turn), before psycopg's own wait takes over (it registers the same socket), on a
    failure, and when the connection closes (asyncio must not keep a closed socket's number,
    which the next socket may get).
    """

    # The slots psycopg's classes keep do not include ours.
    _composite_cursor: psycopg.AsyncRawCursor[Any] | None = None
    _composite_runner: StatementRunner | None = None
    #: Whether the session runs with :data:`INDEX_PLANS` (set by :func:`connect`).
    index_plans = False
    #: The reader's registration (None: not registered): the duplicate of the socket it
    #: watches, the loop, and libpq's socket it duplicates.
    _reading: tuple[int, asyncio.AbstractEventLoop, int] | None = None
    #: The reply being read: its generator and the future its outcome resolves.
    _reply_gen: Generator[Any, Any, Any] | None = None
    _reply: asyncio.Future[Any] | None = None

    async def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        # docstring inherited
        if timeout is not None:
            return await self._psycopg_wait(gen, interval, timeout)
        try:
            state = next(gen)
        except StopIteration as done:
            result: RV = done.value
            return result
        except OSError as exc:  # as psycopg's wait: the socket was closed under us
            raise psycopg.OperationalError("connection socket closed") from exc
        # _Continued is the rest of ``gen``: what psycopg's wait takes, typed as a generator.
        rest: Any
        if state != WAIT_R:
            rest = _Continued(gen, first=state)
            return await self._psycopg_wait(rest, interval, timeout)
        loop = asyncio.get_running_loop()
        fileno = self.pgconn.socket
        reading = self._reading
        if reading is None or reading[2] != fileno or reading[1] is not loop:
            self._stop_reading()
            # A duplicate of libpq's socket: libpq closes its own when it finds the connection
            # lost, and a socket number asyncio keeps registered after its close would be
            # given to the next connection, whose registration would then fail ("No such
            # file or directory"). The duplicate stays open until the reader goes.
            watched = os.dup(fileno)
            try:
                loop.add_reader(watched, self._readable)
            except BaseException:
                os.close(watched)
                raise
            self._reading = (watched, loop, fileno)
        reply = self._reply = loop.create_future()
        self._reply_gen = gen
        try:
            outcome = await reply
        except OSError as exc:
            raise psycopg.OperationalError("connection socket closed") from exc
        except BaseException as exc:
            if reply.done() and not reply.cancelled():
                raise  # the generator's own failure, raised by the reader
            # Interrupted while the reply was awaited: psycopg's wait handles it, with the
            # generator where the reader left it.
            rest = _Continued(gen, exc=exc)
            return await self._psycopg_wait(rest, interval, timeout)
        finally:
            self._reply = self._reply_gen = None
        if isinstance(outcome, _HandOff):
            rest = _Continued(gen, first=outcome.state)
            return await self._psycopg_wait(rest, interval, timeout)
        finished: RV = outcome
        return finished

    async def _psycopg_wait(
        self, gen: PQGen[RV], interval: float, timeout: float | None
    ) -> RV:
        """psycopg's own wait for ``gen``, our reader unregistered first (psycopg's registers
        the same socket, and unregisters it when done)."""
        self._stop_reading()
        return await super().wait(gen, interval, timeout)

    def _readable(self) -> None:
        """The socket has data: read the awaited reply as far as it came (the generator
        consumes it), and resolve the task's future when the generator is done."""
        gen, reply = self._reply_gen, self._reply
        if gen is None or reply is None or reply.done():
            self._stop_reading()  # nothing awaits it; the next wait registers again
            return
        try:
            state = gen.send(READY_R)
        except StopIteration as done:
            self._reply_gen = None
            reply.set_result(done.value)
            return
        except Exception as exc:  # noqa: BLE001 - the awaiting task raises it
            self._reply_gen = None
            self._stop_reading()
            reply.set_exception(exc)
            return
        if state != WAIT_R:
            self._reply_gen = None
            reply.set_result(_HandOff(state))

    def _stop_reading(self) -> None:
        reading, self._reading = self._reading, None
        if reading is not None:
            watched, loop, _ = reading
            try:
                if not loop.is_closed():
                    loop.remove_reader(watched)
            finally:
                os.close(watched)

    async def close(self) -> None:
        # docstring inherited
        self._stop_reading()
        await super().close()

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

    def statements(self) -> StatementRunner:
        """This connection's runner of single statements in autocommit (:mod:`.wire`)."""
        runner = self._composite_runner
        if runner is None:
            runner = self._composite_runner = StatementRunner(self, self.raw_cursor())
        return runner


async def connect(*args: Any, **kwargs: Any) -> LeanAsyncConnection:
    """``LeanAsyncConnection.connect(*args, **kwargs)``, then :data:`INDEX_PLANS` and
    :data:`NO_JIT` (the engines' ``async_creator_fn``), unless the URL sets
    ``enable_seqscan`` itself (``options=-c enable_seqscan=on``; ``jit`` likewise),
    :data:`UTC_SESSION` unless a time zone is set (:func:`sets_time_zone`), and
    :data:`LZ4_COMPRESSION` (or its choice, :data:`LZ4_SESSION`). Session settings, not
    startup options: connection poolers such as PgBouncer refuse unknown startup
    parameters. Sent in autocommit, so that they hold for the session at once and the
    pool's reset (a ROLLBACK) keeps them: one round trip, not BEGIN, SET and COMMIT."""
    conn = await LeanAsyncConnection.connect(*args, **kwargs)
    given = f"{args} {kwargs.get('options', '')}"
    settings = []
    if not _SETS_SEQSCAN.search(given):  # else the user's own choice, as given (jit too)
        settings.append(INDEX_PLANS)
        if not _SETS_JIT.search(given):
            settings.append(NO_JIT)
    if not sets_time_zone(given, os.environ):
        settings.append(UTC_SESSION)
    info = conn.info
    target = (info.host, info.port, info.dbname, info.user, conn.pgconn.options)
    lz4 = _LZ4_CHOSEN.get(target)
    if lz4 is None:
        settings.append(LZ4_COMPRESSION)  # the server knows whether anyone chose one
    elif lz4:
        settings.append(LZ4_SESSION)
    try:
        autocommit = conn.autocommit
        if not autocommit:
            await conn.set_autocommit(True)  # no round trip: the connection is idle
        cursor = await conn.execute("; ".join(settings), prepare=False)
        if lz4 is None:
            while cursor.nextset():  # to the last statement's result: LZ4_COMPRESSION's
                pass
            _LZ4_CHOSEN[target] = cursor.rowcount == 1
        if not autocommit:
            await conn.set_autocommit(False)
        conn.index_plans = INDEX_PLANS in settings
    except BaseException:
        await conn.close()
        raise
    return conn


def sets_time_zone(given: str, environ: Mapping[str, str]) -> bool:
    """Whether a connection's arguments (``given``: its connection string and ``options``)
    or libpq's environment choose the session's time zone: ``-c TimeZone=...`` there or in
    ``PGOPTIONS``, or ``PGTZ``. That choice is the user's, kept as given."""
    return bool(
        environ.get("PGTZ")
        or _SETS_TIMEZONE.search(given)
        or _SETS_TIMEZONE.search(environ.get("PGOPTIONS", ""))
    )


def _parse_json_bytes(data: str | bytes) -> Any:
    return parse_json(data if isinstance(data, str) else data.decode())


def execute_on_driver(
    driver: psycopg.AsyncConnection[Any], sql: str, params: Any, fetch: bool
) -> Awaitable[tuple[list[Any] | None, int]]:
    """Run ``sql`` (``$n`` placeholders) with positional ``params`` on the psycopg connection
    ``driver``: the rows when ``fetch`` and the row count (the adapter's
    ``driver_executor``, awaited from the event loop; :func:`execute_raw` awaits it from an
    operation's greenlet). A statement of its own is the runner's coroutine itself, not one
    wrapping it: each coroutine an awaited call passes through is resumed when its reply
    comes."""
    # Where plans use the indexes whatever the tables' sizes (INDEX_PLANS) every statement may
    # stay prepared; elsewhere (a user's engine, or the URL kept sequential scans) one whose
    # plan must follow the tables (PLAN_EACH_CALL) is planned for every call.
    index_plans = getattr(driver, "index_plans", False)
    prepare = False if not index_plans and sql.startswith(PLAN_EACH_CALL) else None
    if (
        isinstance(driver, LeanAsyncConnection)
        and driver.autocommit
        and driver.pgconn.transaction_status == _IDLE
    ):
        # A statement of its own, or the BEGIN of one of the library's transactions.
        return driver.statements().run(sql, params or (), fetch, prepare)
    return _execute_on_cursor(driver, sql, params, fetch, prepare)


async def _execute_on_cursor(
    driver: psycopg.AsyncConnection[Any], sql: str, params: Any, fetch: bool, prepare: bool | None
) -> tuple[list[Any] | None, int]:
    """:func:`execute_on_driver` inside a transaction, or on a user's connection: through a
    raw cursor (the connection's kept one where it has one)."""
    if isinstance(driver, LeanAsyncConnection):
        cursor, close = driver.raw_cursor(), False
    else:
        cursor, close = psycopg.AsyncRawCursor(driver), True
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
    result: tuple[list[Any] | None, int] = await_only(execute_on_driver(driver, sql, params, fetch))
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
