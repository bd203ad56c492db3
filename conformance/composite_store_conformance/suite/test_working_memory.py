"""Working memory (``composite_store.memory.Memory``) on the backend: DESIGN.md section 4.

Scopes (resource and thread, never seeing each other), template mode (replace, the empty-template
guard), schema mode (deep merge, ``null`` deletes, arrays replace, for a pydantic model and a
JSON Schema), seeds from thread metadata, read-only, and concurrent updates of one key from two
``Memory`` objects. The stored form is read past ``Memory`` with the memory domain's own reads.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from composite_store import (
    ConflictError,
    NotFoundError,
    Store,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store.memory import DEFAULT_TEMPLATE, TOOL_NAME, Memory, WorkingMemoryConfig
from composite_store_conformance.base import Suite

__all__ = ["WorkingMemorySuite"]


class Address(BaseModel):
    city: str | None = None
    zip: str | None = None


class Profile(BaseModel):
    name: str | None = None
    address: Address | None = None
    tags: list[str] | None = None


PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
SCHEMAS: dict[str, Any] = {"pydantic": Profile, "json_schema": PROFILE_SCHEMA}
SCOPES = ("resource", "thread")
FILLED = "# User Profile\n- **Name**: Ana\n- **Location**: Lisbon\n"


def wm(scope: str = "resource", **kw: Any) -> WorkingMemoryConfig:
    return WorkingMemoryConfig(scope=scope, **kw)  # type: ignore[arg-type]


async def stored_raw(store: Store, *, resource: str = "u1", thread: str = "t1") -> tuple[Any, Any]:
    """(resource workingMemory, thread metadata workingMemory), read past ``Memory``."""
    res = await store.memory.get_resource_by_id(resource_id=resource)
    thr = await store.memory.get_thread_by_id(thread_id=thread)
    return (
        res.working_memory if res else None,
        (thr.metadata or {}).get("workingMemory") if thr else None,
    )


class WorkingMemorySuite(Suite):
    """``Memory`` over the backend's memory domain (DESIGN.md sections 4 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("memory",)

    # -- scopes ----------------------------------------------------------------------------------

    async def test_resource_scope_is_shared_by_the_threads_of_a_resource(
        self, cs_store: Store
    ) -> None:
        memory = Memory(cs_store, working_memory=WorkingMemoryConfig())
        assert memory.config.scope == "resource"
        for tid, rid in (("t1", "u1"), ("t2", "u1"), ("t3", "u2")):
            await memory.create_thread(thread_id=tid, resource_id=rid)
        await memory.update_working_memory(thread_id="t1", resource_id="u1", working_memory=FILLED)
        assert await memory.get_working_memory(thread_id="t2", resource_id="u1") == FILLED
        assert await memory.get_working_memory(thread_id="t3", resource_id="u2") is None
        assert await stored_raw(cs_store) == (FILLED, None)

    async def test_thread_scope_is_isolated_per_thread(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm("thread"))
        await memory.create_thread(thread_id="t1", resource_id="u1", title="kept")
        await memory.create_thread(thread_id="t2", resource_id="u1")
        await memory.update_working_memory(thread_id="t1", working_memory=FILLED)
        assert await memory.get_working_memory(thread_id="t1") == FILLED
        assert await memory.get_working_memory(thread_id="t2", resource_id="u1") is None
        assert await stored_raw(cs_store) == (None, FILLED)
        thread = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert thread is not None and thread.title == "kept" and thread.resource_id == "u1"

    async def test_the_two_scopes_never_see_each_other(self, cs_store: Store) -> None:
        by_resource = Memory(cs_store, working_memory=wm("resource"))
        by_thread = Memory(cs_store, working_memory=wm("thread"))
        await by_resource.create_thread(thread_id="t1", resource_id="u1")
        await by_resource.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory="resource notes"
        )
        assert await by_thread.get_working_memory(thread_id="t1", resource_id="u1") is None
        await by_thread.update_working_memory(thread_id="t1", working_memory="thread notes")
        assert await by_resource.get_working_memory(thread_id="t1", resource_id="u1") == (
            "resource notes"
        )
        assert await by_thread.get_working_memory(thread_id="t1") == "thread notes"

    async def test_resource_scope_never_falls_back_to_the_owner(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm("resource"))
        await memory.create_thread(thread_id="t1", resource_id="u1")
        with pytest.raises(ValidationError, match="no resource_id was given"):
            await memory.update_working_memory(thread_id="t1", working_memory=FILLED)
        assert await stored_raw(cs_store) == (None, None)

    # -- templates -------------------------------------------------------------------------------

    async def test_template_updates_replace_the_whole_text(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm())
        await memory.update_working_memory(thread_id="t1", resource_id="u1", working_memory=FILLED)
        result = await memory.apply_tool_call(
            TOOL_NAME,
            {"memory": "# User Profile\n- **Name**: Bo\n"},
            thread_id="t1",
            resource_id="u1",
        )
        assert result == {"success": True, "message": "Working memory updated."}
        assert await memory.get_working_memory(thread_id="t1", resource_id="u1") == (
            "# User Profile\n- **Name**: Bo\n"
        )
        assert (await stored_raw(cs_store))[0] == "# User Profile\n- **Name**: Bo\n"

    @pytest.mark.parametrize("scope", SCOPES)
    async def test_empty_template_never_overwrites_memory(
        self, cs_store: Store, scope: str
    ) -> None:
        memory = Memory(cs_store, working_memory=wm(scope))
        await memory.create_thread(thread_id="t1", resource_id="u1")
        # With nothing stored yet, the bare template is an acceptable first write.
        await memory.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory=DEFAULT_TEMPLATE
        )
        await memory.update_working_memory(thread_id="t1", resource_id="u1", working_memory=FILLED)
        reflowed = "  " + DEFAULT_TEMPLATE.replace("\n", "\n\n   ") + "\n\t"
        for empty in (reflowed, DEFAULT_TEMPLATE, "", "  \n"):
            result = await memory.apply_tool_call(
                TOOL_NAME, {"memory": empty}, thread_id="t1", resource_id="u1"
            )
            assert result["success"] is False
            assert "empty template" in result["message"]
            assert "nothing was written" in result["message"]
            with pytest.raises(ValidationError, match="refusing to replace the stored working"):
                await memory.update_working_memory(
                    thread_id="t1", resource_id="u1", working_memory=empty
                )
        assert await memory.get_working_memory(thread_id="t1", resource_id="u1") == FILLED
        raw = await stored_raw(cs_store)
        assert raw == ((FILLED, None) if scope == "resource" else (None, FILLED))

    # -- schemas ---------------------------------------------------------------------------------

    @pytest.mark.parametrize("kind", sorted(SCHEMAS))
    @pytest.mark.parametrize("scope", SCOPES)
    async def test_schema_updates_merge(self, cs_store: Store, kind: str, scope: str) -> None:
        memory = Memory(cs_store, working_memory=wm(scope, schema=SCHEMAS[kind]))
        await memory.create_thread(thread_id="t1", resource_id="u1")

        async def call(patch: Any) -> dict[str, Any]:
            result = await memory.apply_tool_call(
                TOOL_NAME, {"memory": patch}, thread_id="t1", resource_id="u1"
            )
            assert result["success"] is True, result
            got = await memory.get_working_memory(thread_id="t1", resource_id="u1")
            assert isinstance(got, dict)
            return got

        first = {"name": "Ana", "tags": ["a", "b"]}
        assert await call(first) == first
        # Nested objects merge; nulls inside a new object are not stored.
        assert await call({"address": {"city": "Lisbon", "zip": None}}) == {
            "name": "Ana", "tags": ["a", "b"], "address": {"city": "Lisbon"},
        }
        assert await call({"address": {"zip": "1000"}}) == {
            "name": "Ana", "tags": ["a", "b"], "address": {"city": "Lisbon", "zip": "1000"},
        }
        # Arrays replace (never concatenate); null deletes; a JSON string is accepted too.
        assert await call(json.dumps({"tags": ["c"], "name": None})) == {
            "tags": ["c"], "address": {"city": "Lisbon", "zip": "1000"},
        }
        assert await memory.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory={"address": {"city": None}}
        ) == {"tags": ["c"], "address": {"zip": "1000"}}
        raw = (await stored_raw(cs_store))[0 if scope == "resource" else 1]
        assert isinstance(raw, str)
        assert json.loads(raw) == {"tags": ["c"], "address": {"zip": "1000"}}
        other = (await stored_raw(cs_store))[1 if scope == "resource" else 0]
        assert other is None, "one scope wrote into the other"

    async def test_invalid_schema_update_changes_nothing(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm(schema=Profile))
        await memory.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory={"name": "Ana"}
        )
        result = await memory.apply_tool_call(
            TOOL_NAME, {"memory": {"name": 5}}, thread_id="t1", resource_id="u1"
        )
        assert result["success"] is False
        assert await memory.get_working_memory(thread_id="t1", resource_id="u1") == {"name": "Ana"}

    # -- seeds -----------------------------------------------------------------------------------

    async def test_thread_metadata_seeds_resource_memory(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm("resource"))
        thread = await memory.create_thread(
            thread_id="t1", resource_id="u1", title="Hi", metadata={"workingMemory": FILLED, "x": 1}
        )
        assert thread.title == "Hi" and thread.metadata == {"workingMemory": FILLED, "x": 1}
        assert await stored_raw(cs_store) == (FILLED, FILLED)
        await memory.create_thread(
            thread_id="t2", resource_id="u1", metadata={"workingMemory": DEFAULT_TEMPLATE}
        )
        assert await memory.get_working_memory(thread_id="t2", resource_id="u1") == FILLED

    async def test_thread_metadata_seeds_thread_memory(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm("thread", schema=Profile))
        await memory.create_thread(
            thread_id="t1", resource_id="u1", metadata={"workingMemory": {"name": "Ana"}}
        )
        assert await memory.get_working_memory(thread_id="t1") == {"name": "Ana"}
        assert await stored_raw(cs_store) == (None, '{"name":"Ana"}')

    # -- read-only -------------------------------------------------------------------------------

    async def test_read_only_memory_is_shown_but_never_written(self, cs_store: Store) -> None:
        writer = Memory(cs_store, working_memory=wm())
        await writer.update_working_memory(thread_id="t1", resource_id="u1", working_memory=FILLED)
        reader = Memory(cs_store, working_memory=wm(), read_only=True)
        assert reader.list_tools() == []
        text = await reader.system_message(thread_id="t1", resource_id="u1")
        assert "READ-ONLY" in text and "- **Name**: Ana" in text and TOOL_NAME not in text
        result = await reader.apply_tool_call(
            TOOL_NAME, {"memory": "# replaced"}, thread_id="t1", resource_id="u1"
        )
        assert result["success"] is False and "read-only" in result["message"]
        with pytest.raises(UnsupportedOperationError, match="read-only"):
            await reader.update_working_memory(
                thread_id="t1", resource_id="u1", working_memory="# replaced"
            )
        assert await stored_raw(cs_store) == (FILLED, None)

    # -- concurrency -----------------------------------------------------------------------------

    @pytest.mark.parametrize("scope", SCOPES)
    async def test_two_memories_updating_one_key_lose_nothing(
        self, cs_store: Store, scope: str
    ) -> None:
        config = wm(scope, schema={"type": "object"})
        first, second = Memory(cs_store, working_memory=config), Memory(
            cs_store, working_memory=config
        )
        await first.create_thread(thread_id="t1", resource_id="u1")
        results = await asyncio.gather(
            *(
                (first if i % 2 else second).apply_tool_call(
                    TOOL_NAME, {"memory": {"seen": {f"k{i}": i}}}, thread_id="t1", resource_id="u1"
                )
                for i in range(24)
            )
        )
        assert all(r["success"] for r in results), results
        got = await second.get_working_memory(thread_id="t1", resource_id="u1")
        assert got == {"seen": {f"k{i}": i for i in range(24)}}

    @pytest.mark.cs_requires("compare_and_set")
    async def test_a_write_from_elsewhere_is_merged_not_lost(self, cs_store: Store) -> None:
        memory = Memory(cs_store, working_memory=wm(schema={"type": "object"}))
        await memory.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory={"mine": 0}
        )
        # Another process writes behind Memory's back: the next merge must start from it.
        await cs_store.memory.update_resource(
            resource_id="u1", working_memory=json.dumps({"mine": 0, "theirs": 1})
        )
        await memory.update_working_memory(
            thread_id="t1", resource_id="u1", working_memory={"mine": 2}
        )
        assert await memory.get_working_memory(thread_id="t1", resource_id="u1") == {
            "mine": 2, "theirs": 1,
        }
        with pytest.raises(ConflictError):
            await cs_store.memory.update_resource(
                resource_id="u1", working_memory="{}", expected_working_memory="{}"
            )

    # -- update_thread and state signals -------------------------------------------------------

    async def test_a_snapshot_is_emitted_once_and_again_when_it_left_the_window(
        self, cs_store: Store
    ) -> None:
        memory = Memory(cs_store, working_memory=wm(use_state_signals=True))
        await memory.create_thread(thread_id="t1", resource_id="u1")
        first = await memory.state_signal(thread_id="t1", resource_id="u1")
        assert first is not None and first.kind == "state" and first.state_id == "working-memory"
        assert first.mode == "snapshot" and first.scope == "resource"
        assert first.working_memory is None and "No working memory" not in first.contents
        assert first.tracking.version == 1 and first.id == "state:working-memory:1"
        window = [first.to_message(thread_id="t1", resource_id="u1")]
        # Unchanged and still in the window: nothing to send.
        unchanged = await memory.state_signal(
            thread_id="t1", resource_id="u1", context_window=window
        )
        assert unchanged is None
        # The tracking lives on the thread, so another process (Memory) dedups too.
        other = Memory(cs_store, working_memory=wm(use_state_signals=True))
        plain = [m.model_dump(by_alias=True, mode="json") for m in window]
        assert (
            await other.state_signal(thread_id="t1", resource_id="u1", context_window=plain)
            is None
        )
        # Slid out of the window: the same snapshot again.
        again = await memory.state_signal(thread_id="t1", resource_id="u1", context_window=[])
        assert again is not None and again.cache_key == first.cache_key
        assert again.tracking.version == 2
        # A changed memory: a new snapshot, whatever the window holds.
        await memory.update_working_memory(thread_id="t1", resource_id="u1", working_memory=FILLED)
        changed = await memory.state_signal(
            thread_id="t1", resource_id="u1", context_window=[again.to_message(thread_id="t1")]
        )
        assert changed is not None and changed.cache_key != first.cache_key
        assert changed.working_memory == FILLED and "- **Name**: Ana" in changed.contents
        thread = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert thread is not None and thread.metadata is not None
        tracking = thread.metadata["stateSignals"]["working-memory"]
        assert tracking["currentCacheKey"] == changed.cache_key and tracking["version"] == 3

    async def test_update_thread_with_working_memory_reaches_the_resource(
        self, cs_store: Store
    ) -> None:
        """Mastra's updateThread: in resource scope, metadata.workingMemory is the resource's."""
        memory = Memory(cs_store, working_memory=wm("resource"))
        await memory.create_thread(thread_id="t1", resource_id="u1", title="Hi")
        thread = await memory.update_thread(
            thread_id="t1", title="Trip", metadata={"workingMemory": FILLED, "x": 1}
        )
        assert thread.title == "Trip" and thread.metadata == {"workingMemory": FILLED, "x": 1}
        assert (await stored_raw(cs_store))[0] == FILLED
        await memory.create_thread(thread_id="t2", resource_id="u1")
        assert await memory.get_working_memory(thread_id="t2", resource_id="u1") == FILLED
        # The empty template never overwrites it; a metadata-only update leaves it alone.
        await memory.update_thread(thread_id="t1", metadata={"workingMemory": DEFAULT_TEMPLATE})
        await memory.update_thread(thread_id="t1", metadata={"y": 2})
        assert (await stored_raw(cs_store))[0] == FILLED
        untouched = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert untouched is not None and untouched.title == "Trip"
        with pytest.raises(NotFoundError):
            await memory.update_thread(thread_id="nope", title="x")
