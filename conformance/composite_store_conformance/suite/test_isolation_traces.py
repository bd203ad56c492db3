"""Isolation of the observability domain's scoped reads: a trace listing filtered by a resource,
thread, user, session, organization, entity or run returns the traces whose root span is of it,
and the reads of one trace or span return its own spans only (see ``test_isolation``)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import OtelSpan, Span, Store, ValidationError
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import HOSTILE_IDS, JSON_LOOKALIKES, OWNERS, at

__all__ = ["ObservabilityIsolationSuite"]


#: The ``list_traces`` filters that scope a listing to an owner, and the span field each reads.
SCOPE_FILTERS = (
    "resource_id",
    "thread_id",
    "user_id",
    "session_id",
    "organization_id",
    "entity_id",
    "run_id",
    "request_id",
)


def _owned(owner: str) -> dict[str, Any]:
    return {name: owner for name in SCOPE_FILTERS}


def _root(owner: str) -> Span:
    """The root of trace ``owner``: every scope field is ``owner``, started when all are."""
    return Span(
        trace_id=owner,
        span_id="root",
        name=f"root of {owner}",
        span_type="AGENT_RUN",
        started_at=at(0),
        ended_at=at(1),
        created_at=at(0),
        metadata={"owner": owner},
        **_owned(owner),
    )


def _child(owner: str) -> Span:
    """A child span of trace ``owner`` that names alice in every scope field: a listing must
    match the root, never a child."""
    update = {"span_id": "child", "parent_span_id": "root", "name": f"child of {owner}"}
    return _root(owner).model_copy(update={**update, "metadata": None, **_owned("alice")})


class ObservabilityIsolationSuite(Suite):
    """Trace and span reads stay in their scope; ids compare exactly."""

    domains: ClassVar[tuple[str, ...]] = ("observability",)

    async def traces_of_every_owner(self, store: Store) -> None:
        await store.observability.batch_create_spans(
            records=[s for owner in OWNERS for s in (_root(owner), _child(owner))]
        )

    @pytest.mark.parametrize("field", SCOPE_FILTERS)
    async def test_list_traces_by_a_scope_lists_only_its_traces(
        self, cs_store: Store, field: str
    ) -> None:
        await self.traces_of_every_owner(cs_store)
        for owner in OWNERS:
            page = await cs_store.observability.list_traces(
                filters={field: owner}, pagination={"per_page": False}
            )
            assert [s.trace_id for s in page.items] == [owner], owner
            assert page.total == 1 and page.items[0].span_id == "root", owner

    async def test_combined_scopes_must_all_match(self, cs_store: Store) -> None:
        await self.traces_of_every_owner(cs_store)
        for owner in OWNERS:
            page = await cs_store.observability.list_traces(
                filters={"resource_id": "mallory", "user_id": owner}
            )
            expected = ["mallory"] if owner == "mallory" else []
            assert [s.trace_id for s in page.items] == expected, owner

    async def test_pages_of_a_scoped_listing_never_reach_another_scope(
        self, cs_store: Store
    ) -> None:
        # Two traces of alice started at the same instant as every other root.
        await self.traces_of_every_owner(cs_store)
        second = _root("alice").model_copy(update={"trace_id": "alice-2"})
        await cs_store.observability.create_span(span=second)
        seen: list[str] = []
        for page_no in (0, 1, 2):
            page = await cs_store.observability.list_traces(
                filters={"resource_id": "alice"}, pagination={"page": page_no, "per_page": 1}
            )
            seen.extend(s.trace_id for s in page.items)
        assert sorted(seen) == ["alice", "alice-2"]

    @pytest.mark.cs_requires("span_attribute_filters")
    async def test_metadata_filter_values_compare_exactly(self, cs_store: Store) -> None:
        await self.traces_of_every_owner(cs_store)
        for owner in OWNERS:
            page = await cs_store.observability.list_traces(filters={"metadata": {"owner": owner}})
            assert [s.trace_id for s in page.items] == [owner], owner

    @pytest.mark.cs_requires("span_attribute_filters")
    @pytest.mark.parametrize("field", ["metadata", "attributes", "scope"])
    async def test_json_filter_values_match_only_their_own_json_type(
        self, cs_store: Store, field: str
    ) -> None:
        obs = cs_store.observability
        await obs.batch_create_spans(
            records=[
                _root(name).model_copy(update={field: {"k": value}})
                for name, value in JSON_LOOKALIKES
            ]
        )
        for name, value in JSON_LOOKALIKES:
            page = await obs.list_traces(filters={field: {"k": value}})
            assert [s.trace_id for s in page.items] == [name], name

    async def test_trace_reads_return_only_the_trace_asked_for(self, cs_store: Store) -> None:
        await self.traces_of_every_owner(cs_store)
        obs = cs_store.observability
        for owner in OWNERS:
            trace = await obs.get_trace(trace_id=owner)
            assert trace is not None, owner
            assert {(s.trace_id, s.span_id) for s in trace.spans} == {
                (owner, "root"),
                (owner, "child"),
            }, owner
            light = await obs.get_trace_light(trace_id=owner)
            assert light is not None and {s.trace_id for s in light.spans} == {owner}, owner
            root = await obs.get_root_span(trace_id=owner)
            assert root is not None and root.trace_id == owner, owner
            child = await obs.get_span(trace_id=owner, span_id="child")
            assert child is not None and child.name == f"child of {owner}", owner
        assert await obs.get_trace(trace_id="nobody") is None

    async def test_trace_and_span_ids_never_run_together(self, cs_store: Store) -> None:
        # A key built by joining the two ids would take one pair for the other.
        obs = cs_store.observability
        first = _root("t:s").model_copy(update={"span_id": "1", "name": "first"})
        second = _root("t").model_copy(update={"span_id": "s:1", "name": "second"})
        await obs.batch_create_spans(records=[first, second])
        got = await obs.get_span(trace_id="t", span_id="s:1")
        assert got is not None and got.name == "second"
        got = await obs.get_span(trace_id="t:s", span_id="1")
        assert got is not None and got.name == "first"
        trace = await obs.get_trace(trace_id="t")
        assert trace is not None and [s.name for s in trace.spans] == ["second"]

    async def test_otel_spans_by_trace_stay_in_their_trace(self, cs_store: Store) -> None:
        obs = cs_store.observability
        await obs.batch_insert_otel_spans(
            records=[
                OtelSpan(
                    id=f"span-{n}",
                    trace_id=owner,
                    name="llm.call",
                    scope="mastra",
                    kind=1,
                    start_time=1_715_938_200_000_000_000,
                    end_time=1_715_938_201_000_000_000,
                    created_at=at(0),
                )
                for n, owner in enumerate(OWNERS)
            ]
        )
        for n, owner in enumerate(OWNERS):
            page = await obs.list_otel_spans(filters={"trace_id": owner})
            assert [s.id for s in page.items] == [f"span-{n}"], owner

    @pytest.mark.parametrize(
        "value", [{"$ne": None}, {"$regex": ".*"}, ["alice", "mallory"], 1, True], ids=repr
    )
    async def test_an_operator_in_place_of_an_id_is_refused(
        self, cs_store: Store, value: Any
    ) -> None:
        await self.traces_of_every_owner(cs_store)
        for field in SCOPE_FILTERS:
            with pytest.raises(ValidationError):
                await cs_store.observability.list_traces(filters={field: value})
        with pytest.raises(ValidationError):
            await cs_store.observability.list_otel_spans(filters={"trace_id": value})

    async def test_deleting_hostile_traces_removes_only_them(self, cs_store: Store) -> None:
        await self.traces_of_every_owner(cs_store)
        obs = cs_store.observability
        await obs.batch_delete_traces(trace_ids=list(HOSTILE_IDS))
        page = await obs.list_traces(pagination={"per_page": False})
        assert sorted(s.trace_id for s in page.items) == ["alice", "mallory"]
        trace = await obs.get_trace(trace_id="alice")
        assert trace is not None and len(trace.spans) == 2
