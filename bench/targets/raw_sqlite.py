"""The raw contender on SQLite and libSQL: the stdlib ``sqlite3`` or the ``libsql`` driver
doing the library's logical work (``raw_sql.RawSqlTarget``) by hand.

Same file layout (tables created by the library), same pragmas (WAL, busy timeout,
synchronous=NORMAL), timestamps as ``YYYY-MM-DDTHH:MM:SS.sssZ`` text and JSON as text. The
minimal way (DESIGN.md section 8): synchronous calls on the caller's thread (no worker-thread
hop), single statements in autocommit, ``BEGIN IMMEDIATE .. COMMIT`` only around a message batch
(``UPDATE .. RETURNING`` of the touched threads, then the upsert) and ``BEGIN .. COMMIT`` around
a thread page and its count. On libSQL JSON columns are read through ``json()``, as the library
reads them (Mastra may have written binary JSONB).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bench.targets.base import Msg
from bench.targets.raw_sql import CHUNK, MESSAGES, THREADS, Op, RawSqlTarget, T, Tx, drive, now
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

    async def open(self) -> None:
        conn = _connect(self.driver, self.path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA synchronous=NORMAL")
        self.conn = conn

    async def close(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            conn.close()

    async def _transaction(self, op: Op[T], *, write: bool) -> T:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = drive(op(_SyncTx(conn)))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    async def _statement(self, op: Op[T]) -> T:
        return drive(op(_SyncTx(self.conn)))

    async def save_messages(self, messages: list[Msg]) -> None:
        """One transaction: the touched threads' updatedAt bumped first (``RETURNING`` says
        which targets exist; the threads the ids are in now are found by the same statement),
        then the upsert."""
        names = MESSAGES.column_names
        rows = self.message_rows(messages)
        targets = sorted({m.thread_id for m in messages})
        ids = [m.id for m in messages]
        set_cols, set_args = self.stamp(THREADS, "updatedAt", now())
        m, tid = self.marker, self.q("id")
        touch = self.statement(
            ("touch_returning", len(targets), len(ids)),
            lambda: f"UPDATE {self.t(THREADS)} SET "
            + ", ".join(f"{self.q(c)} = {m}" for c in set_cols)
            + f" WHERE {tid} IN ({self.marks(len(targets))}) OR {tid} IN (SELECT "
            f"{self.q('thread_id')} FROM {self.t(MESSAGES)} WHERE {tid} IN "
            f"({self.marks(len(ids))})) RETURNING {tid}",
        )

        async def save(tx: Tx) -> None:
            touched = {r[0] for r in await tx.rows(touch, [*set_args, *targets, *ids])}
            if not touched.issuperset(targets):
                raise LookupError(f"thread(s) not found among {targets}")
            for start in range(0, len(rows), CHUNK):
                part = rows[start : start + CHUNK]
                sql = self.upsert(MESSAGES, names, ["id"], [], len(part))
                await tx.run(sql, [v for row in part for v in row])

        await self._transaction(save, write=True)

    def encode_time(self, value: datetime) -> Any:
        value = value.astimezone(UTC)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"

    def decode_time(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def read_expr(self, column: Column) -> str:
        if self.driver == "libsql" and column.type is ColumnType.JSON:
            return f"json({self.q(column.name)}) AS {self.q(column.name)}"
        return self.q(column.name)
