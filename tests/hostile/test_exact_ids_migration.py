"""Schema version 3 on MariaDB: an existing database whose text columns pad (``utf8mb4_bin``,
PAD SPACE: ``'alice '`` equals ``'alice'``) is refused by ``init()`` until ``composite-store
migrate`` gives them the binary NO PAD collation; then ids compare exactly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from composite_store import cli, open_store
from composite_store.errors import SchemaMismatchError
from composite_store.schema.migrations import current_version
from composite_store.sql.store import SqlStore


def _collations(store: SqlStore) -> dict[str, str]:
    def read(conn: Any) -> dict[str, str]:
        import sqlalchemy as sa

        rows = conn.execute(
            sa.text(
                "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME), COLLATION_NAME "
                "FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'mastra_%' "
                "AND COLLATION_NAME IS NOT NULL AND DATA_TYPE = 'varchar' "
                "AND TABLE_NAME <> 'mastra_composite_schema'"
            )
        )
        return {r[0]: r[1] for r in rows}

    return asyncio.run(_on(store, read))


async def _on(store: SqlStore, fn: Any) -> Any:
    try:
        return await store.database.run(fn)
    finally:
        await store.close()


def test_mariadb_version_2_tables_are_migrated_to_exact_text(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.servers import mariadb

    url = mariadb.session_url(request)

    async def create_version_2() -> None:
        store = open_store(url)
        await store.init()
        try:
            assert isinstance(store, SqlStore)
            db = store.database

            def pad(conn: Any) -> None:
                # What the previous release created: VARCHAR keys in utf8mb4_bin.
                for tbl in db.tables.values():
                    columns = conn.exec_driver_sql(
                        "SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE FROM "
                        "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
                        f"TABLE_NAME = '{tbl.name}' AND DATA_TYPE = 'varchar'"
                    ).all()
                    for name, type_, nullable in columns:
                        null = "NULL" if nullable == "YES" else "NOT NULL"
                        conn.exec_driver_sql(
                            f"ALTER TABLE `{tbl.name}` MODIFY `{name}` {type_} CHARACTER SET "
                            f"utf8mb4 COLLATE utf8mb4_bin {null}"
                        )

            await db.run(pad, write=True)
            for dom in store.domains.values():
                await dom._write_schema_version(2)  # type: ignore[attr-defined]
        finally:
            await store.close()

    asyncio.run(create_version_2())
    store = open_store(url)
    assert isinstance(store, SqlStore)
    assert set(_collations(store).values()) == {"utf8mb4_bin"}

    async def init_refuses() -> None:
        store = open_store(url)
        try:
            with pytest.raises(SchemaMismatchError, match="composite-store migrate"):
                await store.init()
        finally:
            await store.close()

    asyncio.run(init_refuses())
    assert cli.main(["migrate", url, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "COLLATE utf8mb4_nopad_bin" in dry, dry
    assert cli.main(["migrate", url]) == 0
    capsys.readouterr()

    async def exact() -> None:
        store = open_store(url)
        await store.init()
        try:
            for name, dom in store.domains.items():
                assert await dom.schema_version() == current_version(name) == 4, name
            memory = store.memory
            await memory.update_resource(resource_id="alice", working_memory="secret")
            assert await memory.get_resource_by_id(resource_id="alice ") is None
        finally:
            await store.close()

    asyncio.run(exact())
    store = open_store(url)
    assert isinstance(store, SqlStore)
    left = {c: v for c, v in _collations(store).items() if v != "utf8mb4_nopad_bin"}
    assert left == {}
    assert cli.main(["migrate", url]) == 0
    assert "applied 0 statement(s)" in capsys.readouterr().out
