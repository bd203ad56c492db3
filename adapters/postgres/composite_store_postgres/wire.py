"""One statement in autocommit on a psycopg connection's libpq handle, without a cursor.

An operation of one statement (``SqlDatabase.fetch`` and ``execute``: point reads, single-row
upserts, a message batch, a span batch, pages) needs from psycopg only what libpq does: dump
the parameters, send them with the statement (or its prepared name), wait for the one result,
load its rows. psycopg's cursor wraps that in a query object, its prepared-statement
bookkeeping, a lock, a transaction check and a result cursor to fetch from: a third of the
client's CPU for a point read on this project's machine (19 -> 13 us with client and server
on one core, 55 -> 43 us on two: docs/benchmarks.md, "Session 2026-12-05").
:class:`StatementRunner` does the libpq part with psycopg's own pieces (its ``Transformer``
dumps and loads exactly as a cursor of the connection does, its C ``execute`` generator
sends and reads, the connection's wait reads the reply) and keeps its own prepared
statements, as psycopg would: prepared once ``prepare_threshold`` runs preceded (the
connection's setting: None never prepares, for poolers that cannot keep them), at most
``prepared_max`` of them, the least recently used deallocated.

Only a statement of its own uses it: the connection in autocommit and in no transaction (the
direct path; the library's BEGIN; not the statements of its transactions, which psycopg's
cursor runs as before). A statement whose prepared form the server lost (``DISCARD ALL`` or
``DEALLOCATE ALL`` run by someone else, psycopg's own rollback handling among them) or whose
plan a DDL change invalidated ran nothing, so it forgets its prepared statements and runs
once more, unprepared. Errors are psycopg's, raised from the result as its cursor raises
them; a dropped connection leaves libpq's status BAD, which is what SQLAlchemy's dialect
checks to call it a disconnect.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.generators import execute

if TYPE_CHECKING:
    from psycopg.abc import Buffer
    from psycopg.pq.abc import PGresult

__all__ = ["StatementRunner"]

_TUPLES_OK = pq.ExecStatus.TUPLES_OK
_COMMAND_OK = pq.ExecStatus.COMMAND_OK
_CONNECTION_OK = pq.ConnStatus.OK
_AUTO = PyFormat.AUTO

#: (SQL, parameter types): the key of a prepared statement, as psycopg keys its own.
_Key = tuple[str, tuple[int, ...]]


def _lost_its_plan(exc: psycopg.Error) -> bool:
    """Whether ``exc`` says that a prepared statement cannot run as prepared, and so ran
    nothing: gone from the server (26000), or its result type changed by DDL (0A000, "cached
    plan must not change result type")."""
    return isinstance(exc, errors.InvalidSqlStatementName) or (
        isinstance(exc, errors.FeatureNotSupported) and "cached plan" in str(exc)
    )


class StatementRunner:
    """Runs statements one at a time on ``conn`` (in autocommit) straight through libpq;
    ``conn`` waits for replies (the adapter's ``LeanAsyncConnection``, whose wait is cheaper
    than psycopg's)."""

    __slots__ = ("_conn", "_counts", "_names", "_next", "_pgconn", "_tx")

    def __init__(
        self, conn: psycopg.AsyncConnection[Any], context: psycopg.AsyncRawCursor[Any]
    ) -> None:
        self._conn = conn
        self._pgconn = conn.pgconn
        # The raw cursor's adapters (JSON parsed by the library's loader): rows load exactly
        # as that cursor loads them.
        self._tx = Transformer(context)
        #: Prepared statements' names, least recently used first.
        self._names: OrderedDict[_Key, bytes] = OrderedDict()
        #: Runs of statements not prepared yet, least recently used first.
        self._counts: OrderedDict[_Key, int] = OrderedDict()
        self._next = 0

    @property
    def prepared(self) -> int:
        """How many statements are prepared on the server (for tests)."""
        return len(self._names)

    async def run(
        self, sql: str, params: Sequence[Any], fetch: bool, prepare: bool | None
    ) -> tuple[list[Any] | None, int]:
        """Run ``sql`` (``$n`` placeholders) with ``params``: the rows (tuples) when
        ``fetch``, and the row count. ``prepare=False`` never prepares it (its plan must
        follow the tables); None prepares it once the connection's ``prepare_threshold``
        runs of it preceded, as psycopg does."""
        pgconn = self._pgconn
        if pgconn.status != _CONNECTION_OK:
            raise psycopg.OperationalError("the connection is closed")
        tx = self._tx
        values = tx.dump_sequence(params, [_AUTO] * len(params))
        # After dump_sequence the transformer holds the values' types and formats.
        types: tuple[int, ...] = tx.types or ()
        formats = tx.formats
        key = (sql, types)
        name = self._names.get(key)
        try:
            if name is not None:
                self._names.move_to_end(key)
                pgconn.send_query_prepared(name, values, param_formats=formats)
                result = await self._result()
            elif prepare is False or not self._should_prepare(key):
                pgconn.send_query_params(
                    sql.encode(), values, param_types=types, param_formats=formats
                )
                result = await self._result()
            else:
                result = await self._prepare_and_run(key, values, formats)
        except psycopg.Error as exc:
            if name is None or not _lost_its_plan(exc):
                raise
            await self._forget(key, name, exc)
            pgconn.send_query_params(sql.encode(), values, param_types=types, param_formats=formats)
            result = await self._result()
        if result.status == _TUPLES_OK:
            count = result.ntuples
            if not fetch:
                return None, count
            tx.set_pgresult(result)
            try:
                return tx.load_rows(0, count, tuple), count
            finally:
                tx.set_pgresult(None)  # the transformer would keep the result alive
        affected = result.command_tuples
        return ([] if fetch else None), (-1 if affected is None else affected)

    def _should_prepare(self, key: _Key) -> bool:
        """Count a run of an unprepared statement; whether this run should prepare it."""
        threshold = self._conn.prepare_threshold
        if threshold is None:
            return False
        runs = self._counts.pop(key, 0)  # the runs before this one
        if runs >= threshold:  # as psycopg: the default 5 prepares on the sixth run
            return True
        self._counts[key] = runs + 1
        while len(self._counts) > self._limit():
            self._counts.popitem(last=False)
        return False

    def _limit(self) -> int:
        """The connection's ``prepared_max``, as psycopg reads it: None is no bound."""
        limit = self._conn.prepared_max
        return sys.maxsize if limit is None else limit

    async def _prepare_and_run(
        self, key: _Key, values: Sequence[Buffer | None], formats: Sequence[pq.Format] | None
    ) -> PGresult:
        pgconn = self._pgconn
        name = f"_cs_{self._next}".encode()
        self._next += 1
        pgconn.send_prepare(name, key[0].encode(), param_types=key[1])
        await self._result()  # raises if the statement cannot be prepared
        self._names[key] = name
        pgconn.send_query_prepared(name, values, param_formats=formats)
        result = await self._result()
        while len(self._names) > self._limit():
            _, evicted = self._names.popitem(last=False)
            await self._deallocate(evicted)
        return result

    async def _forget(self, key: _Key, name: bytes, exc: psycopg.Error) -> None:
        """Forget the prepared statement ``name`` that could not run (``exc``): gone from
        the server, all of them are (``DISCARD ALL``, ``DEALLOCATE ALL``); made stale by DDL,
        it is deallocated. Statements forgotten run unprepared until prepared again under
        new names."""
        if isinstance(exc, errors.InvalidSqlStatementName):
            self._names.clear()
            self._counts.clear()
            return
        del self._names[key]
        await self._deallocate(name)

    async def _deallocate(self, name: bytes) -> None:
        self._pgconn.send_query(b"DEALLOCATE " + name)
        await self._result()

    async def _result(self) -> PGresult:
        """Send what libpq holds, wait for the reply, and return its one result; raise
        psycopg's error for a failed one."""
        results: list[PGresult] = await self._conn.wait(execute(self._pgconn))
        for result in results:
            status = result.status
            if status != _TUPLES_OK and status != _COMMAND_OK:
                raise errors.error_from_result(result, encoding=self._pgconn._encoding)
        if len(results) != 1:
            raise psycopg.InternalError(f"expected one result, got {len(results)}")
        return results[0]
