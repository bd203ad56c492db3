"""Units of the scores and observability contracts: trace status, nanosecond conversion,
record validation, and the refusals where a capability is off."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest

from composite_store import (
    EvalRecord,
    OtelSpan,
    Span,
    SpanUpdate,
    Trace,
    TraceFilter,
    UnsupportedOperationError,
)
from composite_store.domains.base import Capabilities
from composite_store.inmemory.observability import InMemoryObservability
from composite_store.inmemory.scores import InMemoryScores
from composite_store.records.observability import to_unix_nanos, trace_status

T0 = datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)


def _span(sid: str, parent: str | None = None, **kw: object) -> Span:
    return Span.model_validate(
        {"trace_id": "t", "span_id": sid, "parent_span_id": parent, "name": sid,
         "span_type": "GENERIC", "started_at": T0, **kw}
    )


@pytest.mark.parametrize(
    ("error", "ended_at", "expected"),
    [
        (None, None, "running"),
        (None, T0, "success"),
        ({"message": "x"}, T0, "error"),
        ({"message": "x"}, None, "error"),
        ("", T0, "error"),  # any stored error counts, even an empty one
    ],
)
def test_trace_status(error: object, ended_at: datetime | None, expected: str) -> None:
    assert trace_status(error, ended_at) == expected


def test_trace_status_comes_from_the_root_span() -> None:
    root = _span("root", ended_at=T0)
    child = _span("c", parent="root", error={"m": "child failed"})
    assert Trace(trace_id="t", spans=[child, root]).status == "success"
    assert Trace(trace_id="t", spans=[child]).status == "running"
    assert root.is_root and not child.is_root


def test_to_unix_nanos_is_exact() -> None:
    assert to_unix_nanos(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert to_unix_nanos(T0) == 1_715_938_200_123_000_000
    assert to_unix_nanos(T0 + timedelta(microseconds=1)) - to_unix_nanos(T0) == 1000


def test_eval_is_test_follows_mastra() -> None:
    base = {"input": "i", "output": "o", "result": {"score": 1}, "agentName": "a",
            "metricName": "m"}
    assert EvalRecord.model_validate({**base, "testInfo": {"testPath": "x"}}).is_test
    assert not EvalRecord.model_validate({**base, "testInfo": {"testName": "x"}}).is_test
    assert not EvalRecord.model_validate(base).is_test


def test_span_update_keeps_explicit_nones_only() -> None:
    update = SpanUpdate.model_validate({"endedAt": None, "output": {"a": 1}})
    assert update.changes() == {"ended_at": None, "output": {"a": 1}}


def test_otel_span_serializes_other_to_compact_json() -> None:
    span = OtelSpan.model_validate(
        {"id": "s", "name": "n", "traceId": "t", "scope": "x", "kind": 0, "startTime": 1,
         "endTime": 2, "other": {"k": "ü", "n": [1, 2]}}
    )
    assert span.other == '{"k":"ü","n":[1,2]}'


def test_trace_filter_reports_json_filters() -> None:
    assert not TraceFilter().uses_json
    assert TraceFilter.model_validate({"attributes": {"k": 1}}).uses_json
    assert TraceFilter.model_validate({"userId": "u", "spanType": "X"}).columns() == {
        "userId": "u",
        "spanType": "X",
    }


class _PlainScores(InMemoryScores):
    capabilities: ClassVar[Capabilities] = Capabilities()


class _PlainObservability(InMemoryObservability):
    capabilities: ClassVar[Capabilities] = Capabilities()


def test_off_capabilities_refuse_instead_of_scanning() -> None:
    async def run() -> None:
        scores, observability = _PlainScores(), _PlainObservability()
        await scores.init()
        await observability.init()
        with pytest.raises(UnsupportedOperationError, match="list_scores_by_span"):
            await scores.list_scores_by_span(trace_id="t", span_id="s")
        with pytest.raises(UnsupportedOperationError, match="span_attribute_filters"):
            await observability.list_traces(filters={"metadata": {"k": "v"}})
        with pytest.raises(UnsupportedOperationError, match="span_attribute_filters"):
            await observability.list_otel_spans(filters={"attributes": {"k": "v"}})
        # Filters that need no capability still work.
        page = await observability.list_traces(filters={"tags": ["a"], "status": "running"})
        assert page.items == []

    asyncio.run(run())
