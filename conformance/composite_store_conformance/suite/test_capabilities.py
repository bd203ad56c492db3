"""Capability honesty: every flag a backend declares is exercised, and an off flag refuses.

Each test probes one capability the way a backend that claims it falsely would fail: a batch
that fails part-way, racing writers, readers racing a multi-record write, orders and filters
with traps in them. Where the flag is off the behaviour test is skipped with the reason, and
the operation it guards must raise ``UnsupportedOperationError`` instead of answering wrongly.

``list_scores_by_span`` and ``span_attribute_filters`` are exercised (both ways) next to the
rules of their domains, in ``ScoresSuite`` and ``ObservabilitySuite``.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from composite_store import (
    CompositeStoreError,
    ConflictError,
    Message,
    NotFoundError,
    Store,
    Thread,
    UnsupportedOperationError,
)
from composite_store.domains.base import Capabilities, Domain
from composite_store.schema import DOMAINS
from composite_store_conformance.base import Suite, capability_skip_reason
from composite_store_conformance.cases import at

__all__ = ["CapabilitiesSuite"]

#: Concurrent writers in the race tests: enough to interleave on any backend, quick on all.
WRITERS = 16

#: The flags each domain's rules depend on. One that is off changes a guarantee
#: (``atomic_batches``, ``concurrent_updates``, ``compare_and_set``, ``transactions``) or makes
#: an operation refuse (the others), so it must come with a reason (``Capabilities.reasons``).
RELIED_ON: dict[str, tuple[str, ...]] = {
    "memory": (
        "atomic_batches", "compare_and_set", "transactions", "sort_threads", "metadata_filters",
    ),
    "workflows": ("concurrent_updates",),
    "scores": ("list_scores_by_span",),
    "observability": ("atomic_batches", "span_attribute_filters"),
}


async def _domain(
    store: Store, name: str, capability: str | None = None, *, on: bool = True
) -> Any:
    """The domain ``name``, initialized and empty; skips when the store does not offer it or
    when ``capability`` is not ``on`` (claimed) / off (``on=False``) as the test needs."""
    domain = store.get(name)
    if domain is None:
        pytest.skip(f"{store.backend} does not offer the {name} domain")
    # init() first: a backend may learn its capabilities from the server (MongoDB has
    # transactions on a replica set only).
    await domain.init()
    if capability is not None and getattr(domain.capabilities, capability) is not on:
        pytest.skip(capability_skip_reason(domain, capability, needed_on=on))
    await domain.dangerously_clear_all()
    return domain


def _thread(tid: str, **kw: Any) -> Thread:
    kw.setdefault("created_at", at(0))
    kw.setdefault("updated_at", kw["created_at"])
    return Thread(id=tid, resource_id=kw.pop("resource_id", "u1"), title=tid, **kw)


def _message(mid: str, tid: str, seconds: float = 0, text: str | None = None) -> Message:
    return Message(
        id=mid,
        thread_id=tid,
        role="user",
        content={"format": 2, "parts": [{"type": "text", "text": text or f"text {mid}"}]},
        created_at=at(seconds),
    )


def _text(message: Message) -> str:
    return str(message.content.parts[0]["text"])


class CapabilitiesSuite(Suite):
    """Each declared capability holds; each missing one refuses (DESIGN.md sections 5, 10)."""

    #: Each test initializes the domain whose capability it probes (see ``_domain``).
    domains: ClassVar[tuple[str, ...]] = ()

    async def test_every_offered_domain_declares_capabilities(self, cs_store: Store) -> None:
        offered = {name: cs_store.get(name) for name in DOMAINS}
        assert any(offered.values()), f"{cs_store.backend} offers no domain at all"
        for name, domain in offered.items():
            if domain is not None:
                assert isinstance(domain, Domain) and domain.domain == name
                assert isinstance(domain.capabilities, Capabilities), (
                    f"{type(domain).__name__}.capabilities must be a Capabilities, "
                    f"not {type(domain.capabilities).__name__}"
                )

    @pytest.mark.parametrize("domain_name", sorted(RELIED_ON))
    async def test_a_flag_off_comes_with_a_reason(self, cs_store: Store, domain_name: str) -> None:
        domain = cs_store.get(domain_name)
        if domain is None:
            pytest.skip(f"{cs_store.backend} does not offer the {domain_name} domain")
        await domain.init()  # capabilities may come from the server
        capabilities = domain.capabilities
        unexplained = [
            flag for flag in RELIED_ON[domain_name]
            if not getattr(capabilities, flag) and not capabilities.reason(flag)
        ]
        assert not unexplained, (
            f"{type(domain).__name__} turns off {unexplained} without a reason: give one in "
            f"Capabilities(..., reasons={{{unexplained[0]!r}: 'why'}})"
        )
        for flag, reason in capabilities.reasons.items():
            assert isinstance(reason, str) and reason.strip(), f"empty reason for {flag}"

    # -- atomic_batches --------------------------------------------------------------------------

    async def test_atomic_batches_a_failing_batch_leaves_nothing(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "atomic_batches")
        await memory.save_thread(thread=_thread("t1"))
        await memory.save_messages(messages=[_message("m0", "t1", 0, "original")])
        before = await memory.get_thread_by_id(thread_id="t1")
        # Rewrite m0, add m1 and m2, and one message for a thread that does not exist: whatever
        # order the backend writes in, none of it may stay.
        batch = [
            _message("m0", "t1", 0, "rewritten"),
            _message("m1", "t1", 1),
            _message("m2", "t1", 2),
            _message("m3", "missing-thread", 3),
        ]
        with pytest.raises(NotFoundError, match="missing-thread"):
            await memory.save_messages(messages=batch)
        kept = await memory.list_messages_by_id(message_ids=["m0", "m1", "m2", "m3"])
        assert [(m.id, _text(m)) for m in kept] == [("m0", "original")]
        after = await memory.get_thread_by_id(thread_id="t1")
        assert after is not None and before is not None
        assert after.updated_at == before.updated_at, "a failed batch bumped updatedAt"

    @pytest.mark.parametrize(
        "payload",
        [
            pytest.param("nul \u0000 byte", id="nul"),
            pytest.param("lone \ud800 surrogate", id="surrogate"),
        ],
    )
    async def test_atomic_batches_a_payload_the_backend_refuses(
        self, cs_store: Store, payload: str
    ) -> None:
        memory = await _domain(cs_store, "memory", "atomic_batches")
        await memory.save_thread(thread=_thread("t1"))
        batch: list[Any] = [_message(f"m{i}", "t1", i) for i in range(3)]
        # As a dict: a Message record would refuse the payload before the store sees it.
        odd = {
            "id": "odd",
            "threadId": "t1",
            "role": "user",
            "content": {"format": 2, "parts": [{"type": "text", "text": payload}]},
            "createdAt": at(1.5),
        }
        batch.insert(2, odd)
        try:
            await memory.save_messages(messages=batch)
        except CompositeStoreError:
            stored = await memory.list_messages(thread_id="t1", per_page=False)
            assert stored.items == [], "a refused batch was half-written"
        else:
            stored = await memory.list_messages(thread_id="t1", per_page=False)
            assert [m.id for m in stored.items] == ["m0", "m1", "odd", "m2"]

    # -- concurrent_updates ----------------------------------------------------------------------

    async def test_concurrent_updates_keep_every_step_result(self, cs_store: Store) -> None:
        workflows = await _domain(cs_store, "workflows", "concurrent_updates")
        await workflows.persist_workflow_snapshot(
            workflow_name="wf", run_id="r1", snapshot={"status": "running", "context": {}}
        )
        await asyncio.gather(
            *(
                workflows.update_workflow_results(
                    workflow_name="wf", run_id="r1", step_id=f"s{i}", result={"n": i},
                    request_context={f"k{i}": i},
                )
                for i in range(WRITERS)
            )
        )
        snapshot = await workflows.load_workflow_snapshot(workflow_name="wf", run_id="r1")
        assert snapshot is not None
        assert snapshot["context"] == {f"s{i}": {"n": i} for i in range(WRITERS)}
        assert snapshot["requestContext"] == {f"k{i}": i for i in range(WRITERS)}

    async def test_concurrent_updates_creating_the_run_keep_every_step(
        self, cs_store: Store
    ) -> None:
        workflows = await _domain(cs_store, "workflows", "concurrent_updates")
        # No snapshot yet: every writer races to create it.
        await asyncio.gather(
            *(
                workflows.update_workflow_results(
                    workflow_name="wf", run_id="new", step_id=f"s{i}", result=i
                )
                for i in range(WRITERS)
            )
        )
        snapshot = await workflows.load_workflow_snapshot(workflow_name="wf", run_id="new")
        assert snapshot is not None
        assert snapshot["context"] == {f"s{i}": i for i in range(WRITERS)}
        runs = await workflows.list_workflow_runs(workflow_name="wf")
        assert [r.run_id for r in runs.items] == ["new"]

    async def test_concurrent_updates_keep_every_state_key(self, cs_store: Store) -> None:
        workflows = await _domain(cs_store, "workflows", "concurrent_updates")
        await workflows.persist_workflow_snapshot(
            workflow_name="wf", run_id="r1", snapshot={"status": "running", "context": {}}
        )
        # Each writer also rewrites the snapshot with one more step, so a lost update shows.
        await asyncio.gather(
            *(
                coro
                for i in range(WRITERS)
                for coro in (
                    workflows.update_workflow_state(
                        workflow_name="wf", run_id="r1", opts={f"key{i}": i}
                    ),
                    workflows.update_workflow_results(
                        workflow_name="wf", run_id="r1", step_id=f"s{i}", result=i
                    ),
                )
            )
        )
        snapshot = await workflows.load_workflow_snapshot(workflow_name="wf", run_id="r1")
        assert snapshot is not None
        assert {k: snapshot.get(k) for k in (f"key{i}" for i in range(WRITERS))} == {
            f"key{i}": i for i in range(WRITERS)
        }
        assert snapshot["context"] == {f"s{i}": i for i in range(WRITERS)}

    # -- compare_and_set -------------------------------------------------------------------------

    async def test_compare_and_set_lets_exactly_one_racer_win(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "compare_and_set")
        await memory.update_resource(resource_id="u1", working_memory="v0")

        async def racer(i: int) -> bool:
            try:
                await memory.update_resource(
                    resource_id="u1", working_memory=f"v1-{i}", expected_working_memory="v0"
                )
            except ConflictError:
                return False
            return True

        won = [i for i, ok in enumerate(await asyncio.gather(*map(racer, range(WRITERS)))) if ok]
        assert len(won) == 1, f"{len(won)} writers won the same compare-and-set: {won}"
        got = await memory.get_resource_by_id(resource_id="u1")
        assert got is not None and got.working_memory == f"v1-{won[0]}"

    async def test_compare_and_set_on_threads_lets_exactly_one_racer_win(
        self, cs_store: Store
    ) -> None:
        memory = await _domain(cs_store, "memory", "compare_and_set")
        await memory.save_thread(thread=_thread("t1", metadata={"workingMemory": "v0"}))

        async def racer(i: int) -> bool:
            try:
                await memory.update_thread(
                    id="t1", metadata={"workingMemory": f"v1-{i}"}, expected_working_memory="v0"
                )
            except ConflictError:
                return False
            return True

        won = [i for i, ok in enumerate(await asyncio.gather(*map(racer, range(WRITERS)))) if ok]
        assert len(won) == 1, f"{len(won)} writers won the same compare-and-set: {won}"
        got = await memory.get_thread_by_id(thread_id="t1")
        assert got is not None and got.metadata == {"workingMemory": f"v1-{won[0]}"}

    # -- transactions ----------------------------------------------------------------------------

    async def test_transactions_readers_never_see_half_a_batch(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "transactions")
        await memory.save_thread(thread=_thread("t1"))
        size, batches = 25, 8
        seen: set[int] = set()
        done = asyncio.Event()

        async def writer() -> None:
            for b in range(batches):
                await memory.save_messages(
                    messages=[_message(f"b{b}-{i:02d}", "t1", b * 100 + i) for i in range(size)]
                )
                await asyncio.sleep(0)
            done.set()

        async def reader() -> None:
            while not done.is_set():
                page = await memory.list_messages(thread_id="t1", per_page=False)
                seen.add(len(page.items))
                await asyncio.sleep(0)

        await asyncio.gather(writer(), reader(), reader())
        partial = sorted(n for n in seen if n % size)
        assert not partial, f"readers saw {partial} messages: part of a {size}-message batch"

    async def test_transactions_delete_thread_takes_its_messages_at_once(
        self, cs_store: Store
    ) -> None:
        memory = await _domain(cs_store, "memory", "transactions")
        for t in range(4):
            await memory.save_thread(thread=_thread(f"t{t}"))
            await memory.save_messages(
                messages=[_message(f"t{t}-{i}", f"t{t}", i) for i in range(10)]
            )
        counts: set[int] = set()

        async def reader() -> None:
            for _ in range(20):
                page = await memory.list_messages(
                    thread_id=[f"t{t}" for t in range(4)], per_page=False
                )
                counts.add(len(page.items))
                await asyncio.sleep(0)

        await asyncio.gather(
            reader(), *(memory.delete_thread(thread_id=f"t{t}") for t in range(4))
        )
        assert all(n % 10 == 0 for n in counts), f"readers saw half-deleted threads: {counts}"

    # -- sort_threads ----------------------------------------------------------------------------

    async def test_sort_threads_orders_by_either_field_and_direction(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "sort_threads")
        # createdAt order a < b < c; updatedAt order c < a < b: the two orders disagree.
        for tid, created, updated in (("a", 0, 20), ("b", 10, 30), ("c", 20, 25.5)):
            await memory.save_thread(
                thread=_thread(tid, created_at=at(created), updated_at=at(updated))
            )
        expected = {
            ("createdAt", "ASC"): ["a", "b", "c"],
            ("createdAt", "DESC"): ["c", "b", "a"],
            ("updatedAt", "ASC"): ["a", "c", "b"],
            ("updatedAt", "DESC"): ["b", "c", "a"],
        }
        for (field, direction), order in expected.items():
            page = await memory.list_threads(order_by={"field": field, "direction": direction})
            assert [t.id for t in page.items] == order, f"order by {field} {direction}"

    async def test_sort_threads_off_refuses_other_orders(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "sort_threads", on=False)
        await memory.list_threads()  # the default order is always served
        with pytest.raises(UnsupportedOperationError, match="sort_threads"):
            await memory.list_threads(order_by={"field": "updatedAt", "direction": "DESC"})

    # -- metadata_filters ------------------------------------------------------------------------

    async def test_metadata_filters_match_exactly(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "metadata_filters")
        threads = {
            "gold1": {"tier": "gold", "n": 1},
            "gold-str": {"tier": "gold", "n": "1"},
            "silver": {"tier": "silver", "n": 1},
            "bare": None,
            "prefix": {"tier": "golden", "n": 1},
        }
        for i, (tid, metadata) in enumerate(threads.items()):
            await memory.save_thread(thread=_thread(tid, metadata=metadata, created_at=at(i)))
        other = _thread("other-user", resource_id="u2", metadata={"tier": "gold", "n": 1})
        await memory.save_thread(thread=other)

        async def matching(**metadata: Any) -> set[str]:
            page = await memory.list_threads(filter={"resource_id": "u1", "metadata": metadata})
            return {t.id for t in page.items}

        assert await matching(tier="gold") == {"gold1", "gold-str"}
        assert await matching(tier="gold", n=1) == {"gold1"}, "1 and '1' are different values"
        assert await matching(n="1") == {"gold-str"}
        assert await matching(tier="bronze") == set()
        assert await matching(missing="x") == set()

    async def test_metadata_filters_off_refuses(self, cs_store: Store) -> None:
        memory = await _domain(cs_store, "memory", "metadata_filters", on=False)
        with pytest.raises(UnsupportedOperationError, match="metadata_filters"):
            await memory.list_threads(filter={"metadata": {"tier": "gold"}})
