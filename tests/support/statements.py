"""Recording the statements a relational store sends: the prepared fast path
(``Prepared._execute``, on the driver's cursor, and ``SqlDatabase._run_direct``, on the
driver itself from the event loop) and SQLAlchemy's own execution
(``before_cursor_execute``), which between them see every statement once; and the operations
run in an explicit transaction, whose BEGIN and COMMIT a server in autocommit receives from the
driver directly (``SqlDatabase.run`` without ``single``)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from composite_store.sql.database import SqlDatabase
from composite_store.sql.engine import Prepared

__all__ = ["Statements", "record_engine", "record_prepared", "record_transactions"]


class Statements:
    """Every statement the store sends while ``recording``."""

    def __init__(self) -> None:
        self.sql: list[str] = []
        self.transactions = 0
        self.recording = False

    def selects(self) -> list[str]:
        return [s for s in self.sql if s.lstrip().upper().startswith("SELECT")]

    def reset(self) -> None:
        self.sql, self.transactions = [], 0


def record_prepared(monkeypatch: pytest.MonkeyPatch) -> Statements:
    """A :class:`Statements` that the prepared fast path records into until the test ends;
    pass the store's engine to :func:`record_engine` for the rest."""
    seen = Statements()
    execute = Prepared._execute

    def recorded(self: Prepared, conn: Any, values: Any, fetch: bool, sql: str | None = None):  # type: ignore[no-untyped-def]
        if seen.recording:
            seen.sql.append(self.sql if sql is None else sql)
        return execute(self, conn, values, fetch, sql)

    monkeypatch.setattr(Prepared, "_execute", recorded)
    direct = SqlDatabase._run_direct

    async def recorded_direct(self: SqlDatabase, stmt: Prepared, values: Any, fetch: bool):  # type: ignore[no-untyped-def]
        if seen.recording:
            seen.sql.append(stmt.sql)
        return await direct(self, stmt, values, fetch)

    monkeypatch.setattr(SqlDatabase, "_run_direct", recorded_direct)
    return seen


def record_engine(engine: Any, statements: Statements) -> None:
    """Record into ``statements`` what goes through SQLAlchemy's execution on ``engine`` (a
    synchronous or an async one)."""
    sync_engine = engine if isinstance(engine, sa.engine.Engine) else engine.sync_engine

    def cursor(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        if statements.recording:
            statements.sql.append(sql)

    sa.event.listen(sync_engine, "before_cursor_execute", cursor)


def record_transactions(db: SqlDatabase, statements: Statements) -> None:
    """Count into ``statements`` the operations ``db`` runs in an explicit transaction."""
    run = db.run

    async def counted(fn: Any, **options: Any) -> Any:
        if statements.recording and not options.get("single"):
            statements.transactions += 1
        return await run(fn, **options)

    db.run = counted  # type: ignore[method-assign]
