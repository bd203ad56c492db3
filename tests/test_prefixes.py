"""Two table prefixes in one database (one SQLite file, one PostgreSQL schema, one MariaDB
database): each store creates its own tables and indexes beside the other's, and sees only its
own rows. Index names are one per schema (per file on SQLite), so every index a prefix creates
must be named after its table; Mastra's fixed names are kept for the default prefix alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import composite_store as cs
from tests.support.sql_stores import sql_store_url


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "mariadb"])
def test_two_prefixes_share_a_database(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = sql_store_url(backend, request, tmp_path)

    async def main() -> None:
        # init() creates every domain's tables and indexes (datasets' unique index among them).
        async with cs.open_store(url) as plain, cs.open_store(url, prefix="app_") as other:
            for store, tag in ((plain, "plain"), (other, "other")):
                memory = store.memory
                assert memory is not None
                await memory.dangerously_clear_all()  # the server's namespace is the session's
                await memory.save_thread(
                    thread=cs.Thread(id=f"t-{tag}", resource_id="r", title=tag, metadata={})
                )
            for store, tag in ((plain, "plain"), (other, "other")):
                memory = store.memory
                assert memory is not None
                page = await memory.list_threads(filter={"resource_id": "r"})
                assert [t.id for t in page.items] == [f"t-{tag}"]

    asyncio.run(main())
