"""The raw contender on SQLite and libSQL: the stdlib ``sqlite3`` or the ``libsql`` driver
doing the library's logical work (``raw_sql.RawSqlTarget``) by hand.

Same file layout (tables created by the library), same pragmas (WAL, busy timeout,
synchronous=NORMAL), same transactions (``BEGIN IMMEDIATE`` for writes, ``BEGIN`` for reads),
timestamps as ``YYYY-MM-DDTHH:MM:SS.sssZ`` text and JSON as text, and the same async mode: one
hop to one worker thread per operation. On libSQL JSON columns are read through ``json()``,
as the library reads them (Mastra may have written binary JSONB).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from bench.targets.raw_sql import Op, RawSqlTarget, T, drive
from composite_store.schema import Column, ColumnType

#: Driver name -> how to open a file in autocommit mode usable from the worker thread.
DRIVERS = ("sqlite3", "libsql")


def _connect(driver: str, path: str) -> Any:
    if driver == "libsql":
        import libsql  # type: ignore[import-untyped]  # the driver ships no type information

        return libsql.connect(path, isolation_level=None, _check_same_thread=False)
    import sqlite3

    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


class _SyncTx:
    """``Tx`` on a synchronous connection: its awaits never suspend (see ``drive``)."""

    __slots__ = ("conn",)

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        rows: Sequence[Sequence[Any]] = self.conn.execute(sql, args).fetchall()
        return rows

    async def run(self, sql: str, args: Sequence[Any]) -> None:
        self.conn.execute(sql, args)


class RawSqliteTarget(RawSqlTarget):
    def __init__(self, path: str, driver: str = "sqlite3", prefix: str = "mastra_") -> None:
        if driver not in DRIVERS:
            raise ValueError(f"unknown SQLite driver {driver!r}: expected one of {DRIVERS}")
        super().__init__(prefix)
        self.path, self.driver = path, driver
        self.conn: Any = None
        self.executor = ThreadPoolExecutor(1, thread_name_prefix=f"raw-{driver}")

    async def open(self) -> None:
        def connect() -> Any:
            conn = _connect(self.driver, self.path)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn

        self.conn = await asyncio.get_running_loop().run_in_executor(self.executor, connect)

    async def close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            await asyncio.get_running_loop().run_in_executor(self.executor, conn.close)
        self.executor.shutdown()

    async def _transaction(self, op: Op[T], *, write: bool) -> T:
        return await asyncio.get_running_loop().run_in_executor(
            self.executor, self._in_thread, op, write
        )

    def _in_thread(self, op: Op[T], write: bool) -> T:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = drive(op(_SyncTx(conn)))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def encode_time(self, value: datetime) -> Any:
        value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"

    def decode_time(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def read_expr(self, column: Column) -> str:
        if self.driver == "libsql" and column.type is ColumnType.JSON:
            return f"json({self.q(column.name)}) AS {self.q(column.name)}"
        return self.q(column.name)
