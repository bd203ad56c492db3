"""Resource isolation and exact identifiers: the rules no read path may break.

A read scoped to a resource (``resource_id=``) returns records of that resource only, include
windows included; identifiers compare exactly on every backend (no trailing-space padding, no
case folding, no normalisation), so ``"alice "`` is a resource of its own.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import Message, Store, Thread
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import at

__all__ = ["IsolationSuite"]

#: Ids that differ from ``alice`` by one thing each: a comparison that pads, folds case or
#: normalises Unicode takes one of them for her.
LOOKALIKES = ("alice ", "Alice", "ALICE", "alice\t", " alice", "alicé", "alice\u00a0")


def _message(mid: str, thread: str, resource: str, seconds: float) -> Message:
    return Message(
        id=mid,
        thread_id=thread,
        resource_id=resource,
        role="user",
        content={"format": 2, "parts": [{"type": "text", "text": f"text of {mid}"}]},
        created_at=at(seconds),
    )


class IsolationSuite(Suite):
    """Reads scoped to a resource stay in it; ids compare exactly (DESIGN.md sections 3, 7)."""

    domains: ClassVar[tuple[str, ...]] = ("memory", "workflows")

    async def two_resources(self, store: Store) -> None:
        """Alice owns thread ``ta`` (a0..a4), mallory owns ``tm`` (m0, m1)."""
        memory = store.memory
        await memory.save_thread(thread=Thread(id="ta", resource_id="alice", created_at=at(0)))
        await memory.save_thread(thread=Thread(id="tm", resource_id="mallory", created_at=at(1)))
        await memory.save_messages(messages=[_message(f"a{i}", "ta", "alice", i) for i in range(5)])
        await memory.save_messages(messages=[_message(f"m{i}", "tm", "mallory", i) for i in (0, 1)])

    async def test_get_thread_by_id_of_another_resource_is_none(self, cs_store: Store) -> None:
        await self.two_resources(cs_store)
        memory = cs_store.memory
        assert await memory.get_thread_by_id(thread_id="ta", resource_id="mallory") is None
        got = await memory.get_thread_by_id(thread_id="ta", resource_id="alice")
        assert got is not None and got.resource_id == "alice"

    async def test_list_threads_of_a_resource_lists_only_its_threads(
        self, cs_store: Store
    ) -> None:
        await self.two_resources(cs_store)
        page = await cs_store.memory.list_threads(filter={"resource_id": "mallory"})
        assert [t.id for t in page.items] == ["tm"] and page.total == 1

    async def test_list_messages_scoped_to_another_resource_is_empty(
        self, cs_store: Store
    ) -> None:
        await self.two_resources(cs_store)
        page = await cs_store.memory.list_messages(thread_id="ta", resource_id="mallory")
        assert page.items == [] and page.total == 0

    @pytest.mark.parametrize(
        "include",
        [
            {"id": "a2"},
            {"id": "a2", "withPreviousMessages": 2, "withNextMessages": 2},
            {"id": "a2", "threadId": "ta", "withPreviousMessages": 1},
            {"id": "a2", "threadId": "tm", "withNextMessages": 1},
        ],
        ids=["target", "window", "naming-her-thread", "naming-own-thread"],
    )
    @pytest.mark.parametrize("per_page", [40, 0])
    async def test_include_cannot_reach_another_resource(
        self, cs_store: Store, include: dict[str, Any], per_page: int
    ) -> None:
        await self.two_resources(cs_store)
        page = await cs_store.memory.list_messages(
            thread_id="tm", resource_id="mallory", include=[include], per_page=per_page
        )
        assert [m.id for m in page.items] == (["m0", "m1"] if per_page else [])

    async def test_an_own_include_beside_a_refused_one_keeps_its_window(
        self, cs_store: Store
    ) -> None:
        await self.two_resources(cs_store)
        page = await cs_store.memory.list_messages(
            thread_id="tm",
            resource_id="mallory",
            per_page=0,
            include=[
                {"id": "a2", "withPreviousMessages": 2},
                {"id": "m1", "withPreviousMessages": 1},
            ],
        )
        assert [m.id for m in page.items] == ["m0", "m1"]

    async def test_include_thread_id_must_hold_the_target(self, cs_store: Store) -> None:
        await self.two_resources(cs_store)
        memory = cs_store.memory
        wrong = [{"id": "a2", "threadId": "tm", "withPreviousMessages": 1}]
        page = await memory.list_messages(thread_id="ta", per_page=0, include=wrong)
        assert page.items == []
        right = [{"id": "a2", "threadId": "ta", "withPreviousMessages": 1}]
        page = await memory.list_messages(thread_id="tm", per_page=0, include=right)
        assert [m.id for m in page.items] == ["a1", "a2"]

    async def test_unscoped_includes_still_reach_other_threads(self, cs_store: Store) -> None:
        # Mastra's cross-thread include: without resource_id the caller scoped to nothing.
        await self.two_resources(cs_store)
        page = await cs_store.memory.list_messages(
            thread_id="tm", per_page=0, include=[{"id": "a2", "withNextMessages": 1}]
        )
        assert [m.id for m in page.items] == ["a2", "a3"]

    async def test_list_workflow_runs_of_a_resource_lists_only_its_runs(
        self, cs_store: Store
    ) -> None:
        workflows = cs_store.workflows
        for run, owner in (("r1", "alice"), ("r2", "mallory"), ("r3", "alice ")):
            await workflows.persist_workflow_snapshot(
                workflow_name="w", run_id=run, resource_id=owner, snapshot={"status": "done"}
            )
        page = await workflows.list_workflow_runs(resource_id="alice")
        assert [r.run_id for r in page.items] == ["r1"]

    @pytest.mark.parametrize("lookalike", LOOKALIKES, ids=repr)
    async def test_resource_ids_compare_exactly(self, cs_store: Store, lookalike: str) -> None:
        memory = cs_store.memory
        await memory.update_resource(resource_id="alice", working_memory="hers")
        assert await memory.get_resource_by_id(resource_id=lookalike) is None
        await memory.update_resource(resource_id=lookalike, working_memory="not hers")
        alice = await memory.get_resource_by_id(resource_id="alice")
        assert alice is not None and alice.working_memory == "hers"
        other = await memory.get_resource_by_id(resource_id=lookalike)
        assert other is not None and other.id == lookalike

    @pytest.mark.parametrize("lookalike", LOOKALIKES, ids=repr)
    async def test_thread_and_message_ids_compare_exactly(
        self, cs_store: Store, lookalike: str
    ) -> None:
        memory = cs_store.memory
        await memory.save_thread(thread=Thread(id="alice", resource_id="alice", title="hers"))
        await memory.save_thread(
            thread=Thread(id=lookalike, resource_id="mallory", title="takeover")
        )
        mine = await memory.get_thread_by_id(thread_id="alice")
        assert mine is not None and (mine.resource_id, mine.title) == ("alice", "hers")
        await memory.save_messages(messages=[_message("alice", "alice", "alice", 0)])
        await memory.save_messages(messages=[_message(lookalike, lookalike, "mallory", 1)])
        [got] = await memory.list_messages_by_id(message_ids=["alice"])
        assert got.thread_id == "alice" and got.resource_id == "alice"
        page = await memory.list_messages(thread_id="alice", resource_id="alice")
        assert [m.id for m in page.items] == ["alice"]
        threads = await memory.list_threads(filter={"resource_id": "alice"})
        assert [t.id for t in threads.items] == ["alice"]

    @pytest.mark.parametrize("lookalike", LOOKALIKES, ids=repr)
    async def test_run_ids_compare_exactly(self, cs_store: Store, lookalike: str) -> None:
        workflows = cs_store.workflows
        await workflows.persist_workflow_snapshot(
            workflow_name="alice", run_id="alice", snapshot={"v": 1}
        )
        await workflows.persist_workflow_snapshot(
            workflow_name="alice", run_id=lookalike, snapshot={"v": 2}
        )
        await workflows.persist_workflow_snapshot(
            workflow_name=lookalike, run_id="alice", snapshot={"v": 3}
        )
        load = workflows.load_workflow_snapshot
        assert await load(workflow_name="alice", run_id="alice") == {"v": 1}
        run = await workflows.get_workflow_run_by_id(run_id="alice", workflow_name="alice")
        assert run is not None and run.snapshot == {"v": 1}
        page = await workflows.list_workflow_runs(workflow_name="alice")
        assert sorted(r.run_id for r in page.items) == sorted(["alice", lookalike])
