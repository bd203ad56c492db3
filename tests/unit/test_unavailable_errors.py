"""Server states that mean "not now, try again" surface as the retryable
BackendUnavailableError, never as a plain CompositeStoreError."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import sqlalchemy as sa

from composite_store import BackendUnavailableError, open_store
from composite_store.sql.store import SqlStore


@pytest.mark.parametrize(
    "message",
    [
        "connection failed: FATAL:  sorry, too many clients already",
        "FATAL:  remaining connection slots are reserved for non-replication superuser",
        "(1040, 'Too many connections')",
        "FATAL:  the database system is shutting down",
        "FATAL:  the database system is starting up",
    ],
)
def test_busy_or_stopping_servers_are_backend_unavailable(tmp_path: Path, message: str) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'x.db'}")
    assert isinstance(store, SqlStore)

    def fail(conn: sa.Connection) -> None:
        raise sa.exc.OperationalError("SELECT 1", {}, Exception(message))

    async def main() -> None:
        await store.memory.init()
        try:
            await store.database.run(fail)
        finally:
            await store.close()

    with pytest.raises(BackendUnavailableError):
        asyncio.run(main())
