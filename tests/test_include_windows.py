"""``list_messages(include=...)`` on the relational backend reads every include window in one
transaction (``SqlMemory._include_windows``), with the results of one window at a time."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from composite_store import open_store
from composite_store.domains.memory import MemoryDomain
from composite_store.records.memory import Message, Thread
from composite_store.sql.memory import SqlMemory
from composite_store.types import Include

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
INCLUDES = [
    {"id": "a-m07", "with_previous_messages": 2, "with_next_messages": 2},
    {"id": "a-m08", "with_previous_messages": 3, "with_next_messages": 0},  # overlaps the first
    {"id": "missing", "with_previous_messages": 1, "with_next_messages": 1},
    {"id": "b-m03", "with_previous_messages": 0, "with_next_messages": 5},  # another thread
]


def _messages(thread: str) -> list[Message]:
    return [
        Message(
            id=f"{thread}-m{i:02d}", thread_id=thread, role="user",
            content={"format": 2, "parts": [{"type": "text", "text": str(i)}]},
            created_at=EPOCH + timedelta(seconds=i),
        )
        for i in range(12)
    ]


def test_every_include_window_is_read_in_one_transaction(tmp_path: Path) -> None:
    async def go() -> None:
        store = open_store(f"sqlite:///{tmp_path}/windows.db")
        await store.init()
        try:
            memory = store.memory
            assert isinstance(memory, SqlMemory)
            for thread in ("a", "b"):
                await memory.save_thread(thread=Thread(id=thread, resource_id="r"))
                await memory.save_messages(messages=_messages(thread))
            runs = 0
            run = memory.db.run

            async def counted(fn: Any, **options: Any) -> Any:
                nonlocal runs
                runs += 1
                return await run(fn, **options)

            memory.db.run = counted  # type: ignore[method-assign]
            page = await memory.list_messages(
                thread_id="a", per_page=3, include=INCLUDES, include_total=False
            )
            assert runs == 2  # the page, then every window
            runs = 0
            only = await memory.list_messages(thread_id="a", per_page=0, include=INCLUDES)
            assert runs == 1

            # The same windows and owners as reading one window, then its thread, at a time.
            includes = [Include.model_validate(i) for i in INCLUDES]
            one_by_one = await MemoryDomain._include_windows(memory, includes, owners=True)
            together = await memory._include_windows(includes, owners=True)
            assert [[m.id for m in w] for w in together.windows] == [
                [m.id for m in w] for w in one_by_one.windows
            ]
            assert together.owners == one_by_one.owners == {"a": "r", "b": "r"}
            windows = {f"a-m{i:02d}" for i in range(5, 10)} | {f"b-m{i:02d}" for i in range(3, 9)}
            # Deduplicated, merged by (createdAt, id): "a-m05" and "b-m05" share a second.
            assert [m.id for m in only.items] == sorted(windows, key=lambda m: (m[-2:], m))
            assert [m.id for m in page.items] == sorted(
                windows | {"a-m00", "a-m01", "a-m02"}, key=lambda m: (m[-2:], m)
            )
        finally:
            await store.close()

    asyncio.run(go())
