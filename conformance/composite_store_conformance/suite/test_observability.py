"""Observability domain behaviour: AI spans and traces (status, filters, ordering, updates) and
OpenTelemetry spans (nanosecond times, filters)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from composite_store import (
    NotFoundError,
    OrderBy,
    OtelSpan,
    Pagination,
    Span,
    Store,
    Trace,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store.domains.observability_filters import TEXT_FILTERS as TRACE_TEXT_FILTERS
from composite_store_conformance.base import Suite, capability_skip_reason
from composite_store_conformance.cases import DATE_BOUNDS, PAGINATION_EDGES, at

__all__ = ["ObservabilitySuite"]

EDGE_NAMES = ("total", "page", "per_page", "expected", "has_more")

UNICODE = "Grüße \u2013 你好 🚀"
#: 2024-05-17T09:30:00Z in nanoseconds, with sub-microsecond digits that a float would lose.
NANOS = 1_715_938_200_123_456_789


def span(
    trace: str, sid: str = "root", seconds: float = 0, parent: str | None = None, **kw: Any
) -> Span:
    """A span of ``trace`` started at ``at(seconds)``; a root unless ``parent`` is given."""
    kw.setdefault("name", f"{trace}/{sid}")
    kw.setdefault("span_type", "AGENT_RUN" if parent is None else "TOOL_CALL")
    kw.setdefault("created_at", at(seconds))
    return Span(trace_id=trace, span_id=sid, parent_span_id=parent, started_at=at(seconds), **kw)


def otel(sid: str, start: int = NANOS, **kw: Any) -> OtelSpan:
    kw.setdefault("name", "llm.call")
    kw.setdefault("trace_id", "ot1")
    kw.setdefault("scope", "mastra")
    kw.setdefault("kind", 1)
    kw.setdefault("end_time", start + 1_000)
    kw.setdefault("created_at", at(0))
    return OtelSpan(id=sid, start_time=start, **kw)


def trace_ids(items: list[Span]) -> list[str]:
    return [s.trace_id for s in items]


async def create(store: Store, *spans: Span) -> None:
    await store.observability.batch_create_spans(records=list(spans))


#: ``list_traces`` filters that match one text field of the root span exactly.
TEXT_FILTERS = [*(f for f in TRACE_TEXT_FILTERS if f != "trace_id"), "trace_id"]


class ObservabilitySuite(Suite):
    """Every rule of the observability domain (DESIGN.md sections 2, 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("observability",)

    # -- creating and reading spans --------------------------------------------------------------

    async def test_create_span_round_trips_every_field(self, cs_store: Store) -> None:
        full = span(
            "t1",
            "s1",
            parent="root",
            name=f"tool {UNICODE}",
            span_type="MODEL_GENERATION",
            is_event=True,
            ended_at=at(2),
            entity_type="agent",
            entity_id="agent-1",
            entity_name="Agent One",
            parent_entity_type="workflow",
            parent_entity_id="wf-1",
            parent_entity_name="Workflow",
            root_entity_type="workflow",
            root_entity_id="wf-1",
            root_entity_name="Workflow",
            user_id="user-1",
            organization_id="org-1",
            resource_id="res-1",
            run_id="run-1",
            session_id="sess-1",
            thread_id="thr-1",
            request_id="req-1",
            environment="production",
            service_name="svc",
            source="cloud",
            scope={"core": "1.0.0", "gitSha": "abcd"},
            metadata={"k": "v", "n": [1, 2.5, None], "nested": {"ok": True}},
            tags=["alpha", UNICODE],
            attributes={"model": "gpt", "usage": {"inputTokens": 10}},
            links=[{"traceId": "other", "spanId": "x"}],
            input={"messages": [{"role": "user", "content": UNICODE}]},
            output="plain text output",
            error={"message": "boom", "id": "E1"},
            request_context={"tenant": "acme"},
            updated_at=at(3),
        )
        created = await cs_store.observability.create_span(span=full)
        assert isinstance(created, Span) and created == full
        got = await cs_store.observability.get_span(trace_id="t1", span_id="s1")
        assert got == full
        assert got is not None and got.started_at.tzinfo is not None

    async def test_optional_fields_round_trip_as_none(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1"))
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None
        assert got.parent_span_id is None and got.ended_at is None and got.error is None
        assert got.input is None and got.tags is None and got.metadata is None
        assert got.is_event is False

    async def test_create_span_defaults_updated_at_to_created_at(self, cs_store: Store) -> None:
        created = await cs_store.observability.create_span(
            span={"traceId": "t1", "spanId": "s1", "name": "n", "spanType": "GENERIC",
                  "startedAt": "2024-05-17T09:30:00.123Z"}
        )
        assert created.updated_at == created.created_at
        got = await cs_store.observability.get_span(trace_id="t1", span_id="s1")
        assert got is not None and got.updated_at == created.created_at
        assert got.started_at == at(0)

    async def test_create_span_replaces_the_same_key(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1", name="first"))
        await cs_store.observability.create_span(span=span("t1", name="second"))
        trace = await cs_store.observability.get_trace(trace_id="t1")
        assert trace is not None and [s.name for s in trace.spans] == ["second"]

    async def test_same_span_id_in_two_traces_is_two_spans(self, cs_store: Store) -> None:
        await create(cs_store, span("t1", "s", name="one"), span("t2", "s", name="two"))
        a = await cs_store.observability.get_span(trace_id="t1", span_id="s")
        b = await cs_store.observability.get_span(trace_id="t2", span_id="s")
        assert a is not None and b is not None and (a.name, b.name) == ("one", "two")

    async def test_get_missing_returns_none(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1"))
        assert await cs_store.observability.get_span(trace_id="t1", span_id="nope") is None
        assert await cs_store.observability.get_span(trace_id="nope", span_id="root") is None
        assert await cs_store.observability.get_root_span(trace_id="nope") is None
        assert await cs_store.observability.get_trace(trace_id="nope") is None
        assert await cs_store.observability.get_trace_light(trace_id="nope") is None

    @pytest.mark.parametrize(
        ("change", "match"),
        [
            ({"trace_id": ""}, "trace_id|traceId"),
            ({"span_id": "  "}, "blank"),
            ({"span_type": ""}, "span_type|spanType"),
            ({"started_at": None}, "started_at|startedAt"),
            ({"started_at": datetime(2024, 1, 1)}, "naive"),
            ({"ended_at": "yesterday"}, "ended_at|endedAt"),
            ({"tags": "alpha"}, "tags"),
            ({"metadata": ["not", "a", "dict"]}, "metadata"),
            ({"is_event": "maybe"}, "is_event|isEvent"),
        ],
    )
    async def test_invalid_span_is_rejected_and_not_written(
        self, cs_store: Store, change: dict[str, Any], match: str
    ) -> None:
        data = span("bad", "s1").model_dump()
        data.update(change)
        with pytest.raises(ValidationError, match=match):
            await cs_store.observability.create_span(span=data)
        assert await cs_store.observability.get_trace(trace_id="bad") is None

    async def test_batch_create_validates_everything_before_writing(self, cs_store: Store) -> None:
        good = span("t1")
        bad = span("t1", "child", 1, parent="root").model_dump()
        bad["started_at"] = datetime(2024, 1, 1)
        with pytest.raises(ValidationError, match=r"records\[1\]"):
            await cs_store.observability.batch_create_spans(records=[good, bad])
        assert await cs_store.observability.get_trace(trace_id="t1") is None
        with pytest.raises(ValidationError, match="records must be a list"):
            await cs_store.observability.batch_create_spans(records=good)  # type: ignore[arg-type]

    async def test_batch_create_last_occurrence_wins(self, cs_store: Store) -> None:
        created = await cs_store.observability.batch_create_spans(
            records=[span("t1", name="first"), span("t1", name="last")]
        )
        assert [s.name for s in created] == ["first", "last"]
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None and got.name == "last"
        assert await cs_store.observability.batch_create_spans(records=[]) == []

    @pytest.mark.cs_requires("atomic_batches")
    async def test_concurrent_batches_lose_no_span(self, cs_store: Store) -> None:
        await asyncio.gather(
            *(
                cs_store.observability.batch_create_spans(
                    records=[span(f"t{b}")] + [span(f"t{b}", f"c{i}", i, parent="root")
                                               for i in range(5)]
                )
                for b in range(8)
            )
        )
        for b in range(8):
            trace = await cs_store.observability.get_trace(trace_id=f"t{b}")
            assert trace is not None and len(trace.spans) == 6
        assert (await cs_store.observability.list_traces()).total == 8

    async def test_blank_lookup_keys_are_rejected(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="trace_id must be a non-empty string"):
            await cs_store.observability.get_trace(trace_id="")
        with pytest.raises(ValidationError, match="span_id must be a non-empty string"):
            await cs_store.observability.get_span(trace_id="t", span_id=" ")
        with pytest.raises(ValidationError, match="trace_id must be a non-empty string"):
            await cs_store.observability.get_root_span(trace_id="")

    async def test_large_and_unicode_payloads(self, cs_store: Store) -> None:
        big = {"text": UNICODE * 5000, "items": [{"i": i, "s": UNICODE} for i in range(500)]}
        await cs_store.observability.create_span(
            span=span("t1", input=big, output=[big, UNICODE], attributes={"k": UNICODE * 300})
        )
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None and got.input == big and got.output == [big, UNICODE]
        assert got.attributes == {"k": UNICODE * 300}

    async def test_timestamps_round_trip_in_utc_with_milliseconds(self, cs_store: Store) -> None:
        plus_two = datetime(2024, 5, 17, 11, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
        await cs_store.observability.create_span(
            span=span("t1").model_copy(update={"started_at": plus_two}).model_dump()
        )
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None
        assert got.started_at == datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)
        assert got.started_at.utcoffset() == timedelta(0)

    # -- traces ----------------------------------------------------------------------------------

    async def test_get_trace_returns_every_span_oldest_first(self, cs_store: Store) -> None:
        await create(
            cs_store,
            span("t1", "c2", 2, parent="root"),
            span("t1", "root", 0),
            span("t1", "c1b", 1, parent="root"),
            span("t1", "c1a", 1, parent="root"),
            span("t2", "root", 0),
        )
        trace = await cs_store.observability.get_trace(trace_id="t1")
        assert isinstance(trace, Trace) and trace.trace_id == "t1"
        assert [s.span_id for s in trace.spans] == ["root", "c1a", "c1b", "c2"]
        assert trace.root is not None and trace.root.span_id == "root"

    async def test_get_root_span(self, cs_store: Store) -> None:
        await create(cs_store, span("t1", "c1", 1, parent="root"), span("t1", "root", 0))
        root = await cs_store.observability.get_root_span(trace_id="t1")
        assert root is not None and root.span_id == "root" and root.is_root
        await cs_store.observability.create_span(span=span("t2", "c1", 1, parent="elsewhere"))
        assert await cs_store.observability.get_root_span(trace_id="t2") is None

    async def test_trace_light_omits_the_heavy_payloads(self, cs_store: Store) -> None:
        heavy: dict[str, Any] = {"input": {"q": UNICODE}, "output": {"a": 1},
                                 "attributes": {"model": "m"}, "metadata": {"k": "v"}}
        await create(
            cs_store,
            span("t1", ended_at=at(5), tags=["x"], error={"message": "e"}, entity_id="a1",
                 **heavy),
            span("t1", "c1", 1, parent="root", **heavy),
        )
        light = await cs_store.observability.get_trace_light(trace_id="t1")
        full = await cs_store.observability.get_trace(trace_id="t1")
        assert light is not None and full is not None
        assert [s.span_id for s in light.spans] == [s.span_id for s in full.spans]
        for lean, whole in zip(light.spans, full.spans, strict=True):
            assert (lean.input, lean.output, lean.attributes, lean.metadata) == (None,) * 4
            assert whole.input == {"q": UNICODE} and whole.metadata == {"k": "v"}
            kept = lean.model_dump(exclude={"input", "output", "attributes", "metadata"})
            assert kept == whole.model_dump(exclude={"input", "output", "attributes", "metadata"})
        assert light.status == "error" and light.spans[0].tags == ["x"]

    @pytest.mark.parametrize(
        ("root", "expected"),
        [
            ({}, "running"),
            ({"ended_at": at(5)}, "success"),
            ({"ended_at": at(5), "error": {"message": "failed"}}, "error"),
            ({"error": {"message": "failed"}}, "error"),
            ({"ended_at": at(5), "error": "a plain string error"}, "error"),
        ],
    )
    async def test_trace_status_derives_from_the_root_span(
        self, cs_store: Store, root: dict[str, Any], expected: str
    ) -> None:
        # A failed child does not fail the trace: only the root decides.
        await create(
            cs_store, span("t1", **root), span("t1", "c1", 1, parent="root", error={"m": "child"})
        )
        page = await cs_store.observability.list_traces()
        assert [(s.trace_id, s.status) for s in page.items] == [("t1", expected)]
        trace = await cs_store.observability.get_trace(trace_id="t1")
        assert trace is not None and trace.status == expected
        filtered = await cs_store.observability.list_traces(filters={"status": expected})
        assert trace_ids(filtered.items) == ["t1"]

    async def test_trace_without_root_is_running_and_not_listed(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1", "c1", 1, parent="root"))
        trace = await cs_store.observability.get_trace(trace_id="t1")
        assert trace is not None and trace.root is None and trace.status == "running"
        assert (await cs_store.observability.list_traces()).items == []

    async def test_batch_delete_traces_deletes_every_span(self, cs_store: Store) -> None:
        for t in ("t1", "t2", "t3"):
            await create(cs_store, span(t), span(t, "c1", 1, parent="root"),
                         span(t, "c2", 2, parent="c1"))
        await cs_store.observability.batch_delete_traces(trace_ids=["t1", "t3", "unknown"])
        for t in ("t1", "t3"):
            assert await cs_store.observability.get_trace(trace_id=t) is None
            assert await cs_store.observability.get_span(trace_id=t, span_id="c2") is None
        kept = await cs_store.observability.get_trace(trace_id="t2")
        assert kept is not None and len(kept.spans) == 3
        await cs_store.observability.batch_delete_traces(trace_ids=[])
        assert trace_ids((await cs_store.observability.list_traces()).items) == ["t2"]
        with pytest.raises(ValidationError, match="trace_ids must be a list"):
            await cs_store.observability.batch_delete_traces(trace_ids="t2")

    # -- updates ---------------------------------------------------------------------------------

    async def test_update_span_is_partial_and_bumps_updated_at(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(
            span=span("t1", metadata={"a": 1}, attributes={"model": "m"}, updated_at=at(0))
        )
        await cs_store.observability.update_span(
            trace_id="t1",
            span_id="root",
            updates={"endedAt": at(9), "output": {"answer": UNICODE}, "attributes": {"x": 2}},
        )
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None
        assert got.ended_at == at(9) and got.output == {"answer": UNICODE}
        assert got.attributes == {"x": 2}  # a given field replaces, it does not merge
        assert got.metadata == {"a": 1} and got.name == "t1/root"  # the rest is untouched
        assert got.created_at == at(0)
        assert got.updated_at is not None and got.updated_at > at(0)
        assert got.status == "success"

    async def test_update_span_can_clear_optional_fields(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(
            span=span("t1", ended_at=at(3), error={"m": "x"}, tags=["a"])
        )
        await cs_store.observability.update_span(
            trace_id="t1", span_id="root", updates={"ended_at": None, "error": None}
        )
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None and got.ended_at is None and got.error is None
        assert got.tags == ["a"] and got.status == "running"

    async def test_update_span_sets_an_error(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1"))
        await cs_store.observability.update_span(
            trace_id="t1", span_id="root", updates={"error": {"message": "boom"}, "endedAt": at(1)}
        )
        page = await cs_store.observability.list_traces()
        assert page.items[0].status == "error"

    async def test_update_missing_span_raises_not_found(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1"))
        with pytest.raises(NotFoundError, match="missing"):
            await cs_store.observability.update_span(
                trace_id="t1", span_id="missing", updates={"name": "x"}
            )
        with pytest.raises(NotFoundError):
            await cs_store.observability.update_span(
                trace_id="nope", span_id="root", updates={"name": "x"}
            )

    @pytest.mark.parametrize(
        ("updates", "match"),
        [
            ({"spanId": "other"}, "cannot change"),
            ({"trace_id": "other"}, "cannot change"),
            ({"createdAt": at(1)}, "cannot change"),
            ({"updated_at": at(1)}, "cannot change"),
            ({"colour": "red"}, "colour"),
            ({"name": None}, "name cannot be cleared"),
            ({"started_at": None}, "started_at cannot be cleared"),
            ({"endedAt": datetime(2024, 1, 1)}, "naive"),
            ({"tags": [1, 2]}, "tags"),
        ],
    )
    async def test_invalid_update_is_rejected_and_not_written(
        self, cs_store: Store, updates: dict[str, Any], match: str
    ) -> None:
        await cs_store.observability.create_span(span=span("t1"))
        before = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        with pytest.raises(ValidationError, match=match):
            await cs_store.observability.update_span(trace_id="t1", span_id="root", updates=updates)
        assert await cs_store.observability.get_span(trace_id="t1", span_id="root") == before

    async def test_batch_update_spans_applies_in_order(self, cs_store: Store) -> None:
        await create(cs_store, span("t1"), span("t1", "c1", 1, parent="root"))
        await cs_store.observability.batch_update_spans(
            records=[
                {"trace_id": "t1", "span_id": "c1", "updates": {"ended_at": at(2)}},
                {"traceId": "t1", "spanId": "root", "updates": {"endedAt": at(3)}},
                {"trace_id": "t1", "span_id": "c1", "updates": {"output": "done",
                                                                  "ended_at": at(4)}},
            ]
        )
        c1 = await cs_store.observability.get_span(trace_id="t1", span_id="c1")
        root = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert c1 is not None and root is not None
        assert c1.ended_at == at(4) and c1.output == "done"
        assert root.ended_at == at(3)
        assert root.updated_at is not None and root.updated_at > at(0)
        await cs_store.observability.batch_update_spans(records=[])

    @pytest.mark.cs_requires("atomic_batches")
    async def test_batch_update_with_a_missing_span_writes_nothing(self, cs_store: Store) -> None:
        await create(cs_store, span("t1"), span("t1", "c1", 1, parent="root"))
        before = await cs_store.observability.get_trace(trace_id="t1")
        with pytest.raises(NotFoundError, match="ghost"):
            await cs_store.observability.batch_update_spans(
                records=[
                    {"trace_id": "t1", "span_id": "root", "updates": {"ended_at": at(5)}},
                    {"trace_id": "t1", "span_id": "ghost", "updates": {"ended_at": at(5)}},
                ]
            )
        assert await cs_store.observability.get_trace(trace_id="t1") == before

    async def test_batch_update_validates_records(self, cs_store: Store) -> None:
        await cs_store.observability.create_span(span=span("t1"))
        with pytest.raises(ValidationError, match=r"records\[0\]: unknown keys \['spanid'\]"):
            await cs_store.observability.batch_update_spans(
                records=[{"trace_id": "t1", "spanid": "root", "updates": {}}]
            )
        with pytest.raises(ValidationError, match=r"records\[0\].span_id"):
            await cs_store.observability.batch_update_spans(
                records=[{"trace_id": "t1", "updates": {"name": "x"}}]
            )
        with pytest.raises(ValidationError, match=r"records\[1\].updates"):
            await cs_store.observability.batch_update_spans(
                records=[
                    {"trace_id": "t1", "span_id": "root", "updates": {"name": "ok"}},
                    {"trace_id": "t1", "span_id": "root", "updates": "nope"},
                ]
            )
        got = await cs_store.observability.get_span(trace_id="t1", span_id="root")
        assert got is not None and got.name == "t1/root"

    # -- listing traces --------------------------------------------------------------------------

    async def test_list_traces_returns_root_spans_newest_first(self, cs_store: Store) -> None:
        await create(
            cs_store,
            span("t1", seconds=0),
            span("t1", "c1", 5, parent="root"),
            span("t2", seconds=2, ended_at=at(3)),
            span("t3", seconds=1),
        )
        page = await cs_store.observability.list_traces()
        assert trace_ids(page.items) == ["t2", "t3", "t1"]
        assert all(s.parent_span_id is None for s in page.items)
        assert [s.status for s in page.items] == ["success", "running", "running"]
        assert page.total == 3 and page.page == 0 and page.per_page == 10
        assert page.has_more is False

    async def test_list_traces_defaults_to_ten_a_page(self, cs_store: Store) -> None:
        await create(cs_store, *(span(f"t{i:02d}", seconds=i) for i in range(12)))
        page = await cs_store.observability.list_traces()
        assert len(page.items) == 10 and page.has_more is True and page.total == 12
        assert page.items[0].trace_id == "t11"

    @pytest.mark.parametrize(EDGE_NAMES, PAGINATION_EDGES)
    async def test_list_traces_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        # Newest first: row i (in listing order) starts at at(total - i).
        await create(cs_store, *(span(f"t{i}", seconds=total - i) for i in range(total)))
        result = await cs_store.observability.list_traces(
            pagination=Pagination(page=page, per_page=per_page)
        )
        assert trace_ids(result.items) == [f"t{i}" for i in expected]
        assert result.total == total and result.has_more is has_more
        assert result.per_page == per_page and result.page == page

    async def test_list_traces_ties_break_by_trace_id_in_the_same_direction(
        self, cs_store: Store
    ) -> None:
        await create(cs_store, *(span(f"t{i}", seconds=0) for i in range(7)))
        newest: list[str] = []
        for p in range(4):
            page = await cs_store.observability.list_traces(pagination={"page": p, "perPage": 2})
            newest += trace_ids(page.items)
        assert newest == [f"t{i}" for i in reversed(range(7))]
        oldest = await cs_store.observability.list_traces(
            order_by=OrderBy(field="startedAt", direction="ASC")
        )
        assert trace_ids(oldest.items) == [f"t{i}" for i in range(7)]

    async def test_list_traces_order_by_ended_at_puts_running_traces_as_latest(
        self, cs_store: Store
    ) -> None:
        await create(
            cs_store,
            span("a", seconds=0, ended_at=at(10)),
            span("b", seconds=1, ended_at=at(5)),
            span("r1", seconds=2),
            span("r2", seconds=3),
            span("c", seconds=4, ended_at=at(10)),
        )
        desc = await cs_store.observability.list_traces(order_by={"field": "endedAt"})
        assert trace_ids(desc.items) == ["r2", "r1", "c", "a", "b"]
        asc = await cs_store.observability.list_traces(
            order_by={"field": "ended_at", "direction": "asc"}
        )
        assert trace_ids(asc.items) == ["b", "a", "c", "r1", "r2"]
        # Paging through a NULL-heavy order neither skips nor repeats a trace.
        seen: list[str] = []
        for p in range(3):
            page = await cs_store.observability.list_traces(
                order_by={"field": "endedAt", "direction": "DESC"},
                pagination=Pagination(page=p, per_page=2),
            )
            seen += trace_ids(page.items)
        assert seen == trace_ids(desc.items)

    async def test_list_traces_rejects_bad_order_and_pagination(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="cannot order by 'name'"):
            await cs_store.observability.list_traces(order_by={"field": "name"})
        with pytest.raises(ValidationError, match="per_page must be >= 0"):
            await cs_store.observability.list_traces(pagination={"per_page": -1})
        with pytest.raises(ValidationError, match="page must be 0 when per_page is False"):
            await cs_store.observability.list_traces(pagination={"page": 2, "per_page": False})

    async def test_per_page_zero_and_include_total(self, cs_store: Store) -> None:
        await create(cs_store, *(span(f"t{i}", seconds=i) for i in range(3)))
        empty = await cs_store.observability.list_traces(pagination=Pagination(per_page=0))
        assert empty.items == [] and empty.total == 0 and empty.has_more is False
        page = await cs_store.observability.list_traces(
            pagination=Pagination(per_page=2), include_total=False
        )
        assert page.total is None and page.has_more is True
        assert trace_ids(page.items) == ["t2", "t1"]

    @pytest.mark.parametrize("name", TEXT_FILTERS)
    async def test_list_traces_text_filters(self, cs_store: Store, name: str) -> None:
        def valued(value: str) -> dict[str, str]:
            return {} if name == "trace_id" else {name: value}

        # The child of "miss" carries the wanted value too: filters match root spans only.
        await create(
            cs_store,
            span("hit", seconds=0, **valued("X")),
            span("miss", seconds=1, **valued("Y")),
            span("miss", "c1", 2, parent="root", **valued("X")),
        )
        value = "hit" if name == "trace_id" else "X"
        page = await cs_store.observability.list_traces(filters={name: value})
        assert trace_ids(page.items) == ["hit"] and page.total == 1
        camel = "".join(w if i == 0 else w.title() for i, w in enumerate(name.split("_")))
        page = await cs_store.observability.list_traces(filters={camel: value})
        assert trace_ids(page.items) == ["hit"]

    async def test_list_traces_filters_combine_with_and(self, cs_store: Store) -> None:
        await create(
            cs_store,
            span("a", seconds=0, user_id="u1", environment="prod"),
            span("b", seconds=1, user_id="u1", environment="dev"),
            span("c", seconds=2, user_id="u2", environment="prod"),
        )
        page = await cs_store.observability.list_traces(
            filters={"user_id": "u1", "environment": "prod"}
        )
        assert trace_ids(page.items) == ["a"] and page.total == 1

    @pytest.mark.parametrize(("start", "end", "start_exclusive", "end_exclusive", "expected"),
                             DATE_BOUNDS)
    async def test_list_traces_started_at_bounds(
        self,
        cs_store: Store,
        start: float | None,
        end: float | None,
        start_exclusive: bool,
        end_exclusive: bool,
        expected: list[int],
    ) -> None:
        await create(cs_store, *(span(f"t{i}", seconds=i) for i in range(5)))
        page = await cs_store.observability.list_traces(
            filters={"started_at": {
                "start": None if start is None else at(start),
                "end": None if end is None else at(end),
                "start_exclusive": start_exclusive,
                "end_exclusive": end_exclusive,
            }},
            order_by={"field": "startedAt", "direction": "ASC"},
        )
        assert trace_ids(page.items) == [f"t{i}" for i in expected]

    @pytest.mark.parametrize(("start", "end", "start_exclusive", "end_exclusive", "expected"),
                             DATE_BOUNDS)
    async def test_list_traces_ended_at_bounds_exclude_running(
        self,
        cs_store: Store,
        start: float | None,
        end: float | None,
        start_exclusive: bool,
        end_exclusive: bool,
        expected: list[int],
    ) -> None:
        await create(
            cs_store,
            *(span(f"t{i}", seconds=i - 10, ended_at=at(i)) for i in range(5)),
            span("running", seconds=0),
        )
        page = await cs_store.observability.list_traces(
            filters={"endedAt": {
                "start": None if start is None else at(start),
                "end": None if end is None else at(end),
                "startExclusive": start_exclusive,
                "endExclusive": end_exclusive,
            }},
            order_by={"field": "endedAt", "direction": "ASC"},
        )
        assert trace_ids(page.items) == [f"t{i}" for i in expected]

    async def test_an_open_ended_at_range_still_excludes_running(self, cs_store: Store) -> None:
        await create(cs_store, span("done", ended_at=at(1)), span("running", seconds=1))
        page = await cs_store.observability.list_traces(filters={"ended_at": {}})
        assert trace_ids(page.items) == ["done"]

    async def test_list_traces_status_filter(self, cs_store: Store) -> None:
        await create(
            cs_store,
            span("ok", seconds=0, ended_at=at(1)),
            span("failed", seconds=1, ended_at=at(2), error={"m": "x"}),
            span("crashed", seconds=2, error={"m": "y"}),
            span("busy", seconds=3),
        )
        for status, expected in (
            ("success", ["ok"]),
            ("error", ["crashed", "failed"]),
            ("running", ["busy"]),
        ):
            page = await cs_store.observability.list_traces(filters={"status": status})
            assert trace_ids(page.items) == expected, status
            assert page.total == len(expected)
        with pytest.raises(ValidationError, match="status"):
            await cs_store.observability.list_traces(filters={"status": "failed"})

    async def test_list_traces_has_child_error(self, cs_store: Store) -> None:
        await create(
            cs_store,
            span("clean", seconds=0),
            span("clean", "c1", 1, parent="root"),
            span("child", seconds=1),
            span("child", "c1", 2, parent="root", error={"m": "deep"}),
            span("rooterr", seconds=2, error={"m": "top"}),
        )
        page = await cs_store.observability.list_traces(filters={"has_child_error": True})
        assert trace_ids(page.items) == ["rooterr", "child"]
        page = await cs_store.observability.list_traces(filters={"hasChildError": False})
        assert trace_ids(page.items) == ["clean"]

    async def test_list_traces_tags_must_all_be_present(self, cs_store: Store) -> None:
        await create(
            cs_store,
            span("ab", seconds=0, tags=["a", "b"]),
            span("a", seconds=1, tags=["a", UNICODE]),
            span("none", seconds=2),
            span("none", "c1", 3, parent="root", tags=["a", "b"]),
        )
        assert trace_ids((await cs_store.observability.list_traces(
            filters={"tags": ["a"]})).items) == ["a", "ab"]
        assert trace_ids((await cs_store.observability.list_traces(
            filters={"tags": ["a", "b"]})).items) == ["ab"]
        assert trace_ids((await cs_store.observability.list_traces(
            filters={"tags": [UNICODE]})).items) == ["a"]
        assert (await cs_store.observability.list_traces(filters={"tags": ["zzz"]})).items == []

    @pytest.mark.cs_requires("span_attribute_filters")
    @pytest.mark.parametrize("column", ["metadata", "attributes", "scope"])
    async def test_list_traces_json_key_value_filters(self, cs_store: Store, column: str) -> None:
        def valued(value: dict[str, Any]) -> dict[str, Any]:
            return {column: value}

        await create(
            cs_store,
            span("a", seconds=0, **valued({"kind": "x", "n": 1, "flag": True})),
            span("b", seconds=1, **valued({"kind": "x", "n": 2})),
            span("c", seconds=2, **valued({"kind": "y"})),
            span("d", seconds=3),
            span("d", "c1", 4, parent="root", **valued({"kind": "x"})),
        )
        page = await cs_store.observability.list_traces(filters={column: {"kind": "x"}})
        assert trace_ids(page.items) == ["b", "a"] and page.total == 2
        page = await cs_store.observability.list_traces(filters={column: {"kind": "x", "n": 2}})
        assert trace_ids(page.items) == ["b"]
        page = await cs_store.observability.list_traces(filters={column: {"flag": True}})
        assert trace_ids(page.items) == ["a"]
        page = await cs_store.observability.list_traces(filters={column: {"missing": "x"}})
        assert page.items == []

    async def test_json_filters_are_refused_where_the_capability_is_off(
        self, cs_store: Store
    ) -> None:
        if cs_store.observability.capabilities.span_attribute_filters:
            pytest.skip(
                capability_skip_reason(
                    cs_store.observability, "span_attribute_filters", needed_on=False
                )
            )
        for column in ("metadata", "attributes", "scope"):
            with pytest.raises(UnsupportedOperationError, match="span_attribute_filters"):
                await cs_store.observability.list_traces(filters={column: {"k": "v"}})
        with pytest.raises(UnsupportedOperationError, match="span_attribute_filters"):
            await cs_store.observability.list_otel_spans(filters={"attributes": {"k": "v"}})

    async def test_list_traces_rejects_bad_filters(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="colour"):
            await cs_store.observability.list_traces(filters={"colour": "red"})
        with pytest.raises(ValidationError, match="invalid metadata filter key"):
            await cs_store.observability.list_traces(filters={"metadata": {"a'; drop --": 1}})
        with pytest.raises(ValidationError, match="must be a string, number or boolean"):
            await cs_store.observability.list_traces(filters={"attributes": {"k": {"nested": 1}}})
        with pytest.raises(ValidationError, match="naive"):
            await cs_store.observability.list_traces(
                filters={"started_at": {"start": datetime(2024, 1, 1)}}
            )
        with pytest.raises(ValidationError, match="filters must be a TraceFilter or a dict"):
            await cs_store.observability.list_traces(filters=["user_id"])  # type: ignore[arg-type]

    # -- OpenTelemetry spans ---------------------------------------------------------------------

    async def test_otel_spans_round_trip_with_exact_nanoseconds(self, cs_store: Store) -> None:
        biggest = 2**63 - 1
        spans = [
            otel("s1", NANOS, parent_span_id="p", attributes={"http.method": "GET", "n": 1.5},
                 status={"code": 2, "message": UNICODE}, events=[{"name": "e", "t": 1}],
                 links=[{"traceId": "x"}], other={"resource": {"service": UNICODE}}),
            otel("s2", NANOS + 1, end_time=biggest, kind=0),
            otel("s3", 0, end_time=1, kind=4, other='{"raw":"text"}'),
        ]
        saved = await cs_store.observability.batch_insert_otel_spans(records=spans)
        assert saved == spans
        page = await cs_store.observability.list_otel_spans(pagination={"per_page": False})
        assert page.items == [spans[1], spans[0], spans[2]]
        got = page.items[1]
        assert got.start_time == 1_715_938_200_123_456_789 and isinstance(got.start_time, int)
        assert page.items[0].end_time == biggest
        assert got.other is not None and json.loads(got.other) == {
            "resource": {"service": UNICODE}
        }
        assert page.items[2].other == '{"raw":"text"}'

    async def test_otel_spans_upsert_by_id(self, cs_store: Store) -> None:
        await cs_store.observability.batch_insert_otel_spans(records=[otel("s1", name="first")])
        await cs_store.observability.batch_insert_otel_spans(
            records=[otel("s1", name="second"), otel("s1", name="third")]
        )
        page = await cs_store.observability.list_otel_spans()
        assert [s.name for s in page.items] == ["third"] and page.total == 1

    async def test_list_otel_spans_filters(self, cs_store: Store) -> None:
        await cs_store.observability.batch_insert_otel_spans(
            records=[
                otel("a", NANOS, trace_id="t1", name="http", scope="svc-a", kind=2),
                otel("b", NANOS + 1, trace_id="t1", name="db", scope="svc-a", kind=3,
                     parent_span_id="a"),
                otel("c", NANOS + 2, trace_id="t2", name="http", scope="svc-b", kind=2),
            ]
        )

        async def listed(**filters: Any) -> list[str]:
            page = await cs_store.observability.list_otel_spans(filters=filters)
            assert page.total == len(page.items)
            return [s.id for s in page.items]

        assert await listed(trace_id="t1") == ["b", "a"]
        assert await listed(traceId="t2") == ["c"]
        assert await listed(name="http") == ["c", "a"]
        assert await listed(scope="svc-a", kind=2) == ["a"]
        assert await listed(kind=3) == ["b"]
        assert await listed(parentSpanId="a") == ["b"]
        assert await listed(name="htt") == []

    @pytest.mark.cs_requires("span_attribute_filters")
    async def test_list_otel_spans_attribute_filter(self, cs_store: Store) -> None:
        await cs_store.observability.batch_insert_otel_spans(
            records=[
                otel("a", NANOS, attributes={"http.status": 200, "route": "/x"}),
                otel("b", NANOS + 1, attributes={"http.status": 500, "route": "/x"}),
                otel("c", NANOS + 2),
            ]
        )
        page = await cs_store.observability.list_otel_spans(filters={"attributes": {"route": "/x"}})
        assert [s.id for s in page.items] == ["b", "a"]

    @pytest.mark.parametrize(("start", "end", "start_exclusive", "end_exclusive", "expected"),
                             DATE_BOUNDS)
    async def test_list_otel_spans_start_time_bounds(
        self,
        cs_store: Store,
        start: float | None,
        end: float | None,
        start_exclusive: bool,
        end_exclusive: bool,
        expected: list[int],
    ) -> None:
        # Span i starts exactly at at(i) in nanoseconds.
        base = (at(0) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000
        await cs_store.observability.batch_insert_otel_spans(
            records=[otel(f"s{i}", base + i * 1_000_000_000) for i in range(5)]
        )
        page = await cs_store.observability.list_otel_spans(
            filters={"start_time": {
                "start": None if start is None else at(start),
                "end": None if end is None else at(end),
                "start_exclusive": start_exclusive,
                "end_exclusive": end_exclusive,
            }}
        )
        assert [s.id for s in page.items] == [f"s{i}" for i in reversed(expected)]

    @pytest.mark.parametrize(EDGE_NAMES, PAGINATION_EDGES)
    async def test_list_otel_spans_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        if total:
            await cs_store.observability.batch_insert_otel_spans(
                records=[otel(f"s{i}", NANOS - i) for i in range(total)]
            )
        result = await cs_store.observability.list_otel_spans(
            pagination=Pagination(page=page, per_page=per_page)
        )
        assert [s.id for s in result.items] == [f"s{i}" for i in expected]
        assert result.total == total and result.has_more is has_more
        assert result.per_page == per_page

    async def test_otel_ties_break_by_id(self, cs_store: Store) -> None:
        await cs_store.observability.batch_insert_otel_spans(
            records=[otel(f"s{i}", NANOS) for i in range(5)]
        )
        seen: list[str] = []
        for p in range(3):
            pagination = {"page": p, "perPage": 2}
            page = await cs_store.observability.list_otel_spans(pagination=pagination)
            seen += [s.id for s in page.items]
        assert seen == [f"s{i}" for i in reversed(range(5))]

    @pytest.mark.parametrize(
        ("change", "match"),
        [
            ({"kind": 5}, "kind"),
            ({"kind": True}, "boolean"),
            ({"start_time": True}, "boolean"),
            ({"start_time": -1}, "start_time|startTime"),
            ({"end_time": 2**63}, "end_time|endTime"),
            ({"start_time": 1.5}, "start_time|startTime"),
            ({"start_time": None}, "start_time|startTime"),
            ({"scope": None}, "scope"),
            ({"trace_id": ""}, "trace_id|traceId"),
            ({"other": {"nan": float("nan")}}, "JSON"),
        ],
    )
    async def test_invalid_otel_span_is_rejected_and_nothing_written(
        self, cs_store: Store, change: dict[str, Any], match: str
    ) -> None:
        data = otel("bad").model_dump()
        data.update(change)
        with pytest.raises(ValidationError, match=match):
            await cs_store.observability.batch_insert_otel_spans(records=[otel("good"), data])
        assert (await cs_store.observability.list_otel_spans()).total == 0

    async def test_list_otel_spans_rejects_bad_filters(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="colour"):
            await cs_store.observability.list_otel_spans(filters={"colour": "red"})
        with pytest.raises(ValidationError, match="kind"):
            await cs_store.observability.list_otel_spans(filters={"kind": 9})
        with pytest.raises(ValidationError, match="invalid attributes filter key"):
            await cs_store.observability.list_otel_spans(filters={"attributes": {"a b": 1}})
