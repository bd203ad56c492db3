"""Several processes calling ``init()`` on one fresh namespace at once all succeed.

On servers the check ("does the table exist?") and the CREATE are two statements, so
concurrent first starts of an application race; the loser must re-check, not fail.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import secrets
import sqlite3
import threading
from pathlib import Path

import pytest

from composite_store import open_store
from tests.support.sql_stores import sql_store_url

PROCESSES = 4


def _init(url: str) -> None:
    async def go() -> None:
        store = open_store(url)
        await store.init()
        await store.close()

    asyncio.run(go())


def _url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    prefix = f"race{secrets.token_hex(3)}_"
    url = sql_store_url(backend, request, tmp_path)
    return f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "mariadb"])
def test_concurrent_first_init_succeeds_everywhere(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = _url(backend, request, tmp_path)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_init, args=(url,)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0] * PROCESSES

    async def tables() -> dict[str, bool]:
        async with open_store(url) as store:
            return {name: await dom.ping() for name, dom in store.domains.items()}

    assert all(asyncio.run(tables()).values())


@pytest.mark.parametrize("scheme", ["sqlite", "libsql"])
def test_opening_a_file_another_process_is_writing_waits(scheme: str, tmp_path: Path) -> None:
    # A connection holding the write lock of a file still in rollback-journal mode makes
    # SQLite refuse the switch to WAL at once, without its busy handler: the store must wait
    # for the lock as it does for any other write, not fail on its first connection.
    if scheme == "libsql":
        pytest.importorskip("libsql")
    path = tmp_path / "busy.db"
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    writer.execute("CREATE TABLE other (x INTEGER)")
    writer.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.0, writer.execute, ("COMMIT",))
    release.start()
    try:

        async def first_start() -> bool:
            async with open_store(f"{scheme}:///{path}") as store:
                await store.init()
                return all([await dom.ping() for dom in store.domains.values()])

        assert asyncio.run(first_start())
    finally:
        release.join()
        writer.close()
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    check.close()
