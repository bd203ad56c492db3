"""libSQL specifics: Mastra's JSONB columns, DB-API error translation, URL forms."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

libsql = pytest.importorskip("libsql")

from composite_store_libsql import dbapi  # noqa: E402
from composite_store_libsql.dialect import split_url  # noqa: E402

from composite_store import open_store  # noqa: E402
from composite_store.errors import ValidationError  # noqa: E402


def test_reads_json_columns_written_as_binary_jsonb(tmp_path: Path) -> None:
    url = f"libsql:///{tmp_path / 'mastra.db'}"

    async def scenario() -> None:
        async with open_store(url) as store:
            await store.memory.save_thread(thread={"id": "t", "resource_id": "u"})
        # As @mastra/libsql writes it: metadata through jsonb(?).
        conn = libsql.connect(str(tmp_path / "mastra.db"), isolation_level=None)
        conn.execute(
            'UPDATE "mastra_threads" SET "metadata" = jsonb(?) WHERE "id" = ?',
            ('{"topic": "jsonb ✓", "n": [1, 2]}', "t"),
        )
        kind = conn.execute('SELECT typeof("metadata") FROM "mastra_threads"').fetchone()[0]
        assert kind == "blob"
        conn.close()
        async with open_store(url) as store:
            thread = await store.memory.get_thread_by_id(thread_id="t")
            assert thread is not None
            assert thread.metadata == {"topic": "jsonb ✓", "n": [1, 2]}

    asyncio.run(scenario())


def test_constraint_failures_become_integrity_errors(tmp_path: Path) -> None:
    conn = dbapi.connect(str(tmp_path / "x.db"))
    conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES ('a')")
    with pytest.raises(dbapi.IntegrityError, match="UNIQUE"):
        conn.execute("INSERT INTO t VALUES ('a')")
    with pytest.raises(dbapi.OperationalError, match="no such table"):
        conn.execute("SELECT * FROM missing")
    conn.close()


def test_url_forms() -> None:
    assert split_url("libsql:///a.db") == ("a.db", None, "")
    assert split_url("libsql:////tmp/a.db") == ("/tmp/a.db", None, "")
    assert split_url("libsql://db.example.turso.io?authToken=s3cret") == (
        None,
        "libsql://db.example.turso.io",
        "s3cret",
    )
    with pytest.raises(ValidationError):
        split_url("libsql://")


def test_remote_url_is_accepted_without_io_and_redacted() -> None:
    store = open_store("libsql://db.example.turso.io?authToken=s3cret")
    assert "s3cret" not in repr(store)
    assert "s3cret" not in str(store.describe())


def test_large_integers_round_trip_exactly(tmp_path: Path) -> None:
    # The driver would bind them as floats; nanosecond timestamps need every digit.
    conn = dbapi.connect(str(tmp_path / "x.db"))
    conn.execute("CREATE TABLE t (n INTEGER)")
    big = 1715938200123456790
    conn.execute("INSERT INTO t VALUES (?)", (big,))
    conn.execute("INSERT INTO t VALUES (?)", (-(2**62) - 3,))
    assert [r[0] for r in conn.execute("SELECT n FROM t ORDER BY n").fetchall()] == [
        -(2**62) - 3,
        big,
    ]
    assert conn.execute("SELECT count(*) FROM t WHERE n >= ?", (big,)).fetchone()[0] == 1
    conn.close()
