"""The raw contender on PostgreSQL: psycopg 3 in asyncio mode (``AsyncConnection``) doing the
library's logical work (``raw_sql.RawSqlTarget``) by hand, the minimal way.

Same layout as the library's (tables created by it, in a schema of their own): naive
``TIMESTAMP`` columns holding the UTC wall clock, each written with its ``"cZ" TIMESTAMPTZ``
shadow, read back as ``COALESCE("cZ", timezone('UTC', "c"))``; JSON as ``JSONB`` (psycopg
parses it on read, as it does for the library). Connections plan without sequential scans
where an index applies, keep generic plans for prepared statements (below), and execute
through a raw cursor, with ``$n`` markers
(:func:`numbered`). Connections are in autocommit: a read or a
single-statement write is one round trip; a message batch is one statement too (below); a
transaction (``conn.transaction()``) only where statements must agree. A pool bounded like
the library's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from bench.targets.base import Msg
from bench.targets.raw_sql import MESSAGES, THREADS, Op, Pool, RawSqlTarget, T, Tx, now
from composite_store.schema import Column, ColumnType, shadow_name


def numbered(sql: str) -> str:
    """``sql`` with its ``%s`` markers as PostgreSQL's own ``$1, $2, ...``. psycopg rewrites
    ``%s`` into ``$n`` on every execution of a statement longer than 4,096 bytes (it caches
    only shorter ones): 2.5 ms of client CPU for a 10-span upsert of 460 markers, four times
    the statement's server time. A raw cursor sends ``$n`` as is."""
    pieces = sql.split("%s")
    return pieces[0] + "".join(f"${i}{piece}" for i, piece in enumerate(pieces[1:], 1))


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
    window_with_page = True  # one round trip for W2i, as the library's
    shadow_timestamps = True

    def __init__(self, dsn: str, schema: str, prefix: str = "mastra_") -> None:
        super().__init__(prefix, schema)
        self.dsn = dsn

        async def connect() -> psycopg.AsyncConnection[Any]:
            # Autocommit: a statement is its own transaction; conn.transaction() where not.
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, cursor_factory=psycopg.AsyncRawCursor
            )
            # psycopg prepares a statement from its sixth run, and the plan made then, while
            # the tables were nearly empty, scanned them whole later (the message batch's
            # lookups: 0.8 -> 4.5 ms at p95 within one W1 run). Without sequential scans the
            # plans use the indexes, as the library's connections do (INDEX_PLANS), and
            # without JIT, which the disabled scans' cost would otherwise trigger (NO_JIT).
            # The session in UTC, as the library's (UTC_SESSION): psycopg then loads
            # TIMESTAMPTZ as timezone.utc instead of converting each value to the server
            # default's ZoneInfo, which a hand-written program that knows it would do too.
            # Generic plans for prepared statements, always: PostgreSQL's plan cache otherwise
            # went back to planning W2i's page-and-window statement on every call (0.4-0.6 ms)
            # once the tables had been emptied and refilled, where the library's statement
            # kept its generic plan (docs/benchmarks.md, sixth session of 2026-12-07).
            await conn.execute(
                "SET enable_seqscan = off; SET jit = off; SET TimeZone = 'UTC'; "
                "SET plan_cache_mode = force_generic_plan"
            )
            return conn

        async def close(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.close()

        self.pool: Pool[psycopg.AsyncConnection[Any]] = Pool(connect, close)

    async def close(self) -> None:
        await self.pool.close()

    def statement(self, key: Any, build: Callable[[], str]) -> str:
        # Numbered once per shape, where the text is built and kept.
        return super().statement(key, lambda: numbered(build()))

    async def _transaction(self, op: Op[T], *, write: bool) -> T:
        async with self.pool.connection() as conn, conn.transaction():
            return await op(_PgTx(conn))

    async def _statement(self, op: Op[T]) -> T:
        async with self.pool.connection() as conn:
            return await op(_PgTx(conn))

    async def save_messages(self, messages: list[Msg]) -> None:
        """One statement, atomic by itself: the batch is inserted (upserted by id) and the
        touched threads' updatedAt bumped only when every target thread exists; the threads
        the ids were in before (a moved message) come from the statement's own snapshot."""
        rows = self.message_rows(messages)
        targets = sorted({m.thread_id for m in messages})
        ids = [m.id for m in messages]
        set_cols, set_args = self.stamp(THREADS, "updatedAt", now())
        sql = self.statement(("save_messages", len(targets), len(ids)), lambda: self._save_sql(
            set_cols, len(targets), len(ids)))
        args = [*targets, *ids, *[v for row in rows for v in row], len(targets), *set_args,
                len(targets)]
        found = await self._statement(lambda tx: tx.rows(sql, args))
        if found[0][0] != len(targets):
            raise LookupError(f"thread(s) not found among {targets}")

    def _save_sql(self, set_cols: list[str], n_targets: int, n_ids: int) -> str:
        cols = self.columns(MESSAGES)
        names = ", ".join(self.q(c) for c in cols)
        one = f"({self.marks(len(cols))})"
        sets = ", ".join(f"{self.q(c)} = excluded.{self.q(c)}" for c in cols if c != "id")
        thr, msg, tid = self.t(THREADS), self.t(MESSAGES), self.q("id")
        return (
            f"WITH tg AS (SELECT {tid} FROM {thr} WHERE {tid} IN ({self.marks(n_targets)})), "
            "t AS (SELECT count(*) AS n FROM tg), "
            f"prev AS (SELECT {self.q('thread_id')} AS tid FROM {msg} "
            f"WHERE {tid} IN ({self.marks(n_ids)})), "
            f"ins AS (INSERT INTO {msg} ({names}) SELECT * FROM (VALUES "
            f"{', '.join([one] * n_ids)}) AS v ({names}) WHERE (SELECT n FROM t) = %s "
            f"ON CONFLICT ({tid}) DO UPDATE SET {sets} RETURNING 1), "
            f"upd AS (UPDATE {thr} SET "
            + ", ".join(f"{self.q(c)} = %s" for c in set_cols)
            + f" WHERE (SELECT n FROM t) = %s AND {tid} IN (SELECT {tid} FROM tg "
            f"UNION SELECT tid FROM prev) RETURNING 1) SELECT n FROM t"
        )

    def read_expr(self, column: Column) -> str:
        if column.type is not ColumnType.TIMESTAMP:
            return self.q(column.name)
        name = self.q(column.name)
        return f"COALESCE({self.q(shadow_name(column.name))}, timezone('UTC', {name})) AS {name}"

    def decode_json(self, value: Any) -> Any:
        return value  # psycopg already parsed the JSONB


__all__ = ["RawPostgresTarget", "Tx"]
