"""The raw contender on MariaDB/MySQL: asyncmy (the library's driver) doing the library's
logical work (``raw_sql.RawSqlTarget``) by hand.

Same layout (tables created by the library, in a database of their own): ``DATETIME(3)``
holding UTC, JSON as text, ``ON DUPLICATE KEY UPDATE`` upserts; the same session (utf8mb4,
strict ``sql_mode``, ``READ COMMITTED``) in autocommit, the minimal way (DESIGN.md section 8): a
read or a single-statement write is one round trip, ``BEGIN .. COMMIT`` only where statements
must agree (a message batch, a thread page and its count); a pool bounded like the library's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import asyncmy

from bench.targets.raw_sql import Op, Pool, RawSqlTarget, T, Tx

#: The library's session settings (composite_store_mysql.dialect).
SQL_MODE = (
    "STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
    "NO_ENGINE_SUBSTITUTION"
)


class _MysqlTx:
    __slots__ = ("conn",)

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        async with self.conn.cursor() as cursor:
            await cursor.execute(sql, args)
            rows: Sequence[Sequence[Any]] = await cursor.fetchall()
            return rows

    async def run(self, sql: str, args: Sequence[Any]) -> None:
        async with self.conn.cursor() as cursor:
            await cursor.execute(sql, args)


class RawMysqlTarget(RawSqlTarget):
    quote = "`"
    marker = "%s"
    #: Whether ``INSERT .. ON DUPLICATE KEY UPDATE`` returns the row written: on MariaDB
    #: (10.5+) it does, and the library returns the stored resource from ``update_resource``,
    #: so the raw contender reads it back the same way; MySQL has no ``RETURNING`` (the write
    #: alone). Learned from the server's version on the first connection (:meth:`open`).
    upsert_returning = False

    def __init__(self, url: str, prefix: str = "mastra_") -> None:
        super().__init__(prefix)
        parts = urlsplit(url)
        self.options = {
            "host": parts.hostname or "127.0.0.1",
            "port": parts.port or 3306,
            "user": unquote(parts.username or "root"),
            "password": unquote(parts.password or ""),
            "db": parts.path.lstrip("/"),
            "charset": "utf8mb4",
            "autocommit": True,
            "init_command": f"SET SESSION sql_mode='{SQL_MODE}'",
        }

        async def connect() -> Any:
            conn = await asyncmy.connect(**self.options)
            async with conn.cursor() as cursor:
                await cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
            return conn

        async def close(conn: Any) -> None:
            conn.close()

        self.pool: Pool[Any] = Pool(connect, close)

    async def open(self) -> None:
        async def version(tx: Tx) -> Sequence[Sequence[Any]]:
            return await tx.rows("SELECT VERSION()", [])

        [(server,)] = await self._statement(version)
        self.upsert_returning = "mariadb" in str(server).lower()

    async def close(self) -> None:
        await self.pool.close()

    async def _transaction(self, op: Op[T], *, write: bool) -> T:
        async with self.pool.connection() as conn:
            await conn.begin()
            try:
                result = await op(_MysqlTx(conn))
            except BaseException:
                await conn.rollback()
                raise
            await conn.commit()
            return result

    async def _statement(self, op: Op[T]) -> T:
        async with self.pool.connection() as conn:
            return await op(_MysqlTx(conn))

    def thread_range(self) -> str:
        # The library's FORCE INDEX (MysqlDialect.through_index): without it MariaDB can read
        # a side from the thread's far end (beside the page, or after such a statement ran).
        return f" FORCE INDEX ({self.q(self.prefix + 'messages_thread_id_createdat_idx')})"

    def upsert_clause(self, key: Sequence[str], update: Sequence[str]) -> str:
        sets = ", ".join(f"{self.q(c)} = VALUES({self.q(c)})" for c in update)
        return f"ON DUPLICATE KEY UPDATE {sets}"
