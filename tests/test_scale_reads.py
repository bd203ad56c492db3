"""The reads of an agent's turn cost what they return, not what the store holds (issue 19).

Statements are recorded as SQLite receives them (the library's prepared fast path and
SQLAlchemy's own execution alike):

- the library's own callers (``Memory.recall``, the working-memory reads, writes, tool calls
  and system message) never count a thread: a count reads every message of it;
- a page with its total is one statement (``sql.totals``): the total rides on the page's rows,
  and a page past the end, which has no row to carry it, counts alone and is still right.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from composite_store import OrderBy, open_store
from composite_store.memory import Memory, WorkingMemoryConfig
from composite_store.records.memory import Message, Thread
from composite_store.sql.memory import SqlMemory
from composite_store.sql.store import SqlStore
from tests.support.statements import Statements, record_engine, record_prepared

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
COUNT = re.compile(r"\bcount\s*\(", re.IGNORECASE)


def _counts(statements: Statements) -> list[str]:
    return [s for s in statements.sql if COUNT.search(s)]


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Statements:
    return record_prepared(monkeypatch)


async def _store(path: Path, statements: Statements) -> SqlStore:
    store = open_store(f"sqlite:///{path}")
    assert isinstance(store, SqlStore)
    await store.init()
    # What does not go through the prepared fast path goes through SQLAlchemy's execution.
    memory = store.memory
    assert isinstance(memory, SqlMemory)
    record_engine(memory.db.engine, statements)
    return store


def _messages(thread: str, n: int) -> list[Message]:
    return [
        Message(
            id=f"{thread}-m{i:03d}",
            thread_id=thread,
            role="user" if i % 2 else "assistant",
            content={"format": 2, "parts": [{"type": "text", "text": f"message {i}"}]},
            created_at=EPOCH + timedelta(seconds=i),
        )
        for i in range(n)
    ]


def test_memory_never_counts_a_thread(tmp_path: Path, statements: Statements) -> None:
    async def go() -> None:
        store = await _store(tmp_path / "memory.db", statements)
        try:
            memory = Memory(store, working_memory=WorkingMemoryConfig())
            await memory.create_thread(thread_id="t", resource_id="u")
            await store.memory.save_messages(messages=_messages("t", 30))
            statements.recording = True
            recalled = await memory.recall(thread_id="t", resource_id="u", last=10)
            await memory.update_working_memory(
                thread_id="t", resource_id="u", working_memory="# Notes\n- likes tea"
            )
            await memory.get_working_memory(thread_id="t", resource_id="u")
            for tool in memory.list_tools():
                await memory.apply_tool_call(
                    tool["name"],
                    {"memory": "# Notes\n- likes coffee"},
                    thread_id="t",
                    resource_id="u",
                )
            await memory.system_message(thread_id="t", resource_id="u")
            await memory.recall(thread_id="t", last=5, format="anthropic")
            statements.recording = False
            assert len(recalled) == 10
            assert statements.selects(), "the spy saw no read: it watches the wrong place"
            assert _counts(statements) == []
        finally:
            await store.close()

    asyncio.run(go())


def test_a_page_and_its_total_are_one_statement(tmp_path: Path, statements: Statements) -> None:
    async def go() -> None:
        store = await _store(tmp_path / "pages.db", statements)
        try:
            memory, workflows = store.memory, store.workflows
            for i in range(7):
                await memory.save_thread(
                    thread=Thread(id=f"t{i}", resource_id="u", created_at=EPOCH + timedelta(i))
                )
            await memory.save_thread(thread=Thread(id="other", resource_id="v"))
            await memory.save_messages(messages=_messages("t0", 9))
            for i in range(5):
                await workflows.persist_workflow_snapshot(
                    workflow_name="wf",
                    run_id=f"run{i}",
                    resource_id="u",
                    snapshot={"status": "success"},
                    created_at=EPOCH + timedelta(i),
                )

            async def one(read: Any) -> Any:
                statements.sql.clear()
                statements.recording = True
                try:
                    return await read
                finally:
                    statements.recording = False

            threads = await one(memory.list_threads(filter={"resource_id": "u"}, per_page=3))
            assert [t.id for t in threads.items] == ["t6", "t5", "t4"]
            assert (threads.total, threads.has_more) == (7, True)
            assert len(statements.sql) == 1

            last = await one(memory.list_threads(filter={"resource_id": "u"}, page=2, per_page=3))
            assert ([t.id for t in last.items], last.total, last.has_more) == (["t0"], 7, False)
            assert len(statements.sql) == 1

            # Past the end: no row carries the total, so it is counted alone.
            past = await one(memory.list_threads(filter={"resource_id": "u"}, page=5, per_page=3))
            assert (past.items, past.total, past.has_more) == ([], 7, False)
            assert len(statements.sql) == 2
            nobody = await one(memory.list_threads(filter={"resource_id": "nobody"}))
            assert (nobody.items, nobody.total) == ([], 0)

            desc = OrderBy(field="createdAt", direction="DESC")
            msgs = await one(memory.list_messages(thread_id="t0", per_page=4, order_by=desc))
            assert [m.id for m in msgs.items] == ["t0-m008", "t0-m007", "t0-m006", "t0-m005"]
            assert (msgs.total, len(statements.sql)) == (9, 1)
            beyond = await one(memory.list_messages(thread_id="t0", page=9, per_page=4))
            assert (beyond.items, beyond.total) == ([], 9)
            empty = await one(memory.list_messages(thread_id="t3"))
            assert (empty.items, empty.total) == ([], 0)

            runs = await one(workflows.list_workflow_runs(resource_id="u", page=0, per_page=2))
            assert [r.run_id for r in runs.items] == ["run4", "run3"]
            assert (runs.total, runs.has_more, len(statements.sql)) == (5, True, 1)
            after = await one(workflows.list_workflow_runs(workflow_name="wf", page=3, per_page=2))
            assert (after.items, after.total) == ([], 5)
            every = await one(workflows.list_workflow_runs(workflow_name="wf"))
            assert (len(every.items), every.total, len(statements.sql)) == (5, 5, 1)
        finally:
            await store.close()

    asyncio.run(go())
