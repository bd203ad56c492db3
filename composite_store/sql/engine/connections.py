"""``HeldConnections``: async connections kept checked out of SQLAlchemy's pool between
operations.

A checkout from SQLAlchemy's async pool costs more than a point read on a loopback server: the
pool's bookkeeping and reset, a greenlet hop, and with ``pool_pre_ping`` one round trip. An
operation here takes a connection from a small LIFO stack instead, which costs nothing, and
keeps the protection pre-ping gives: a connection that sat idle for longer than
``ping_after`` seconds (when proxies and servers drop connections) is pinged before use, one
older than ``recycle`` seconds is replaced, and one the driver found dead is never reused.

Connections beyond the pool's size that stay idle for ``trim_after`` seconds go back to
SQLAlchemy's pool (which closes its overflow), so a burst of concurrency does not hold its
connections forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.pool import Pool, QueuePool

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["HeldConnections"]

#: Seconds a connection may sit idle before it is pinged on its next use.
PING_AFTER = 5.0
#: Seconds idle after which a connection beyond the pool's size is returned.
TRIM_AFTER = 10.0


def _unexposed_settings(pool: Pool) -> tuple[int, float]:
    """The ``max_overflow`` and ``pool_recycle`` ``pool`` was made with.

    SQLAlchemy has no public accessor for either (``QueuePool`` offers ``size()``,
    ``timeout()`` and ``overflow()``, the overflow in use now), so they are read from the
    pool's private attributes, here alone. Should an upgrade rename them, the fallbacks (no
    overflow, no recycling) apply and tests/unit/test_held_connections_sizing.py fails.
    """
    return getattr(pool, "_max_overflow", 0), getattr(pool, "_recycle", -1)


class _Held:
    __slots__ = ("born", "conn", "idle_since")

    def __init__(self, conn: AsyncConnection, now: float) -> None:
        self.conn = conn
        self.born = now
        self.idle_since = now


class HeldConnections:
    """Connections of one ``AsyncEngine`` held between operations (one event loop's)."""

    @classmethod
    def for_engine(cls, engine: AsyncEngine) -> HeldConnections | None:
        """Held connections sized like ``engine``'s pool, or None when the pool keeps nothing
        (``NullPool``: the user asked for a connection per operation)."""
        pool = engine.pool
        if not isinstance(pool, QueuePool):  # NullPool, StaticPool: nothing to hold
            return None
        size = pool.size()
        overflow, recycle = _unexposed_settings(pool)
        return cls(
            engine,
            keep=max(1, size),
            limit=None if overflow < 0 else max(1, size + overflow),
            timeout=pool.timeout(),
            recycle=recycle if recycle > 0 else float("inf"),
        )

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        keep: int,
        limit: int | None,
        timeout: float,
        recycle: float,
        ping_after: float = PING_AFTER,
        trim_after: float = TRIM_AFTER,
    ) -> None:
        self.engine = engine
        self.keep = keep
        self.limit = limit
        self.timeout = timeout
        self.recycle = recycle
        self.ping_after = ping_after
        self.trim_after = trim_after
        #: Idle connections, most recently used last.
        self._idle: list[_Held] = []
        #: Connections out with an operation, by identity.
        self._busy: dict[int, _Held] = {}
        #: Slots taken: connections out with an operation or being connected for one.
        self._out = 0
        #: Operations waiting for a connection while ``limit`` are busy: each gets a released
        #: connection, or None when a slot freed up and it should connect.
        self._waiters: deque[asyncio.Future[_Held | None]] = deque()

    async def acquire(self) -> AsyncConnection:
        """A connection ready for one operation's transaction."""
        # Take a slot first, so that connections being checked count against the limit.
        if not self._idle and self.limit is not None and self._out >= self.limit:
            handed = await self._wait()  # returns holding a slot, and maybe a connection
            if handed is not None:
                return handed.conn
        else:
            self._out += 1
        try:
            now = time.monotonic()
            while self._idle:
                held = self._idle.pop()
                if await self._usable(held, now):
                    self._busy[id(held.conn)] = held
                    return held.conn
            conn = await self.engine.connect()
        except BaseException:
            self._pass_on(None)
            raise
        self._busy[id(conn)] = _Held(conn, time.monotonic())
        return conn

    def take(self) -> AsyncConnection | None:
        """What :meth:`acquire` returns, without awaiting, when the most recently used idle
        connection needs no check (younger than ``recycle``, idle for at most
        ``ping_after``); else None, and :meth:`acquire` does the rest."""
        if not self._idle:
            return None
        held = self._idle[-1]
        now = time.monotonic()
        if now - held.born > self.recycle or now - held.idle_since > self.ping_after:
            return None
        self._idle.pop()
        self._out += 1
        self._busy[id(held.conn)] = held
        return held.conn

    async def _usable(self, held: _Held, now: float) -> bool:
        """Whether an idle connection may serve an operation; if not, it is let go."""
        try:
            if now - held.born > self.recycle:
                await self._close(held.conn)
                return False
            if now - held.idle_since > self.ping_after and not await self._alive(held.conn):
                # Connected before the drop, the others are suspect too; SQLAlchemy's pool
                # pre-pings what it hands out next.
                await self._invalidate(held.conn)
                await self.discard_idle()
                return False
        except BaseException:
            await asyncio.shield(self._invalidate(held.conn))  # cancelled mid-check
            raise
        return True

    async def release(self, conn: AsyncConnection, *, interrupted: bool) -> None:
        """Give back a connection after its operation; ``interrupted`` when the operation was
        cancelled rather than ending with its transaction committed or rolled back."""
        held = self._busy.pop(id(conn))
        sync = conn.sync_connection
        if interrupted or sync is None or sync.invalidated or sync.in_transaction():
            # Interrupted mid-statement (cancelled) or lost: its state is unknown.
            self._pass_on(None)
            await asyncio.shield(self._invalidate(conn))
            return
        self._pass_on(held)
        now = time.monotonic()
        while self._trim_due(len(self._idle), now):
            await asyncio.shield(self._close(self._idle.pop(0).conn))

    def give_back(self, conn: AsyncConnection) -> bool:
        """What :meth:`release` does for a connection whose operation ended normally, without
        awaiting, when there is nothing to close: True if done; False when :meth:`release`
        must do it (the connection is lost or left in a transaction, or an idle connection
        beyond ``keep`` is due to be returned)."""
        sync = conn.sync_connection
        if sync is None or sync.invalidated or sync.in_transaction():
            return False
        if self._trim_due(len(self._idle) + 1, time.monotonic()):
            return False
        self._pass_on(self._busy.pop(id(conn)))
        return True

    def _trim_due(self, idle: int, now: float) -> bool:
        """Whether, with ``idle`` connections idle, the oldest idle one is beyond ``keep`` and
        has been idle for ``trim_after``: it goes back to SQLAlchemy's pool."""
        oldest = self._idle[0] if self._idle else None
        return idle > self.keep and oldest is not None and now - oldest.idle_since > self.trim_after

    def _pass_on(self, held: _Held | None) -> None:
        """A connection (or, with None, a bare slot to connect in) leaves its operation: it
        goes to the first waiting operation, else the connection goes idle and the slot free."""
        if held is not None:
            held.idle_since = time.monotonic()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                if held is not None:
                    self._busy[id(held.conn)] = held
                waiter.set_result(held)
                return
        self._out -= 1
        if held is not None:
            self._idle.append(held)

    async def _wait(self) -> _Held | None:
        waiter: asyncio.Future[_Held | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), self.timeout)
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                # Handed a slot just as we gave up: pass it on rather than lose it.
                handed = waiter.result()
                if handed is not None:
                    del self._busy[id(handed.conn)]
                self._pass_on(handed)
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                raise sa.exc.TimeoutError(
                    f"all {self.limit} connections of the pool stayed busy for "
                    f"{self.timeout:g} seconds (pool_size + max_overflow; pool_timeout)"
                ) from None
            raise

    async def discard_idle(self) -> None:
        """Drop every idle connection (after a disconnect: they were made before it)."""
        while self._idle:
            await self._invalidate(self._idle.pop().conn)

    async def close(self) -> None:
        """Return every idle connection to the pool (busy ones return when released)."""
        while self._idle:
            await self._close(self._idle.pop().conn)

    # -- helpers ---------------------------------------------------------------------------------

    @staticmethod
    async def _alive(conn: AsyncConnection) -> bool:
        def ping(sync: Connection) -> bool:
            dialect, dbapi_connection = sync.dialect, sync.connection.dbapi_connection
            if dbapi_connection is None:
                return False
            try:
                return bool(dialect.do_ping(dbapi_connection))
            except (dialect.loaded_dbapi.Error, OSError):
                return False

        return await conn.run_sync(ping)

    @staticmethod
    async def _close(conn: AsyncConnection) -> None:
        try:
            await conn.close()
        except Exception:  # noqa: BLE001 - closing a broken connection fails in driver ways
            await HeldConnections._invalidate(conn)

    @staticmethod
    async def _invalidate(conn: AsyncConnection) -> None:
        # The connection is gone already when this fails; the pool forgets it either way.
        with contextlib.suppress(Exception):
            await conn.invalidate()
