"""Memory domain behaviour: threads, messages (pagination, includes, moves) and resources."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from composite_store import (
    ConflictError,
    Include,
    Message,
    NotFoundError,
    OrderBy,
    Store,
    Thread,
    ValidationError,
)
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import (
    DATE_BOUNDS,
    INCLUDE_WINDOWS,
    PAGINATION_EDGES,
    at,
)

__all__ = ["MemorySuite"]


def thread(tid: str = "t1", resource: str = "u1", **kw: Any) -> Thread:
    kw.setdefault("title", f"title {tid}")
    kw.setdefault("created_at", at(0))
    kw.setdefault("updated_at", kw["created_at"])
    return Thread(id=tid, resource_id=resource, **kw)


def message(mid: str, tid: str = "t1", seconds: float = 0, **kw: Any) -> Message:
    kw.setdefault("role", "user")
    kw.setdefault("content", {"format": 2, "parts": [{"type": "text", "text": f"text {mid}"}]})
    kw.setdefault("resource_id", "u1")
    return Message(id=mid, thread_id=tid, created_at=at(seconds), **kw)


async def seed(store: Store, n: int, tid: str = "t1", prefix: str = "m") -> list[Message]:
    """Thread ``tid`` with ``n`` messages created one second apart (``m00``, ``m01``, ...)."""
    if await store.memory.get_thread_by_id(thread_id=tid) is None:
        await store.memory.save_thread(thread=thread(tid))
    msgs = [message(f"{prefix}{i:02d}", tid, i) for i in range(n)]
    return await store.memory.save_messages(messages=msgs) if msgs else []


def ids(items: list[Any]) -> list[str]:
    return [item.id for item in items]


class MemorySuite(Suite):
    """Every rule of the memory domain (DESIGN.md sections 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("memory",)

    # -- threads ---------------------------------------------------------------------------------

    async def test_save_and_get_thread_round_trips(self, cs_store: Store) -> None:
        saved = await cs_store.memory.save_thread(
            thread=thread(metadata={"k": "v", "nested": {"a": [1, 2]}})
        )
        assert isinstance(saved, Thread)
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert got == saved
        assert got is not None and got.created_at.tzinfo is not None

    async def test_get_missing_thread_returns_none(self, cs_store: Store) -> None:
        assert await cs_store.memory.get_thread_by_id(thread_id="nope") is None

    async def test_get_thread_with_other_resource_returns_none(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        assert await cs_store.memory.get_thread_by_id(thread_id="t1", resource_id="u2") is None
        assert await cs_store.memory.get_thread_by_id(thread_id="t1", resource_id="u1") is not None

    async def test_save_thread_accepts_dicts_in_every_spelling(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread={"id": "a", "resourceId": "u1", "title": "x"})
        await cs_store.memory.save_thread(thread={"id": "b", "resource_id": "u1"})
        a = await cs_store.memory.get_thread_by_id(thread_id="a")
        b = await cs_store.memory.get_thread_by_id(thread_id="b")
        assert a is not None and a.resource_id == "u1" and a.title == "x"
        assert b is not None and b.title == ""

    async def test_save_thread_upserts(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread(title="one"))
        await cs_store.memory.save_thread(thread=thread(title="two"))
        page = await cs_store.memory.list_threads()
        assert [t.title for t in page.items] == ["two"]

    async def test_blank_ids_are_rejected(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError):
            await cs_store.memory.get_thread_by_id(thread_id="")
        with pytest.raises(ValidationError):
            await cs_store.memory.get_thread_by_id(thread_id="   ")
        with pytest.raises(ValidationError):
            await cs_store.memory.save_thread(thread={"id": "", "resource_id": "u1"})
        with pytest.raises(ValidationError):
            await cs_store.memory.list_messages(thread_id="")

    async def test_naive_timestamp_is_rejected(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="naive"):
            await cs_store.memory.save_thread(
                thread={"id": "t", "resource_id": "u", "created_at": datetime(2024, 1, 1)}
            )
        assert await cs_store.memory.get_thread_by_id(thread_id="t") is None

    async def test_update_thread_merges_metadata_and_bumps_updated_at(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_thread(thread=thread(metadata={"a": 1, "b": {"x": 1}}))
        updated = await cs_store.memory.update_thread(
            id="t1", title="new", metadata={"b": {"y": 2}, "c": 3}
        )
        assert updated.title == "new"
        assert updated.metadata == {"a": 1, "b": {"y": 2}, "c": 3}
        assert updated.updated_at > at(0)
        assert updated.created_at == at(0)
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert got == updated

    async def test_update_thread_title_only_keeps_metadata(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread(metadata={"a": 1}))
        updated = await cs_store.memory.update_thread(id="t1", title="only")
        assert updated.metadata == {"a": 1}

    async def test_update_missing_thread_raises_not_found(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError):
            await cs_store.memory.update_thread(id="missing", title="x")

    async def test_delete_thread_deletes_its_messages(self, cs_store: Store) -> None:
        await seed(cs_store, 3, "t1")
        await seed(cs_store, 2, "t2", prefix="o")
        await cs_store.memory.delete_thread(thread_id="t1")
        assert await cs_store.memory.get_thread_by_id(thread_id="t1") is None
        assert await cs_store.memory.list_messages_by_id(message_ids=["m00", "m01"]) == []
        assert ids(await cs_store.memory.list_messages_by_id(message_ids=["o00", "o01"])) == [
            "o00",
            "o01",
        ]
        await cs_store.memory.delete_thread(thread_id="t1")  # a second delete is a no-op

    async def test_list_threads_by_resource_newest_first(self, cs_store: Store) -> None:
        for i in range(4):
            await cs_store.memory.save_thread(thread=thread(f"t{i}", "u1", created_at=at(i)))
        await cs_store.memory.save_thread(thread=thread("other", "u2", created_at=at(9)))
        page = await cs_store.memory.list_threads(filter={"resource_id": "u1"})
        assert ids(page.items) == ["t3", "t2", "t1", "t0"]
        assert (
            page.total == 4 and page.has_more is False and page.page == 0 and page.per_page == 100
        )
        page = await cs_store.memory.list_threads(filter={"resourceId": "u2"})
        assert ids(page.items) == ["other"]

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_threads_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        # Thread i is the i-th newest: the default order (createdAt DESC) needs no sort_threads.
        for i in range(total):
            await cs_store.memory.save_thread(thread=thread(f"t{i}", created_at=at(-i)))
        result = await cs_store.memory.list_threads(page=page, per_page=per_page)
        assert ids(result.items) == [f"t{i}" for i in expected]
        assert result.total == total
        assert result.has_more is has_more
        assert result.per_page == per_page

    async def test_list_threads_ties_break_by_id_and_pages_never_overlap(
        self, cs_store: Store
    ) -> None:
        for i in range(7):
            await cs_store.memory.save_thread(thread=thread(f"t{i}", created_at=at(0)))
        seen: list[str] = []
        for p in range(4):
            seen += ids((await cs_store.memory.list_threads(page=p, per_page=2)).items)
        assert sorted(seen) == [f"t{i}" for i in range(7)]
        assert len(seen) == len(set(seen))

    @pytest.mark.cs_requires("sort_threads")
    async def test_list_threads_order_by_updated_at(self, cs_store: Store) -> None:
        for i in range(3):
            await cs_store.memory.save_thread(
                thread=thread(f"t{i}", created_at=at(i), updated_at=at(10 - i))
            )
        for field in ("updatedAt", "updated_at"):
            page = await cs_store.memory.list_threads(
                order_by={"field": field, "direction": "DESC"}
            )
            assert ids(page.items) == ["t0", "t1", "t2"]
        page = await cs_store.memory.list_threads(
            order_by=OrderBy(field="created_at", direction="ASC")
        )
        assert ids(page.items) == ["t0", "t1", "t2"]

    @pytest.mark.cs_requires("metadata_filters")
    async def test_list_threads_metadata_filter_is_and(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread("a", metadata={"kind": "x", "n": 1}))
        await cs_store.memory.save_thread(thread=thread("b", metadata={"kind": "x", "n": 2}))
        await cs_store.memory.save_thread(thread=thread("c", metadata={"kind": "y"}))
        page = await cs_store.memory.list_threads(filter={"metadata": {"kind": "x"}})
        assert sorted(ids(page.items)) == ["a", "b"]
        page = await cs_store.memory.list_threads(filter={"metadata": {"kind": "x", "n": 2}})
        assert ids(page.items) == ["b"]
        assert page.total == 1

    async def test_list_threads_rejects_bad_filter_keys(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError):
            await cs_store.memory.list_threads(filter={"metadata": {"a'; drop table x; --": 1}})
        with pytest.raises(ValidationError):
            await cs_store.memory.list_threads(filter={"owner": "u1"})

    async def test_pagination_rejects_bad_values(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="per_page must be >= 0"):
            await cs_store.memory.list_threads(per_page=-1)
        with pytest.raises(ValidationError, match="page must be >= 0"):
            await cs_store.memory.list_threads(page=-1)
        with pytest.raises(ValidationError):
            await cs_store.memory.list_threads(page=1, per_page=False)

    async def test_per_page_zero_returns_nothing(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        page = await cs_store.memory.list_threads(per_page=0)
        assert page.items == [] and page.total == 0 and page.has_more is False
        msgs = await cs_store.memory.list_messages(thread_id="t1", per_page=0)
        assert msgs.items == [] and msgs.total == 0

    async def test_include_total_false_skips_the_count(self, cs_store: Store) -> None:
        await seed(cs_store, 5)
        page = await cs_store.memory.list_messages(thread_id="t1", per_page=2, include_total=False)
        assert page.total is None and page.has_more is True and ids(page.items) == ["m00", "m01"]
        page = await cs_store.memory.list_messages(
            thread_id="t1", page=2, per_page=2, include_total=False
        )
        assert page.has_more is False and ids(page.items) == ["m04"]
        threads = await cs_store.memory.list_threads(include_total=False)
        assert threads.total is None and ids(threads.items) == ["t1"]

    # -- messages --------------------------------------------------------------------------------

    async def test_save_messages_returns_messages_and_round_trips(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        msg = message(
            "m1",
            content={
                "format": 2,
                "parts": [
                    {"type": "text", "text": "héllo 👋 世界"},
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {"state": "result", "args": {"q": 1}},
                    },
                ],
                "metadata": {"source": "test"},
                "toolInvocations": [{"toolName": "x"}],
            },
            role="assistant",
            type="v2",
        )
        saved = await cs_store.memory.save_messages(messages=[msg])
        assert saved == [msg]
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["m1"])
        assert got.content.parts == msg.content.parts
        assert got.content.metadata == {"source": "test"}
        assert got.model_dump() == msg.model_dump()
        assert got.role == "assistant" and got.type == "v2" and got.resource_id == "u1"

    async def test_message_content_accepts_a_plain_string(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[
                {
                    "id": "m",
                    "threadId": "t1",
                    "role": "user",
                    "content": "plain",
                    "createdAt": at(0),
                }
            ]
        )
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["m"])
        assert got.content.parts == [{"type": "text", "text": "plain"}]

    async def test_system_role_is_stored(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(messages=[message("s", role="system")])
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["s"])
        assert got.role == "system"

    async def test_save_messages_to_missing_thread_writes_nothing(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        with pytest.raises(NotFoundError):
            await cs_store.memory.save_messages(
                messages=[message("a", "t1"), message("b", "ghost")]
            )
        assert await cs_store.memory.list_messages_by_id(message_ids=["a", "b"]) == []

    async def test_save_messages_validates_whole_batch_before_writing(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_thread(thread=thread())
        good = message("good").model_dump(by_alias=True)
        bad = {**message("bad").model_dump(by_alias=True), "role": "robot"}
        with pytest.raises(ValidationError, match=r"messages\[1\]"):
            await cs_store.memory.save_messages(messages=[good, bad])
        assert await cs_store.memory.list_messages_by_id(message_ids=["good"]) == []

    async def test_save_messages_upserts_by_id(self, cs_store: Store) -> None:
        await seed(cs_store, 2)
        changed = message("m01", seconds=1, content="changed", role="assistant")
        await cs_store.memory.save_messages(messages=[changed])
        page = await cs_store.memory.list_messages(thread_id="t1")
        assert page.total == 2
        assert page.items[1].content.content == "changed" and page.items[1].role == "assistant"

    async def test_save_messages_bumps_thread_updated_at(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread(updated_at=at(0)))
        await cs_store.memory.save_messages(messages=[message("m")])
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert got is not None and got.updated_at > at(0) + timedelta(days=1)

    async def test_moving_a_message_bumps_both_threads(self, cs_store: Store) -> None:
        await seed(cs_store, 2, "t1")
        await cs_store.memory.save_thread(thread=thread("t2"))
        before = datetime.now(UTC) - timedelta(seconds=1)
        await cs_store.memory.save_thread(thread=thread("t1", updated_at=at(0)))
        await cs_store.memory.save_thread(thread=thread("t2", updated_at=at(0)))
        await cs_store.memory.save_messages(messages=[message("m00", "t2", 0)])
        assert ids((await cs_store.memory.list_messages(thread_id="t1")).items) == ["m01"]
        assert ids((await cs_store.memory.list_messages(thread_id="t2")).items) == ["m00"]
        for tid in ("t1", "t2"):
            got = await cs_store.memory.get_thread_by_id(thread_id=tid)
            assert got is not None and got.updated_at >= before

    async def test_list_messages_oldest_first_by_default(self, cs_store: Store) -> None:
        await seed(cs_store, 5)
        page = await cs_store.memory.list_messages(thread_id="t1")
        assert ids(page.items) == ["m00", "m01", "m02", "m03", "m04"]
        assert page.total == 5 and page.per_page == 40 and page.page == 0 and not page.has_more

    async def test_list_messages_desc(self, cs_store: Store) -> None:
        await seed(cs_store, 5)
        page = await cs_store.memory.list_messages(
            thread_id="t1", per_page=2, order_by=OrderBy(field="createdAt", direction="DESC")
        )
        assert ids(page.items) == ["m04", "m03"] and page.has_more

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_messages_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await seed(cs_store, total)
        result = await cs_store.memory.list_messages(thread_id="t1", page=page, per_page=per_page)
        assert ids(result.items) == [f"m{i:02d}" for i in expected]
        assert result.total == total and result.has_more is has_more and result.per_page == per_page

    async def test_list_messages_ties_break_by_id(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[message(f"m{i}", seconds=0) for i in (3, 1, 2, 0)]
        )
        asc = await cs_store.memory.list_messages(thread_id="t1")
        assert ids(asc.items) == ["m0", "m1", "m2", "m3"]
        desc = await cs_store.memory.list_messages(
            thread_id="t1", order_by={"field": "createdAt", "direction": "DESC"}
        )
        assert ids(desc.items) == ["m3", "m2", "m1", "m0"]
        pages = [
            ids((await cs_store.memory.list_messages(thread_id="t1", page=p, per_page=1)).items)[0]
            for p in range(4)
        ]
        assert pages == ["m0", "m1", "m2", "m3"]

    async def test_list_messages_of_several_threads(self, cs_store: Store) -> None:
        await seed(cs_store, 2, "t1", prefix="a")
        await seed(cs_store, 2, "t2", prefix="b")
        await seed(cs_store, 2, "t3", prefix="c")
        page = await cs_store.memory.list_messages(thread_id=["t1", "t2"])
        assert sorted(ids(page.items)) == ["a00", "a01", "b00", "b01"] and page.total == 4

    async def test_list_messages_filters_by_resource(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[message("a", resource_id="u1"), message("b", seconds=1, resource_id="u2")]
        )
        page = await cs_store.memory.list_messages(thread_id="t1", resource_id="u2")
        assert ids(page.items) == ["b"] and page.total == 1

    @pytest.mark.parametrize(("start", "end", "start_ex", "end_ex", "expected"), DATE_BOUNDS)
    async def test_list_messages_date_bounds(
        self,
        cs_store: Store,
        start: float | None,
        end: float | None,
        start_ex: bool,
        end_ex: bool,
        expected: list[int],
    ) -> None:
        await seed(cs_store, 5)
        date_range = {
            "start": at(start) if start is not None else None,
            "end": at(end) if end is not None else None,
            "start_exclusive": start_ex,
            "end_exclusive": end_ex,
        }
        page = await cs_store.memory.list_messages(
            thread_id="t1", filter={"date_range": date_range}
        )
        assert ids(page.items) == [f"m{i:02d}" for i in expected]
        assert page.total == len(expected)

    async def test_date_bounds_accept_iso_strings_and_other_time_zones(
        self, cs_store: Store
    ) -> None:
        await seed(cs_store, 5)
        plus2 = timezone(timedelta(hours=2))
        start = at(1).astimezone(plus2).isoformat()
        end = at(3).astimezone(timezone(timedelta(hours=-5)))
        page = await cs_store.memory.list_messages(
            thread_id="t1",
            filter={"date_range": {"start": start, "end": end, "end_exclusive": True}},
        )
        assert ids(page.items) == ["m01", "m02"]

    async def test_exclusive_bound_from_a_truncated_copy_excludes_the_row(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_thread(thread=thread())
        precise = at(0) + timedelta(microseconds=456789)
        [saved] = await cs_store.memory.save_messages(
            messages=[
                {
                    "id": "m",
                    "thread_id": "t1",
                    "role": "user",
                    "content": "x",
                    "created_at": precise,
                }
            ]
        )
        assert saved.created_at.microsecond % 1000 == 0
        page = await cs_store.memory.list_messages(
            thread_id="t1",
            filter={"date_range": {"start": saved.created_at, "start_exclusive": True}},
        )
        assert page.items == []
        page = await cs_store.memory.list_messages(
            thread_id="t1", filter={"date_range": {"end": saved.created_at, "end_exclusive": True}}
        )
        assert page.items == []

    async def test_timestamps_round_trip_in_utc_with_milliseconds(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        tokyo = timezone(timedelta(hours=9))
        local = datetime(2024, 3, 10, 23, 59, 59, 999999, tzinfo=tokyo)
        await cs_store.memory.save_messages(
            messages=[
                {"id": "m", "thread_id": "t1", "role": "user", "content": "x", "created_at": local}
            ]
        )
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["m"])
        assert got.created_at == local.replace(microsecond=999000)
        assert got.created_at.utcoffset() == timedelta(0)

    @pytest.mark.parametrize(("target", "prev", "nxt", "expected"), INCLUDE_WINDOWS)
    async def test_include_windows(
        self, cs_store: Store, target: int, prev: int, nxt: int, expected: list[int]
    ) -> None:
        await seed(cs_store, 10)
        await seed(cs_store, 3, "other", prefix="o")
        page = await cs_store.memory.list_messages(
            thread_id="other",
            include=[
                Include(id=f"m{target:02d}", with_previous_messages=prev, with_next_messages=nxt)
            ],
        )
        assert ids(page.items) == sorted(
            ["o00", "o01", "o02"] + [f"m{i:02d}" for i in expected], key=lambda i: (int(i[1:]), i)
        )
        assert page.total == 3

    async def test_include_merges_deduplicated_in_requested_order(self, cs_store: Store) -> None:
        await seed(cs_store, 10)
        page = await cs_store.memory.list_messages(
            thread_id="t1",
            per_page=2,
            order_by={"field": "createdAt", "direction": "DESC"},
            include=[
                {"id": "m08", "withPreviousMessages": 1, "withNextMessages": 1},
                {"id": "m02"},
            ],
        )
        assert ids(page.items) == ["m09", "m08", "m07", "m02"]
        assert page.total == 10

    async def test_include_with_per_page_zero_returns_only_included(self, cs_store: Store) -> None:
        await seed(cs_store, 10)
        page = await cs_store.memory.list_messages(
            thread_id="t1", per_page=0, include=[{"id": "m05", "withPreviousMessages": 1}]
        )
        assert ids(page.items) == ["m04", "m05"] and page.total == 0

    async def test_include_of_missing_message_adds_nothing(self, cs_store: Store) -> None:
        await seed(cs_store, 2)
        page = await cs_store.memory.list_messages(
            thread_id="t1", include=[{"id": "ghost", "withPreviousMessages": 3}]
        )
        assert ids(page.items) == ["m00", "m01"]

    async def test_list_messages_by_id_is_chronological_and_skips_unknown(
        self, cs_store: Store
    ) -> None:
        await seed(cs_store, 4)
        got = await cs_store.memory.list_messages_by_id(message_ids=["m03", "ghost", "m00", "m02"])
        assert ids(got) == ["m00", "m02", "m03"]
        assert await cs_store.memory.list_messages_by_id(message_ids=[]) == []

    async def test_update_messages_merges_content_and_metadata(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.save_messages(
            messages=[
                message(
                    "m",
                    content={
                        "format": 2,
                        "parts": [{"type": "text", "text": "a"}],
                        "metadata": {"x": 1, "y": 2},
                    },
                )
            ]
        )
        [updated] = await cs_store.memory.update_messages(
            messages=[{"id": "m", "content": {"metadata": {"y": 3, "z": 4}, "content": "summary"}}]
        )
        assert updated.content.metadata == {"x": 1, "y": 3, "z": 4}
        assert updated.content.parts == [{"type": "text", "text": "a"}]
        assert updated.content.content == "summary"
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["m"])
        assert got.content.metadata == {"x": 1, "y": 3, "z": 4} and got.content.content == "summary"

    async def test_update_messages_can_move_and_change_role(self, cs_store: Store) -> None:
        await seed(cs_store, 2)
        await cs_store.memory.save_thread(thread=thread("t2", updated_at=at(0)))
        [updated] = await cs_store.memory.update_messages(
            messages=[{"id": "m00", "threadId": "t2", "role": "assistant"}]
        )
        assert updated.thread_id == "t2" and updated.role == "assistant"
        assert ids((await cs_store.memory.list_messages(thread_id="t2")).items) == ["m00"]
        t2 = await cs_store.memory.get_thread_by_id(thread_id="t2")
        assert t2 is not None and t2.updated_at > at(0)

    async def test_has_more_is_false_once_includes_returned_the_whole_thread(
        self, cs_store: Store
    ) -> None:
        """Mastra's rule: includes that bring every message the page counts leave nothing to
        page through."""
        await seed(cs_store, 5)
        plain = await cs_store.memory.list_messages(thread_id="t1", per_page=2)
        assert plain.has_more is True and plain.total == 5
        window = Include(id="m04", with_previous_messages=2)
        everything = await cs_store.memory.list_messages(
            thread_id="t1", per_page=2, include=[window]
        )
        assert ids(everything.items) == ["m00", "m01", "m02", "m03", "m04"]
        assert everything.has_more is False and everything.total == 5
        partial = await cs_store.memory.list_messages(
            thread_id="t1", per_page=2, include=[Include(id="m04")]
        )
        assert ids(partial.items) == ["m00", "m01", "m04"] and partial.has_more is True

    async def test_update_messages_skips_unknown_ids_as_mastra_does(self, cs_store: Store) -> None:
        await seed(cs_store, 1)
        updated = await cs_store.memory.update_messages(
            messages=[{"id": "m00", "role": "assistant"}, {"id": "ghost", "role": "user"}]
        )
        assert [m.id for m in updated] == ["m00"]
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["m00", "ghost"])
        assert got.role == "assistant"
        assert await cs_store.memory.update_messages(messages=[{"id": "ghost"}]) == []
        assert await cs_store.memory.list_messages_by_id(message_ids=["ghost"]) == []

    async def test_delete_messages_bumps_thread_and_skips_unknown(self, cs_store: Store) -> None:
        await seed(cs_store, 3)
        await cs_store.memory.save_thread(thread=thread(updated_at=at(0)))
        await cs_store.memory.delete_messages(message_ids=["m01", "ghost"])
        assert ids((await cs_store.memory.list_messages(thread_id="t1")).items) == ["m00", "m02"]
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert got is not None and got.updated_at > at(0)

    async def test_large_and_unicode_payloads(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(
            thread=thread(
                title="ünïcødé 🚀 标题", metadata={"deep": _nested(12), "emoji": "🙂" * 100}
            )
        )
        big = "x" * 200_000 + "🚀"
        await cs_store.memory.save_messages(
            messages=[
                message("big", content={"format": 2, "parts": [{"type": "text", "text": big}]})
            ]
        )
        [got] = await cs_store.memory.list_messages_by_id(message_ids=["big"])
        assert got.content.parts[0]["text"] == big
        t = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert (
            t is not None
            and t.title == "ünïcødé 🚀 标题"
            and t.metadata == {"deep": _nested(12), "emoji": "🙂" * 100}
        )

    # -- clone -----------------------------------------------------------------------------------

    async def test_clone_thread_copies_messages_with_new_ids(self, cs_store: Store) -> None:
        await seed(cs_store, 4)
        result = await cs_store.memory.clone_thread(
            source_thread_id="t1", new_thread_id="c1", title="copy"
        )
        assert (
            result.thread.id == "c1"
            and result.thread.title == "copy"
            and result.thread.resource_id == "u1"
        )
        assert (
            result.thread.metadata is not None
            and result.thread.metadata["clone"]["sourceThreadId"] == "t1"
        )
        assert len(result.messages) == 4 and set(result.message_id_map) == {
            "m00",
            "m01",
            "m02",
            "m03",
        }
        stored = await cs_store.memory.list_messages(thread_id="c1")
        assert ids(stored.items) == [result.message_id_map[f"m0{i}"] for i in range(4)]
        assert [m.content for m in stored.items] == [
            m.content for m in (await cs_store.memory.list_messages(thread_id="t1")).items
        ]
        assert (await cs_store.memory.list_messages(thread_id="t1")).total == 4

    async def test_clone_thread_limit_and_filter(self, cs_store: Store) -> None:
        await seed(cs_store, 5)
        last2 = await cs_store.memory.clone_thread(
            source_thread_id="t1", message_limit=2, resource_id="u9"
        )
        assert set(last2.message_id_map) == {"m03", "m04"} and last2.thread.resource_id == "u9"
        picked = await cs_store.memory.clone_thread(
            source_thread_id="t1", message_filter={"message_ids": ["m01", "m03"]}
        )
        assert set(picked.message_id_map) == {"m01", "m03"}
        dated = await cs_store.memory.clone_thread(
            source_thread_id="t1", message_filter={"start_date": at(2), "end_date": at(3)}
        )
        assert set(dated.message_id_map) == {"m02", "m03"}

    async def test_clone_thread_errors(self, cs_store: Store) -> None:
        await seed(cs_store, 1)
        with pytest.raises(NotFoundError):
            await cs_store.memory.clone_thread(source_thread_id="ghost")
        with pytest.raises(ConflictError):
            await cs_store.memory.clone_thread(source_thread_id="t1", new_thread_id="t1")

    # -- resources -------------------------------------------------------------------------------

    async def test_resource_round_trip_and_upsert(self, cs_store: Store) -> None:
        assert await cs_store.memory.get_resource_by_id(resource_id="u1") is None
        saved = await cs_store.memory.save_resource(
            resource={"id": "u1", "workingMemory": "# me", "metadata": {"a": 1}}
        )
        assert await cs_store.memory.get_resource_by_id(resource_id="u1") == saved
        await cs_store.memory.save_resource(resource={"id": "u1", "workingMemory": "# again"})
        got = await cs_store.memory.get_resource_by_id(resource_id="u1")
        assert got is not None and got.working_memory == "# again" and got.metadata is None

    async def test_update_resource_creates_when_missing(self, cs_store: Store) -> None:
        created = await cs_store.memory.update_resource(
            resource_id="new", working_memory="wm", metadata={"a": 1}
        )
        assert (
            created.id == "new" and created.working_memory == "wm" and created.metadata == {"a": 1}
        )
        assert await cs_store.memory.get_resource_by_id(resource_id="new") == created

    async def test_update_resource_merges_metadata_and_keeps_working_memory(
        self, cs_store: Store
    ) -> None:
        await cs_store.memory.save_resource(
            resource={
                "id": "u1",
                "workingMemory": "keep",
                "metadata": {"a": 1, "b": 2},
                "createdAt": at(0),
                "updatedAt": at(0),
            }
        )
        updated = await cs_store.memory.update_resource(resource_id="u1", metadata={"b": 3})
        assert updated.working_memory == "keep" and updated.metadata == {"a": 1, "b": 3}
        assert updated.updated_at > at(0) and updated.created_at == at(0)
        updated = await cs_store.memory.update_resource(resource_id="u1", working_memory="new")
        assert updated.working_memory == "new" and updated.metadata == {"a": 1, "b": 3}
        assert await cs_store.memory.get_resource_by_id(resource_id="u1") == updated

    async def test_working_memory_of_10_kb_round_trips(self, cs_store: Store) -> None:
        text = ("# Profile\n- **Name**: Ada 🚀\n" * 400)[:10_240]
        await cs_store.memory.update_resource(resource_id="u1", working_memory=text)
        got = await cs_store.memory.get_resource_by_id(resource_id="u1")
        assert got is not None and got.working_memory == text

    @pytest.mark.cs_requires("compare_and_set")
    async def test_compare_and_set_on_resource(self, cs_store: Store) -> None:
        await cs_store.memory.update_resource(
            resource_id="u1", working_memory="v1", expected_working_memory=None
        )
        with pytest.raises(ConflictError):
            await cs_store.memory.update_resource(
                resource_id="u1", working_memory="v2", expected_working_memory="stale"
            )
        updated = await cs_store.memory.update_resource(
            resource_id="u1", working_memory="v2", expected_working_memory="v1"
        )
        assert updated.working_memory == "v2"
        with pytest.raises(ConflictError):
            await cs_store.memory.update_resource(
                resource_id="fresh", working_memory="x", expected_working_memory="y"
            )
        assert await cs_store.memory.get_resource_by_id(resource_id="fresh") is None

    @pytest.mark.cs_requires("compare_and_set")
    async def test_compare_and_set_on_thread(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await cs_store.memory.update_thread(
            id="t1", metadata={"workingMemory": "v1"}, expected_working_memory=None
        )
        with pytest.raises(ConflictError):
            await cs_store.memory.update_thread(
                id="t1", metadata={"workingMemory": "v2"}, expected_working_memory="v0"
            )
        got = await cs_store.memory.get_thread_by_id(thread_id="t1")
        assert got is not None and got.metadata == {"workingMemory": "v1"}

    @pytest.mark.cs_requires("compare_and_set")
    async def test_concurrent_compare_and_set_loses_no_update(self, cs_store: Store) -> None:
        await cs_store.memory.update_resource(resource_id="u1", working_memory="")

        async def append(item: str) -> None:
            while True:
                current = await cs_store.memory.get_resource_by_id(resource_id="u1")
                assert current is not None
                text = current.working_memory or ""
                try:
                    await cs_store.memory.update_resource(
                        resource_id="u1",
                        working_memory=text + item + ";",
                        expected_working_memory=text,
                    )
                    return
                except ConflictError:
                    await asyncio.sleep(0)

        await asyncio.gather(*(append(f"i{n}") for n in range(12)))
        got = await cs_store.memory.get_resource_by_id(resource_id="u1")
        assert got is not None
        assert sorted(filter(None, (got.working_memory or "").split(";"))) == sorted(
            f"i{n}" for n in range(12)
        )

    async def test_resources_are_isolated(self, cs_store: Store) -> None:
        await cs_store.memory.update_resource(resource_id="u1", working_memory="one")
        await cs_store.memory.update_resource(resource_id="u2", working_memory="two")
        a = await cs_store.memory.get_resource_by_id(resource_id="u1")
        b = await cs_store.memory.get_resource_by_id(resource_id="u2")
        assert (
            a is not None
            and b is not None
            and (a.working_memory, b.working_memory) == ("one", "two")
        )

    @pytest.mark.cs_requires("atomic_batches")
    async def test_concurrent_saves_to_one_thread_lose_nothing(self, cs_store: Store) -> None:
        await cs_store.memory.save_thread(thread=thread())
        await asyncio.gather(
            *(
                cs_store.memory.save_messages(
                    messages=[message(f"c{w}-{i}", seconds=w * 10 + i) for i in range(5)]
                )
                for w in range(8)
            )
        )
        page = await cs_store.memory.list_messages(thread_id="t1", per_page=False)
        assert page.total == 40 and len(page.items) == 40


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": [1, 2.5, True, None, "ß"]}
    for i in range(depth):
        node = {f"level{i}": node, "n": i}
    return node
