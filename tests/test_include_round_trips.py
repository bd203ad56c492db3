"""``list_messages`` with include windows costs one statement on PostgreSQL (W2i): the page,
its total in it (``sql.totals``), and every window, each of which also carries the resourceId
of the target's thread, so a call scoped by ``resource_id`` checks the owner without reading
the thread (``SqlMemory._listing``). No BEGIN/COMMIT goes around it either: the call is one
round trip. Past ``WINDOWS_PER_STATEMENT`` windows, the windows are read that many at a time.
Where the dialect reads them apart (``one_statement_listing`` off: SQLite, where no round trip
is saved, and MariaDB, which runs the one statement slower than the parts apart), the page
and each window are a statement each: on the server with no transaction
around them, on SQLite the windows in one (one snapshot).

Statements and transactions are recorded as ``tests.support.statements`` records them.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from composite_store import OrderBy, open_store
from composite_store.records.memory import Message, Thread
from composite_store.sql.memory import WINDOWS_PER_STATEMENT
from composite_store.sql.store import SqlStore
from composite_store.types import Include
from tests.support.sql_stores import sql_store_url
from tests.support.statements import (
    Statements,
    record_engine,
    record_prepared,
    record_transactions,
)

BACKENDS = ["sqlite", "postgres", "mariadb"]
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
NEWEST = OrderBy(field="createdAt", direction="DESC")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Statements:
    return record_prepared(monkeypatch)


def _messages(thread: str, resource: str, n: int) -> list[Message]:
    return [
        Message(
            id=f"{thread}-m{i:02d}", thread_id=thread, resource_id=resource, role="user",
            content={"format": 2, "parts": [{"type": "text", "text": str(i)}]},
            created_at=EPOCH + timedelta(seconds=i),
        )
        for i in range(n)
    ]


async def _filled(url: str, sent: Statements) -> SqlStore:
    """A store with threads ``mine`` (resource r), ``theirs`` (resource other), 30 messages
    each, and ``gone-m00`` .. ``gone-m04``, messages whose thread row was deleted (orphans)."""
    store = open_store(url)
    assert isinstance(store, SqlStore)
    await store.init()
    memory = store.memory
    await memory.dangerously_clear_all()
    for thread, resource, n in (("mine", "r", 30), ("theirs", "other", 30), ("gone", "r", 5)):
        await memory.save_thread(thread=Thread(id=thread, resource_id=resource))
        await memory.save_messages(messages=_messages(thread, resource, n))
    db = store.database
    threads = db.engine.dialect.identifier_preparer.format_table(db.tables["threads"])
    await db.run(
        lambda conn: conn.execute(sa.text(f"DELETE FROM {threads} WHERE id = 'gone'")),
        write=True,
    )
    record_engine(db.engine, sent)
    record_transactions(db, sent)
    return store


def _ids(thread: str, numbers: range) -> list[str]:
    return [f"{thread}-m{i:02d}" for i in numbers]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_page_and_its_include_windows_are_one_statement(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, sent: Statements
) -> None:
    url = sql_store_url(backend, request, tmp_path)  # outside the event loop

    async def go() -> None:
        store = await _filled(url, sent)
        memory = store.memory
        try:
            # The peer benchmark's W2i call: the page and its total, one window, scoped.
            sent.recording = True
            page = await memory.list_messages(
                thread_id="mine", resource_id="r", per_page=20, page=0, order_by=NEWEST,
                include=[Include(id="mine-m05", thread_id="mine", with_previous_messages=2,
                                 with_next_messages=2)],
            )
            sent.recording = False
            assert [m.id for m in page.items] == _ids("mine", range(29, 9, -1)) + _ids(
                "mine", range(7, 2, -1)
            )
            assert page.total == 30
            # One statement; where the dialect reads them apart (``one_statement_listing``
            # off), the page, then one a window.
            together = store.database.dialect.one_statement_listing
            assert len(sent.sql) == (1 if together else 2), "\n\n".join(s[:300] for s in sent.sql)
            if backend != "sqlite":
                assert sent.transactions == 0, "BEGIN and COMMIT: two more round trips"

            # Every window in one statement, whatever each window holds or whoever owns it.
            includes = [
                Include(id="theirs-m05", with_previous_messages=2, with_next_messages=2),
                Include(id="mine-m10", with_previous_messages=1, with_next_messages=0),
                Include(id="gone-m02", with_previous_messages=1, with_next_messages=1),
                Include(id="missing", with_previous_messages=1, with_next_messages=1),
                Include(id="mine-m20", thread_id="theirs", with_next_messages=1),
                Include(id="mine-m25", with_previous_messages=0, with_next_messages=2),
            ]
            sent.reset()
            sent.recording = True
            scoped = await memory.list_messages(
                thread_id="mine", resource_id="r", per_page=0, include=includes
            )
            sent.recording = False
            # per_page=0: no page, only the windows, in one statement (one snapshot).
            assert len(sent.selects()) == (1 if together else len(includes)), sent.sql
            if backend != "sqlite":
                assert sent.sql == sent.selects()
                assert sent.transactions == 0
            # Another resource's window, the orphans' (no thread row: no owner) and a target
            # outside its include's thread_id are dropped.
            assert [m.id for m in scoped.items] == _ids("mine", range(9, 11)) + _ids(
                "mine", range(25, 28)
            )

            unscoped = await memory.list_messages(thread_id="mine", per_page=0, include=includes)
            assert sorted(m.id for m in unscoped.items) == sorted(
                _ids("gone", range(1, 4)) + _ids("mine", range(9, 11))
                + _ids("mine", range(25, 28)) + _ids("theirs", range(3, 8))
            )

            # With a page: still one statement, the page's rows in its order.
            sent.reset()
            sent.recording = True
            paged = await memory.list_messages(
                thread_id="mine", resource_id="r", per_page=3, page=1, order_by=NEWEST,
                include=includes,
            )
            sent.recording = False
            assert len(sent.selects()) == (1 if together else 1 + len(includes)), sent.sql
            assert [m.id for m in paged.items] == _ids("mine", range(27, 23, -1)) + _ids(
                "mine", range(10, 8, -1)
            )
            assert paged.total == 30
            assert paged.has_more

            # Past WINDOWS_PER_STATEMENT windows: the page, then the windows that many at a time.
            many = [
                Include(id=f"mine-m{i:02d}", with_previous_messages=1) for i in range(1, 20, 2)
            ]
            assert WINDOWS_PER_STATEMENT < len(many) <= 2 * WINDOWS_PER_STATEMENT
            sent.reset()
            sent.recording = True
            wide = await memory.list_messages(
                thread_id="mine", per_page=2, order_by=NEWEST, include=many, include_total=False
            )
            sent.recording = False
            assert len(sent.selects()) == (3 if together else 1 + len(many)), sent.sql
            assert [m.id for m in wide.items] == _ids("mine", range(29, 27, -1)) + _ids(
                "mine", range(19, -1, -1)
            )
        finally:
            await store.close()

    asyncio.run(go())
