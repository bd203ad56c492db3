"""Resource isolation and exact identifiers: the rules no read path may break.

A read scoped to a resource (``resource_id=``), or to an entity, run, thread, trace, dataset,
experiment or definition, returns records of that scope only, include windows included;
identifiers compare exactly on every backend (no trailing-space padding, no case folding, no
normalisation, no pattern or operator reading), so ``"alice "``, ``"Alice"`` and ``"ali%"`` are
scopes of their own (``cases.HOSTILE_IDS``). Records of the scopes are interleaved with equal
timestamps, so an order or a page boundary cannot hide a leak.

The read paths and their scope, by domain contract (``composite_store/domains``); each one has a
test in this module or a sibling ``test_isolation_*`` module:

=====================  =================================================  ==================
domain                 read path                                          scoped by
=====================  =================================================  ==================
memory                 ``get_thread_by_id(thread_id, resource_id=)``      resource
memory                 ``list_threads(filter={resource_id, metadata})``   resource, metadata
memory                 ``list_messages(thread_id=one or many,             resource, thread
                       resource_id=, include=)``
memory                 include windows (``Include.thread_id``)            thread, resource
memory                 ``list_messages_by_id``, ``get_resource_by_id``    exact id
memory (``Memory``)    ``recall(thread_id, resource_id=)``                resource
memory (``Memory``)    ``get_working_memory`` / ``system_message``        resource or thread
workflows              ``list_workflow_runs(resource_id=, workflow_name=,  resource, workflow
                       status=)``
workflows              ``get_workflow_run_by_id``,                        (workflow, run)
                       ``load_workflow_snapshot``
scores                 ``list_scores_by_run_id``                          run
scores                 ``list_scores_by_entity_id(entity_id, type)``      entity
scores                 ``list_scores_by_scorer_id(scorer_id, entity_id)``  scorer, entity
scores                 ``list_scores_by_span(trace_id, span_id)``         (trace, span)
scores                 ``list_evals(agent_name=)``                        agent
observability          ``list_traces(filters={resource_id, thread_id,      the root span's
                       user_id, session_id, organization_id, entity_id,   fields
                       run_id, ...})``
observability          ``get_trace``, ``get_trace_light``,                trace, (trace,
                       ``get_root_span``, ``get_span``                    span)
observability          ``list_otel_spans(filters={trace_id, ...})``       trace
datasets               ``list_items``, ``get_items_by_version``,          dataset
                       ``list_dataset_versions`` (``search=`` too)
datasets               ``get_item_by_id``, ``get_item_history``           item
experiments            ``list_experiments(dataset_id=, target_id=)``      dataset, target
experiments            ``list_experiment_results(experiment_id=)``        experiment
workflow_definitions   ``list_versions``, ``get_latest_version``,         definition
                       ``get_version_by_number``
=====================  =================================================  ==================

The synchronous facade (``composite_store.sync``) forwards each call to these methods
unchanged, and ``CompositeStore`` hands out the routed domain itself: neither has a read path of
its own. ``Memory``'s resource scope reads the resource the caller names (that is its scope);
writes check that the thread belongs to it. Deletes by a hostile id (``delete_thread``,
``delete_messages``, ``delete_workflow_run_by_id``, ``batch_delete_traces``, ``delete_dataset``,
``delete_experiment``, ``delete_workflow_definition``) remove only that id's records.

Note: a page of ``list_messages(resource_id=)`` holds the messages whose own ``resourceId`` is
the scope (Mastra's rule), while an include target must sit in a thread of that resource.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import Message, NotFoundError, Store, Thread, ValidationError
from composite_store.memory import Memory, WorkingMemoryConfig
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import (
    HOSTILE_IDS,
    JSON_CONTAINER_LOOKALIKES,
    JSON_LOOKALIKES,
    LOOKALIKES,
    OWNERS,
    at,
)

__all__ = ["IsolationSuite"]



def _message(mid: str, thread: str, resource: str, seconds: float) -> Message:
    return Message(
        id=mid,
        thread_id=thread,
        resource_id=resource,
        role="user",
        content={"format": 2, "parts": [{"type": "text", "text": f"text of {mid}"}]},
        created_at=at(seconds),
    )


def _thread_of(n: int) -> str:
    return f"thread-{n}"


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

    async def many_owners(self, store: Store) -> None:
        """Thread ``thread-<n>`` of each of ``OWNERS`` with messages ``<n>-0``, ``<n>-1`` at
        ``at(0)``, ``at(1)``: every owner's records at the same instants, saved in one batch."""
        memory = store.memory
        for n, owner in enumerate(OWNERS):
            await memory.save_thread(
                thread=Thread(
                    id=_thread_of(n),
                    resource_id=owner,
                    metadata={"project": "p", "owner": owner},
                    created_at=at(0),
                )
            )
        await memory.save_messages(
            messages=[
                _message(f"{n}-{i}", _thread_of(n), owner, i)
                for i in (0, 1)
                for n, owner in enumerate(OWNERS)
            ]
        )

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

    # -- many owners, equal timestamps, hostile ids ------------------------------------------------

    async def test_thread_reads_of_each_owner_return_only_its_thread(self, cs_store: Store) -> None:
        await self.many_owners(cs_store)
        memory = cs_store.memory
        alice = _thread_of(OWNERS.index("alice"))
        for n, owner in enumerate(OWNERS):
            page = await memory.list_threads(filter={"resource_id": owner})
            assert ([t.id for t in page.items], page.total) == ([_thread_of(n)], 1), owner
            got = await memory.get_thread_by_id(thread_id=alice, resource_id=owner)
            assert (got is not None) is (owner == "alice"), owner

    @pytest.mark.cs_requires("metadata_filters")
    async def test_metadata_filters_stay_in_the_resource_and_compare_exactly(
        self, cs_store: Store
    ) -> None:
        await self.many_owners(cs_store)
        memory = cs_store.memory
        for n, owner in enumerate(OWNERS):
            scoped = await memory.list_threads(
                filter={"resource_id": owner, "metadata": {"project": "p"}}
            )
            assert [t.id for t in scoped.items] == [_thread_of(n)], owner
            # The value of a metadata pair is a hostile id too: no folding, padding or pattern.
            by_value = await memory.list_threads(filter={"metadata": {"owner": owner}})
            assert [t.id for t in by_value.items] == [_thread_of(n)], owner
            crossed = await memory.list_threads(
                filter={"resource_id": "mallory", "metadata": {"owner": owner}}
            )
            expected = [_thread_of(n)] if owner == "mallory" else []
            assert [t.id for t in crossed.items] == expected, owner

    @pytest.mark.cs_requires("metadata_filters")
    async def test_metadata_filter_values_match_only_their_own_json_type(
        self, cs_store: Store
    ) -> None:
        memory = cs_store.memory
        values = JSON_LOOKALIKES + JSON_CONTAINER_LOOKALIKES
        for name, value in values:
            await memory.save_thread(
                thread=Thread(id=name, resource_id="alice", metadata={"k": value})
            )
        for name, value in values:
            page = await memory.list_threads(filter={"metadata": {"k": value}})
            assert [t.id for t in page.items] == [name], name
            scoped = await memory.list_threads(
                filter={"resource_id": "alice", "metadata": {"k": value}}
            )
            assert [t.id for t in scoped.items] == [name], name

    @pytest.mark.cs_requires("metadata_filters")
    async def test_metadata_filter_numbers_match_by_value(self, cs_store: Store) -> None:
        memory = cs_store.memory
        await memory.save_thread(thread=Thread(id="two", resource_id="alice", metadata={"k": 2.0}))
        await memory.save_thread(thread=Thread(id="three", resource_id="alice", metadata={"k": 3}))
        for value, expected in ((2, "two"), (2.0, "two"), (3.0, "three"), (3, "three")):
            page = await memory.list_threads(filter={"metadata": {"k": value}})
            assert [t.id for t in page.items] == [expected], value

    async def test_a_thread_given_to_another_resource_leaves_the_first(
        self, cs_store: Store
    ) -> None:
        await self.two_resources(cs_store)
        memory = cs_store.memory
        await memory.save_thread(
            thread=Thread(
                id="ta", resource_id="mallory", metadata={"project": "p"}, created_at=at(0)
            )
        )
        page = await memory.list_threads(filter={"resource_id": "alice"})
        assert (page.items, page.total) == ([], 0)
        page = await memory.list_threads(filter={"resource_id": "mallory"})
        assert sorted(t.id for t in page.items) == ["ta", "tm"] and page.total == 2
        assert await memory.get_thread_by_id(thread_id="ta", resource_id="alice") is None
        if memory.capabilities.sort_threads:
            for direction in ("ASC", "DESC"):
                page = await memory.list_threads(
                    filter={"resource_id": "alice"},
                    order_by={"field": "updatedAt", "direction": direction},
                )
                assert (page.items, page.total) == ([], 0), direction
        if memory.capabilities.metadata_filters:
            page = await memory.list_threads(
                filter={"resource_id": "alice", "metadata": {"project": "p"}}
            )
            assert (page.items, page.total) == ([], 0)

    async def test_a_message_moved_to_another_resource_leaves_its_windows(
        self, cs_store: Store
    ) -> None:
        await self.two_resources(cs_store)
        memory = cs_store.memory
        await memory.save_messages(messages=[_message("a2", "tm", "mallory", 2)])
        page = await memory.list_messages(thread_id="ta", resource_id="alice")
        assert [m.id for m in page.items] == ["a0", "a1", "a3", "a4"] and page.total == 4
        gone = await memory.list_messages(
            thread_id="ta", resource_id="alice", per_page=0, include=[{"id": "a2"}]
        )
        assert gone.items == []
        closed = await memory.list_messages(
            thread_id="ta",
            resource_id="alice",
            per_page=0,
            include=[{"id": "a1", "withNextMessages": 1}, {"id": "a3", "withPreviousMessages": 1}],
        )
        assert [m.id for m in closed.items] == ["a1", "a3"]
        theirs = await memory.list_messages(
            thread_id="tm",
            resource_id="mallory",
            per_page=0,
            include=[{"id": "a2", "withPreviousMessages": 1}],
        )
        assert [m.id for m in theirs.items] == ["m1", "a2"]

    async def test_messages_of_many_threads_scoped_to_each_owner(self, cs_store: Store) -> None:
        await self.many_owners(cs_store)
        memory = cs_store.memory
        every_thread = [_thread_of(n) for n in range(len(OWNERS))]
        for n, owner in enumerate(OWNERS):
            page = await memory.list_messages(thread_id=every_thread, resource_id=owner)
            assert [m.id for m in page.items] == [f"{n}-0", f"{n}-1"], owner
            assert page.total == 2, owner

    @pytest.mark.parametrize("owner", ["alice", "alice ", "ali%", "*"], ids=repr)
    async def test_pages_of_a_scoped_listing_never_reach_another_owner(
        self, cs_store: Store, owner: str
    ) -> None:
        # Equal createdAt across owners: the page boundary falls between records of the same
        # instant, where a tie broken on the wrong rows would pull in a neighbour's message.
        await self.many_owners(cs_store)
        memory = cs_store.memory
        every_thread = [_thread_of(n) for n in range(len(OWNERS))]
        seen: list[str] = []
        for page_no in range(3):
            page = await memory.list_messages(
                thread_id=every_thread,
                resource_id=owner,
                page=page_no,
                per_page=1,
                include_total=False,
            )
            seen.extend(m.id for m in page.items)
            assert page.has_more is (page_no == 0)
        n = OWNERS.index(owner)
        assert seen == [f"{n}-0", f"{n}-1"]

    async def test_scoped_includes_of_each_owner_drop_every_other_window(
        self, cs_store: Store
    ) -> None:
        await self.many_owners(cs_store)
        memory = cs_store.memory
        targets = [
            {"id": f"{n}-1", "withPreviousMessages": 1} for n in range(len(OWNERS))
        ]
        for n, owner in enumerate(OWNERS):
            page = await memory.list_messages(
                thread_id=_thread_of(n), resource_id=owner, per_page=0, include=targets
            )
            assert [m.id for m in page.items] == [f"{n}-0", f"{n}-1"], owner

    @pytest.mark.parametrize("lookalike", LOOKALIKES, ids=repr)
    async def test_include_thread_id_compares_exactly(
        self, cs_store: Store, lookalike: str
    ) -> None:
        await self.two_resources(cs_store)
        await cs_store.memory.save_thread(thread=Thread(id=f"ta{lookalike}", resource_id="alice"))
        page = await cs_store.memory.list_messages(
            thread_id="ta",
            per_page=0,
            include=[{"id": "a2", "threadId": f"ta{lookalike}", "withNextMessages": 1}],
        )
        assert page.items == []

    async def test_recall_is_refused_for_every_other_owner(self, cs_store: Store) -> None:
        await self.many_owners(cs_store)
        memory = Memory(cs_store)
        n = OWNERS.index("alice")
        alice = _thread_of(n)
        got = await memory.recall(thread_id=alice, resource_id="alice")
        assert [m["content"] for m in got] == [f"text of {n}-{i}" for i in (0, 1)]
        for owner in OWNERS:
            if owner == "alice":
                continue
            with pytest.raises(NotFoundError, match="not found for resource"):
                await memory.recall(thread_id=alice, resource_id=owner)

    async def test_working_memory_reads_stay_with_their_owner(self, cs_store: Store) -> None:
        await self.many_owners(cs_store)
        domain = cs_store.memory
        by_resource = Memory(cs_store, working_memory=WorkingMemoryConfig(scope="resource"))
        by_thread = Memory(cs_store, working_memory=WorkingMemoryConfig(scope="thread"))
        for n, owner in enumerate(OWNERS):
            await domain.update_resource(resource_id=owner, working_memory=f"memory of {owner}")
            await domain.update_thread(
                id=_thread_of(n), metadata={"workingMemory": f"thread memory of {owner}"}
            )
        alice = _thread_of(OWNERS.index("alice"))
        for n, owner in enumerate(OWNERS):
            got = await by_resource.get_working_memory(thread_id=_thread_of(n), resource_id=owner)
            assert got == f"memory of {owner}", owner
            own = await by_thread.get_working_memory(thread_id=_thread_of(n), resource_id=owner)
            assert own == f"thread memory of {owner}", owner
            if owner != "alice":
                with pytest.raises(ValidationError, match="belongs to another resource"):
                    await by_thread.get_working_memory(thread_id=alice, resource_id=owner)
                with pytest.raises(ValidationError, match="belongs to another resource"):
                    await by_thread.system_message(thread_id=alice, resource_id=owner)

    async def test_workflow_runs_of_each_owner_at_equal_timestamps(self, cs_store: Store) -> None:
        workflows = cs_store.workflows
        for n, owner in enumerate(OWNERS):
            for name in ("w", "v"):
                await workflows.persist_workflow_snapshot(
                    workflow_name=name,
                    run_id=f"{name}-{n}",
                    resource_id=owner,
                    snapshot={"status": "success", "owner": owner},
                    created_at=at(0),
                    updated_at=at(0),
                )
        for n, owner in enumerate(OWNERS):
            page = await workflows.list_workflow_runs(resource_id=owner)
            assert sorted(r.run_id for r in page.items) == [f"v-{n}", f"w-{n}"], owner
            assert {r.resource_id for r in page.items} == {owner} and page.total == 2
            one = await workflows.list_workflow_runs(
                resource_id=owner, workflow_name="w", status="success"
            )
            assert [r.run_id for r in one.items] == [f"w-{n}"], owner
            first = await workflows.list_workflow_runs(resource_id=owner, page=0, per_page=1)
            second = await workflows.list_workflow_runs(resource_id=owner, page=1, per_page=1)
            assert sorted(r.run_id for r in first.items + second.items) == [f"v-{n}", f"w-{n}"]
            # The workflow name is an exact scope too: a hostile name lists nothing.
            assert (await workflows.list_workflow_runs(workflow_name=owner)).items == []

    @pytest.mark.parametrize(
        ("stored", "asked"),
        [(("w:a", "r"), ("w", "a:r")), (("w", "a:r"), ("w:a", "r")), (("w}", "r"), ("w", "}r"))],
        ids=["name-colon", "run-colon", "brace"],
    )
    async def test_workflow_and_run_never_run_together(
        self, cs_store: Store, stored: tuple[str, str], asked: tuple[str, str]
    ) -> None:
        # A key built by joining the two ids would take one pair for the other.
        workflows = cs_store.workflows
        name, run = stored
        await workflows.persist_workflow_snapshot(workflow_name=name, run_id=run, snapshot={"v": 1})
        other_name, other_run = asked
        assert await workflows.load_workflow_snapshot(
            workflow_name=other_name, run_id=other_run
        ) is None
        got = await workflows.get_workflow_run_by_id(run_id=other_run, workflow_name=other_name)
        assert got is None
        assert (await workflows.list_workflow_runs(workflow_name=other_name)).items == []

    async def test_hostile_ids_name_only_their_own_thread_and_message(
        self, cs_store: Store
    ) -> None:
        memory = cs_store.memory
        for owner in OWNERS:
            await memory.save_thread(thread=Thread(id=owner, resource_id=owner, created_at=at(0)))
        await memory.save_messages(messages=[_message(owner, owner, owner, 0) for owner in OWNERS])
        for owner in OWNERS:
            page = await memory.list_messages(thread_id=owner)
            assert [m.id for m in page.items] == [owner], owner
            [got] = await memory.list_messages_by_id(message_ids=[owner])
            assert got.thread_id == owner, owner
            thread = await memory.get_thread_by_id(thread_id=owner)
            assert thread is not None and thread.resource_id == owner, owner

    async def test_deletes_by_hostile_ids_remove_only_their_own_records(
        self, cs_store: Store
    ) -> None:
        # A delete that matched keys or rows by pattern ("*", "%") would take alice's too.
        memory, workflows = cs_store.memory, cs_store.workflows
        for owner in OWNERS:
            await memory.save_thread(thread=Thread(id=owner, resource_id=owner, created_at=at(0)))
            await workflows.persist_workflow_snapshot(
                workflow_name="w", run_id=owner, resource_id=owner, snapshot={"v": owner}
            )
        await memory.save_messages(
            messages=[_message(f"{owner}/{i}", owner, owner, i) for owner in OWNERS for i in (0, 1)]
        )
        for hostile in HOSTILE_IDS:
            await memory.delete_messages(message_ids=[f"{hostile}/0"])
        for hostile in HOSTILE_IDS:
            await memory.delete_thread(thread_id=hostile)
            await workflows.delete_workflow_run_by_id(run_id=hostile, workflow_name="w")
        threads = await memory.list_threads(per_page=False)
        assert sorted(t.id for t in threads.items) == ["alice", "mallory"]
        every = [f"{owner}/{i}" for owner in OWNERS for i in (0, 1)]
        left = await memory.list_messages_by_id(message_ids=every)
        assert sorted(m.id for m in left) == ["alice/0", "alice/1", "mallory/0", "mallory/1"]
        runs = await workflows.list_workflow_runs(workflow_name="w")
        assert sorted(r.run_id for r in runs.items) == ["alice", "mallory"]

    @pytest.mark.parametrize(
        "value", [{"$ne": None}, {"$regex": ".*"}, ["alice", "mallory"], 1, "", " "], ids=repr
    )
    async def test_an_operator_in_place_of_a_resource_id_is_refused(
        self, cs_store: Store, value: Any
    ) -> None:
        await self.two_resources(cs_store)
        memory, workflows = cs_store.memory, cs_store.workflows
        with pytest.raises(ValidationError, match="resource_id"):
            await memory.get_thread_by_id(thread_id="ta", resource_id=value)
        with pytest.raises(ValidationError, match="resource_id"):
            await memory.list_messages(thread_id="ta", resource_id=value)
        with pytest.raises(ValidationError, match="resource_id"):
            await memory.list_threads(filter={"resource_id": value})
        with pytest.raises(ValidationError, match="resource_id"):
            await workflows.list_workflow_runs(resource_id=value)

    async def test_a_scope_given_in_both_spellings_is_refused(self, cs_store: Store) -> None:
        await self.two_resources(cs_store)
        for both in (
            {"resource_id": "alice", "resourceId": "mallory"},
            {"resourceId": "mallory", "resource_id": "mallory"},
        ):
            with pytest.raises(ValidationError, match="resource twice"):
                await cs_store.memory.list_threads(filter=both)
        page = await cs_store.memory.list_threads(filter={"resourceId": "mallory"})
        assert [t.id for t in page.items] == ["tm"]
