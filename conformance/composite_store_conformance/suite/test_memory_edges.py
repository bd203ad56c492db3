"""Memory domain edges: chunk boundaries, untouched fields, clones, ties, leftovers, Mastra's cases.

Batch sizes are read from the domain's declared ``batch_limits`` (``Domain.batch_limits``), so a
call always crosses every chunk the backend splits it into. What stays behind after a delete is
read past the domain's code with the raw hooks (``read_raw``, ``count_records``), skipped with
the reason where the backend has none.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import Include, OrderBy, Store
from composite_store.domains.base import Domain
from composite_store.domains.hooks import Inspectable, Transferable
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import at
from composite_store_conformance.suite.test_memory import ids, message, seed, thread

__all__ = ["MemoryEdgesSuite", "batch_size"]

#: The size a batch test uses on a backend that declares no chunk: past the usual 100.
UNDECLARED_BATCH = 150

#: Values that look like JSON and must come back as the strings they are.
JSON_LOOKING = ['{"a": 1}', "[1, 2]", "null", "123", "true", '"quoted"', "{}", ""]


def batch_size(domain: Domain) -> int:
    """One and a half times the domain's largest declared chunk (``batch_limits``): a batch of
    this size is split at least once, with a part-filled last chunk."""
    largest = max(domain.batch_limits.values(), default=UNDECLARED_BATCH * 2 // 3)
    return largest + largest // 2


async def _raw(store: Store, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    memory = store.memory
    if not isinstance(memory, Inspectable):
        pytest.skip(f"{store.backend} is not Inspectable (no read_raw): leftovers cannot be seen")
    return await memory.read_raw(table, key)


async def _raw_message(store: Store, mid: str, tid: str = "t1") -> dict[str, Any] | None:
    """Message ``mid`` of thread ``tid`` as stored (the thread named, so that a backend that
    finds messages through an id pointer looks where the thread keeps them)."""
    return await _raw(store, "messages", {"id": mid, "thread_id": tid})


async def _count(store: Store, table: str) -> int:
    memory = store.memory
    if not isinstance(memory, Transferable):
        pytest.skip(f"{store.backend} is not Transferable (no count_records): cannot count")
    return await memory.count_records(table=table)


class MemoryEdgesSuite(Suite):
    """The memory rules where a plausible bug hides (DESIGN.md sections 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("memory",)

    # -- chunk boundaries ------------------------------------------------------------------------

    async def test_batches_cross_every_declared_chunk(self, cs_store: Store) -> None:
        n = batch_size(cs_store.memory)
        await cs_store.memory.save_thread(thread=thread())
        saved = await cs_store.memory.save_messages(
            messages=[message(f"m{i:05d}", "t1", i / 1000) for i in range(n)]
        )
        assert len(saved) == n
        every = [f"m{i:05d}" for i in range(n)]
        assert ids(await cs_store.memory.list_messages_by_id(message_ids=every)) == every
        page = await cs_store.memory.list_messages(thread_id="t1", per_page=False)
        assert page.total == n and ids(page.items) == every
        # Delete all but the last one, in one call: every chunk must go.
        await cs_store.memory.delete_messages(message_ids=every[:-1])
        assert ids(await cs_store.memory.list_messages_by_id(message_ids=every)) == every[-1:]
        assert (await cs_store.memory.list_messages(thread_id="t1")).total == 1

    async def test_update_messages_crosses_every_declared_chunk(self, cs_store: Store) -> None:
        n = batch_size(cs_store.memory)
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[message(f"m{i:05d}", "t1", i / 1000) for i in range(n)]
        )
        updated = await cs_store.memory.update_messages(
            messages=[{"id": f"m{i:05d}", "role": "assistant"} for i in range(n)]
        )
        assert len(updated) == n
        page = await cs_store.memory.list_messages(thread_id="t1", per_page=False)
        assert {m.role for m in page.items} == {"assistant"}

    # -- untouched stays untouched ---------------------------------------------------------------

    async def test_update_thread_metadata_only_keeps_everything_else(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_thread(thread=thread(title="keep me", metadata={"a": 1}))
        updated = await cs_store.memory.update_thread(id="t1", metadata={"b": 2})
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        for found in (updated, got):
            assert found is not None
            assert found.title == "keep me", "a metadata-only update changed the title"
            assert found.resource_id == "u1" and found.created_at == at(0)
            assert found.metadata == {"a": 1, "b": 2}

    async def test_update_thread_keeps_the_messages(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        await cs_store.memory.update_thread(id="t1", title="renamed", metadata={"x": 1})
        page = await cs_store.memory.list_messages(thread_id="t1")
        assert ids(page.items) == ["m00", "m01", "m02"]
        assert {m.resource_id for m in page.items} == {"u1"}

    async def test_update_resource_working_memory_only_keeps_everything_else(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_resource(
            resource={"id": "u1", "workingMemory": "old", "metadata": {"a": {"b": 1}},
                      "createdAt": at(0), "updatedAt": at(0)}
        )
        updated = await cs_store.memory.update_resource(resource_id="u1", working_memory="new")
        got = await cs_store.memory.get_resource_by_id(resource_id="u1")
        for found in (updated, got):
            assert found is not None
            assert found.metadata == {"a": {"b": 1}} and found.created_at == at(0)
            assert found.working_memory == "new"
        # Neither given: nothing changes but updatedAt.
        same = await cs_store.memory.update_resource(resource_id="u1")
        assert same.working_memory == "new" and same.metadata == {"a": {"b": 1}}

    async def test_update_messages_content_only_keeps_everything_else(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_thread(thread=thread())
        original = message("m", seconds=3, role="assistant", type="v3", resource_id="u1")
        await cs_store.memory.save_messages(messages=[original])
        await cs_store.memory.update_messages(
            messages=[{"id": "m", "content": {"metadata": {"k": 1}}}]
        )
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["m"])
        assert (got.role, got.type, got.thread_id, got.resource_id, got.created_at) == (
            "assistant", "v3", "t1", "u1", at(3)
        )
        assert got.content.parts == original.content.parts
        # A role-only update keeps the content whole.
        await cs_store.memory.update_messages(messages=[{"id": "m", "role": "user"}])
        [again] = await cs_store.memory.list_messages_by_id(message_ids=["m"])
        assert again.content == got.content and again.role == "user"

    async def test_update_messages_of_several_messages_and_threads(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        for tid in ("t2", "t3"):
            await cs_store.memory.save_thread(thread=thread(tid))
        await cs_store.memory.save_messages(messages=[message("x0", "t3", 9)])
        await cs_store.memory.update_messages(
            messages=[
                {"id": "m00", "threadId": "t2"},
                {"id": "m01", "content": {"content": "edited"}},
                {"id": "x0", "threadId": "t2"},
            ]
        )
        assert ids((await cs_store.memory.list_messages(thread_id="t1")).items) == ["m01", "m02"]
        assert ids((await cs_store.memory.list_messages(thread_id="t2")).items) == ["m00", "x0"]
        assert (await cs_store.memory.list_messages(thread_id="t3")).total == 0
        [edited] = await cs_store.memory.list_messages_by_id(message_ids=["m01"])
        assert edited.content.content == "edited" and edited.thread_id == "t1"
        for tid in ("t1", "t2", "t3"):
            got = await cs_store.memory.get_thread_by_id(thread_id=tid)
            assert got is not None and got.updated_at > at(0), f"{tid} not bumped by the move"

    # -- clone -------------------------------------------------------------------------------------

    async def test_clone_gives_the_new_owner_its_messages(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        result = await cs_store.memory.clone_thread(
            source_thread_id="t1", new_thread_id="c1", resource_id="u9", metadata={"k": "v"}
        )
        assert result.thread.title == "Clone of title t1", "the default clone title"
        assert result.thread.resource_id == "u9"
        assert result.thread.metadata is not None and result.thread.metadata["k"] == "v"
        clone = result.thread.metadata["clone"]
        assert clone["sourceThreadId"] == "t1" and clone["lastMessageId"] == "m02"
        stored = await cs_store.memory.list_messages(thread_id="c1")
        assert {m.resource_id for m in stored.items} == {"u9"}, "copies kept the source owner"
        assert {m.thread_id for m in stored.items} == {"c1"}
        assert [m.created_at for m in stored.items] == [at(0), at(1), at(2)]
        assert [(m.role, m.type, m.content) for m in stored.items] == [
            (m.role, m.type, m.content) for m in result.messages
        ]
        got = await cs_store.memory.get_thread_by_id(thread_id="c1")
        assert got is not None and got.resource_id == "u9" and got.title == "Clone of title t1"
        # The source is untouched.
        source = await cs_store.memory.list_messages(thread_id="t1")
        assert ids(source.items) == ["m00", "m01", "m02"]
        assert {m.resource_id for m in source.items} == {"u1"}
        original = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert original is not None and original.metadata is None

    async def test_clone_of_an_untitled_thread_and_of_nothing(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread(title=None))
        await cs_store.memory.save_messages(messages=[message("m")])
        untitled = await cs_store.memory.clone_thread(source_thread_id="t1", message_limit=0)
        assert untitled.thread.title in ("", None) and untitled.messages == []
        assert untitled.message_id_map == {}
        assert untitled.thread.metadata is not None
        assert "lastMessageId" not in untitled.thread.metadata["clone"]
        assert (await cs_store.memory.list_messages(thread_id=untitled.thread.id)).total == 0
        titled = await cs_store.memory.clone_thread(source_thread_id="t1", title="mine")
        assert titled.thread.title == "mine" and titled.thread.id not in ("t1", untitled.thread.id)

    # -- include windows over equal timestamps -------------------------------------------------

    async def test_include_windows_over_equal_timestamps(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        # m00..m09 all at one instant: the order (and so each neighbour) is by id.
        await cs_store.memory.save_messages(messages=[message(f"m{i:02d}") for i in range(10)])
        page = await cs_store.memory.list_messages(
            thread_id="t1",
            per_page=0,
            include=[Include(id="m05", with_previous_messages=2, with_next_messages=2)],
        )
        assert ids(page.items) == ["m03", "m04", "m05", "m06", "m07"]

    async def test_include_windows_over_partly_equal_timestamps(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        times = {"a": 0, "b": 1, "c": 1, "d": 1, "e": 2}
        await cs_store.memory.save_messages(
            messages=[message(mid, "t1", s) for mid, s in times.items()]
        )
        for target, expected in (("c", ["b", "c", "d"]), ("b", ["a", "b", "c"]),
                                 ("d", ["c", "d", "e"])):
            page = await cs_store.memory.list_messages(
                thread_id="t1",
                per_page=0,
                include=[{"id": target, "withPreviousMessages": 1, "withNextMessages": 1}],
            )
            assert ids(page.items) == expected, f"neighbours of {target}"

    # -- nothing left behind -----------------------------------------------------------------------

    async def test_delete_thread_leaves_nothing_behind(self, cs_store: Store) -> None:
        await seed(cs_store, 4)
        await seed(cs_store, 1, "t2", prefix="o")
        await cs_store.memory.delete_thread(thread_id="t1")
        for mid in ("m00", "m01", "m02", "m03"):
            assert await _raw_message(cs_store, mid) is None, f"{mid} outlived its thread"
        assert await _count(cs_store, "threads") == 1
        assert await _count(cs_store, "messages") == 1
        assert await _raw(cs_store, "threads", {"id": "t1"}) is None

    async def test_delete_messages_leaves_nothing_behind(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        await cs_store.memory.delete_messages(message_ids=["m00", "m02"])
        assert await _raw_message(cs_store, "m00") is None
        assert await _raw_message(cs_store, "m02") is None
        assert await _raw_message(cs_store, "m01") is not None
        assert await _count(cs_store, "messages") == 1

    async def test_moved_message_leaves_nothing_in_its_old_thread(self, cs_store: Store) -> None:
        await seed(cs_store, 2)
        await cs_store.memory.save_thread(thread=thread("t2"))
        await cs_store.memory.save_messages(messages=[message("m00", "t2", 0)])
        await cs_store.memory.delete_thread(thread_id="t1")
        [kept] = await cs_store.memory.list_messages_by_id(message_ids=["m00", "m01"])
        assert kept.id == "m00" and kept.thread_id == "t2"
        assert await _raw_message(cs_store, "m00", "t1") is None, "the move left a copy behind"
        assert await _raw_message(cs_store, "m00", "t2") is not None
        assert await _count(cs_store, "messages") == 1

    # -- JSON-looking strings ----------------------------------------------------------------------

    async def test_json_looking_strings_stay_strings(self, cs_store: Store) -> None:
        looking = {f"k{i}": v for i, v in enumerate(JSON_LOOKING)}
        await cs_store.memory.save_thread(thread=thread(title='{"t": 1}', metadata=looking))
        await cs_store.memory.save_messages(
            messages=[
                {"id": f"s{i}", "threadId": "t1", "role": "user", "content": v,
                 "createdAt": at(i)}
                for i, v in enumerate(JSON_LOOKING)
            ]
            + [
                message(f"p{i}", seconds=i, content={"format": 2, "parts": [
                    {"type": "text", "text": v}], "content": v})
                for i, v in enumerate(JSON_LOOKING)
            ]
        )
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert got is not None and got.title == '{"t": 1}'
        assert got.metadata == looking
        n = len(JSON_LOOKING)
        legacy = await cs_store.memory.list_messages_by_id(message_ids=[f"s{i}" for i in range(n)])
        assert [m.content.content for m in legacy] == JSON_LOOKING
        assert [m.content.parts for m in legacy] == [[{"type": "text", "text": v}]
                                                     for v in JSON_LOOKING]
        parts = await cs_store.memory.list_messages_by_id(message_ids=[f"p{i}" for i in range(n)])
        assert [(m.content.parts[0]["text"], m.content.content) for m in parts] == [
            (v, v) for v in JSON_LOOKING
        ]
        for i, value in enumerate(JSON_LOOKING):
            await cs_store.memory.update_resource(
                resource_id=f"r{i}", working_memory=value, metadata={"v": value}
            )
            resource = await cs_store.memory.get_resource_by_id(resource_id=f"r{i}")
            assert resource is not None
            assert (resource.working_memory, resource.metadata) == (value, {"v": value})

    # -- resources at the edges --------------------------------------------------------------------

    async def test_resource_edge_values_round_trip(self, cs_store: Store) -> None:
        nested = {"a": {"b": None, "c": [None, {"d": None}]}, "e": None}
        await cs_store.memory.save_resource(
            resource={"id": "u1", "workingMemory": "", "metadata": {}}
        )
        got = await cs_store.memory.get_resource_by_id(resource_id="u1")
        assert got is not None and got.working_memory == "" and got.metadata in ({}, None)
        await cs_store.memory.save_resource(resource={"id": "u2", "metadata": nested})
        got = await cs_store.memory.get_resource_by_id(resource_id="u2")
        assert got is not None and got.metadata == nested and got.working_memory is None
        updated = await cs_store.memory.update_resource(resource_id="u2", working_memory="")
        assert updated.working_memory == "" and updated.metadata == nested
        thread_meta = {"x": None, "y": {"z": None}}
        await cs_store.memory.save_thread(thread=thread(metadata=thread_meta))
        t = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert t is not None and t.metadata == thread_meta

    # -- Mastra's listMessages cases ---------------------------------------------------------------

    async def test_has_more_with_includes_follows_the_thread_page(self, cs_store: Store) -> None:
        # total counts the thread's filtered messages (DESIGN.md section 3); included messages
        # are extra, and end has_more only when they bring every counted message (Mastra's
        # rule: MemorySuite.test_has_more_is_false_once_includes_returned_the_whole_thread).
        await seed(cs_store, 10)
        first = await cs_store.memory.list_messages(
            thread_id="t1", per_page=3, include=[{"id": "m09"}]
        )
        assert ids(first.items) == ["m00", "m01", "m02", "m09"]
        assert first.has_more is True and first.total == 10
        last = await cs_store.memory.list_messages(
            thread_id="t1", page=3, per_page=3, include=[{"id": "m00"}]
        )
        assert ids(last.items) == ["m00", "m09"] and last.has_more is False
        without_total = await cs_store.memory.list_messages(
            thread_id="t1", per_page=3, include=[{"id": "m09"}], include_total=False
        )
        assert ids(without_total.items) == ["m00", "m01", "m02", "m09"]
        assert without_total.has_more is True

    async def test_per_page_zero_with_includes(self, cs_store: Store) -> None:
        await seed(cs_store, 10)
        await seed(cs_store, 3, "t2", prefix="o")
        desc = await cs_store.memory.list_messages(
            thread_id="t1",
            per_page=0,
            order_by=OrderBy(field="createdAt", direction="DESC"),
            include=[{"id": "m05", "withPreviousMessages": 1, "withNextMessages": 1}],
        )
        assert ids(desc.items) == ["m06", "m05", "m04"]
        assert desc.total == 0 and desc.has_more is False
        # Another thread's message brings its own neighbours.
        cross = await cs_store.memory.list_messages(
            thread_id="t1", per_page=0, include=[{"id": "o01", "withPreviousMessages": 5}]
        )
        assert ids(cross.items) == ["o00", "o01"]
        empty = await cs_store.memory.list_messages(
            thread_id="t1", per_page=0, include=[{"id": "ghost", "withNextMessages": 3}]
        )
        assert empty.items == [] and empty.total == 0
        overlapping = await cs_store.memory.list_messages(
            thread_id="t1",
            per_page=0,
            include=[
                {"id": "m03", "withNextMessages": 2},
                {"id": "m05", "withPreviousMessages": 2, "withNextMessages": 1},
            ],
        )
        assert ids(overlapping.items) == ["m03", "m04", "m05", "m06"]

    async def test_per_page_zero_with_a_window_of_200(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[message(f"m{i:03d}", "t1", i) for i in range(200)]
        )
        page = await cs_store.memory.list_messages(
            thread_id="t1",
            per_page=0,
            include=[{"id": "m150", "withPreviousMessages": 150, "withNextMessages": 10}],
        )
        assert ids(page.items) == [f"m{i:03d}" for i in range(161)]
        assert page.total == 0

    async def test_pagination_combined_with_a_date_filter(self, cs_store: Store) -> None:
        await seed(cs_store, 10)
        window = {"date_range": {"start": at(2), "end": at(7)}}
        second = await cs_store.memory.list_messages(
            thread_id="t1", page=1, per_page=2, filter=window
        )
        assert ids(second.items) == ["m04", "m05"]
        assert second.total == 6 and second.has_more is True
        last = await cs_store.memory.list_messages(
            thread_id="t1", page=1, per_page=4, filter=window,
            order_by={"field": "createdAt", "direction": "DESC"},
        )
        assert ids(last.items) == ["m03", "m02"] and last.has_more is False

    # -- Mastra's deleteMessages cases -------------------------------------------------------------

    async def test_delete_messages_of_nothing_changes_nothing(self, cs_store: Store) -> None:
        await seed(cs_store, 2)
        await cs_store.memory.delete_messages(message_ids=[])
        assert (await cs_store.memory.list_messages(thread_id="t1")).total == 2

    async def test_delete_messages_across_threads_bumps_each(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        await seed(cs_store, 3, "t2", prefix="o")
        await cs_store.memory.delete_messages(message_ids=["m01", "o00", "o02"])
        assert ids((await cs_store.memory.list_messages(thread_id="t1")).items) == ["m00", "m02"]
        assert ids((await cs_store.memory.list_messages(thread_id="t2")).items) == ["o01"]
        for tid in ("t1", "t2"):
            got = await cs_store.memory.get_thread_by_id(thread_id=tid)
            assert got is not None and got.updated_at > at(0), f"{tid} not bumped"

    async def test_delete_100_messages_at_once(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[message(f"m{i:03d}", "t1", i) for i in range(105)]
        )
        await cs_store.memory.delete_messages(message_ids=[f"m{i:03d}" for i in range(100)])
        page = await cs_store.memory.list_messages(thread_id="t1", per_page=False)
        assert ids(page.items) == [f"m{i:03d}" for i in range(100, 105)] and page.total == 5
