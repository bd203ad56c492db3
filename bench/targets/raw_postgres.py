"""The raw contender on PostgreSQL: psycopg 3 in asyncio mode (``AsyncConnection``) doing the
library's logical work (``raw_sql.RawSqlTarget``) by hand.

Same layout as the library's (tables created by it, in a schema of their own): naive
``TIMESTAMP`` columns holding the UTC wall clock, each written with its ``"cZ" TIMESTAMPTZ``
shadow, read back as ``COALESCE("cZ", timezone('UTC', "c"))``; JSON as ``JSONB`` (psycopg
parses it on read, as it does for the library); locking reads ``FOR UPDATE``; each operation
one ``BEGIN .. COMMIT`` on a connection of a pool bounded like the library's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from bench.targets.raw_sql import Op, Pool, RawSqlTarget, T
from composite_store.schema import Column, ColumnType, shadow_name


class _PgTx:
    __slots__ = ("conn",)

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn

    async def rows(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]:
        cursor = await self.conn.execute(sql, args)
        return await cursor.fetchall()

    async def run(self, sql: str, args: Sequence[Any]) -> None:
        await self.conn.execute(sql, args)


class RawPostgresTarget(RawSqlTarget):
    marker = "%s"
    shadow_timestamps = True
    lock = " FOR UPDATE"

    def __init__(self, dsn: str, schema: str, prefix: str = "mastra_") -> None:
        super().__init__(prefix, schema)
        self.dsn = dsn

        async def connect() -> psycopg.AsyncConnection[Any]:
            # Autocommit: each operation's transaction is an explicit conn.transaction().
            return await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)

        async def close(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.close()

        self.pool: Pool[psycopg.AsyncConnection[Any]] = Pool(connect, close)

    async def close(self) -> None:
        await self.pool.close()

    async def _transaction(self, op: Op[T], *, write: bool) -> T:
        async with self.pool.connection() as conn, conn.transaction():
            return await op(_PgTx(conn))

    def read_expr(self, column: Column) -> str:
        if column.type is not ColumnType.TIMESTAMP:
            return self.q(column.name)
        name = self.q(column.name)
        return f"COALESCE({self.q(shadow_name(column.name))}, timezone('UTC', {name})) AS {name}"

    def decode_json(self, value: Any) -> Any:
        return value  # psycopg already parsed the JSONB
