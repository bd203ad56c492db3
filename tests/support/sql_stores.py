"""Tests of a relational store's engine (held connections, the MariaDB driver): one store,
initialized, on its own event loop, and statements run on its database."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Connection

from composite_store import open_store
from composite_store.sql.database import SqlDatabase
from composite_store.sql.store import SqlStore


def run_on_store(url: str, test: Callable[[SqlStore, SqlDatabase], Awaitable[None]]) -> None:
    """Open the relational store of ``url``, initialize it, run ``test(store, database)`` and
    close the store, on an event loop of their own."""

    async def go() -> None:
        store = open_store(url)
        assert isinstance(store, SqlStore)
        await store.init()
        try:
            await test(store, store.database)
        finally:
            await store.close()

    asyncio.run(go())


def scalar(sql: str) -> Callable[[Connection], Any]:
    """An operation for ``SqlDatabase.run``: the first value of ``sql``'s result."""
    return lambda conn: conn.exec_driver_sql(sql).scalar()


def sql_store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL of ``backend`` (sqlite, postgres, mariadb) of the test's own: a file in
    ``tmp_path``, or a namespace on the server provisioned for the session (found or started
    here, so call it outside an event loop; skips or fails when unreachable)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/store.db"
    from tests.support.servers import mariadb, postgres

    module = {"postgres": postgres, "mariadb": mariadb}[backend]
    url: str = module.session_url(request)
    return url
