"""Regression tests of what the domain properties (test_properties_domains.py) found: the
records of scores, observability, datasets, experiments and workflow definitions refuse what
docs/input.md refuses, with ``ValidationError``, before any backend sees it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from composite_store import (
    Dataset,
    DatasetItem,
    DatasetItemInput,
    EvalRecord,
    Experiment,
    ExperimentResult,
    OtelSpan,
    Score,
    Span,
    ValidationError,
)
from composite_store.domains.observability_filters import OtelSpanFilter, TraceFilter
from composite_store.records.base import coerce
from composite_store.records.observability import SpanUpdate
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from tests.hostile.strategies import nested

T0 = datetime(2026, 1, 2, tzinfo=UTC)
SCORE = {"scorerId": "s", "runId": "r", "scorer": {}, "score": 1, "input": 1, "output": 1}
SPAN = {"traceId": "t", "spanId": "s", "name": "n", "spanType": "AGENT_RUN", "startedAt": T0}
OTEL = {
    "id": "o",
    "name": "n",
    "traceId": "t",
    "scope": "s",
    "kind": 0,
    "startTime": 1,
    "endTime": 2,
}
RESULT = {"experimentId": "e", "itemId": "i", "input": 1}

#: (record, valid row, field, refused value): text no backend stores verbatim (NUL, a lone
#: surrogate), JSON that is not (NaN, 65 bits, 32 levels), numbers given as text or as
#: timestamps, and text in list items.
CASES: list[tuple[type[Any], dict[str, Any], str, Any]] = [
    (Score, {**SCORE, "source": "LIVE"}, "reason", "a\x00b"),
    (Score, {**SCORE, "source": "LIVE"}, "runId", "\ud800"),
    (Score, {**SCORE, "source": "LIVE"}, "metadata", {"x": float("nan")}),
    (Score, {**SCORE, "source": "LIVE"}, "input", nested(32)),
    (Score, {**SCORE, "source": "LIVE"}, "score", "1.5"),
    # math.isfinite raised OverflowError on an integer past a double's range.
    (Score, {**SCORE, "source": "LIVE"}, "score", 10**400),
    (Score, {**SCORE, "source": "LIVE"}, "createdAt", 5),
    (
        EvalRecord,
        {"agentName": "a", "metricName": "m", "input": "i", "output": "o", "result": {"score": 1}},
        "input",
        "\udfff",
    ),
    (
        EvalRecord,
        {"agentName": "a", "metricName": "m", "input": "i", "output": "o", "result": {"score": 1}},
        "result",
        {"score": 1, "big": 2**64},
    ),
    # The error about 2**63 named the key: a message pydantic could not encode.
    (
        EvalRecord,
        {"agentName": "a", "metricName": "m", "input": "i", "output": "o", "result": {"score": 1}},
        "result",
        {"score": 1, "\ud800": 2**63},
    ),
    (Span, SPAN, "name", "a\x00"),
    # PostgreSQL's B-tree index on name refused a 1 MB name mid-batch (a driver error).
    (Span, SPAN, "name", "x" * 1_000_000),
    (Span, SPAN, "entityName", "x" * 256),
    (Span, SPAN, "tags", ["ok", "a\x00"]),
    (Span, SPAN, "links", [{"x": float("inf")}]),
    (Span, SPAN, "attributes", {"\ud800": 1}),
    (Span, SPAN, "startedAt", 1_700_000_000),
    (OtelSpan, OTEL, "startTime", "5"),
    (OtelSpan, OTEL, "kind", 1.0),
    # The encoder raised RecursionError on deep JSON, past the except clause.
    (OtelSpan, OTEL, "other", nested(10_000)),
    (OtelSpan, OTEL, "other", {"x": float("nan")}),
    # A blank id was written, and then every lookup of it refused it (deep profile, SQLite).
    (DatasetItemInput, {"input": 1}, "id", " "),
    (Experiment, {"targetType": "agent", "targetId": "a"}, "id", "\t"),
    (WorkflowDefinition, {"name": "w"}, "id", " "),
    (Dataset, {"name": "d"}, "name", "\x00"),
    (Dataset, {"name": "d"}, "tags", ["\ud800"]),
    (Dataset, {"name": "d"}, "version", 2**64),
    (DatasetItem, {"datasetId": "d", "datasetVersion": 1, "input": 1}, "datasetVersion", "1"),
    (Experiment, {"targetType": "agent", "targetId": "a"}, "totalItems", 2.0),
    (Experiment, {"targetType": "agent", "targetId": "a"}, "targetId", "a\x00"),
    (ExperimentResult, RESULT, "retryCount", 2**63),
    (ExperimentResult, RESULT, "comment", "\ud800"),
    (WorkflowDefinition, {"name": "w"}, "name", "w\x00"),
    (
        WorkflowDefinitionVersion,
        {"workflowDefinitionId": "w", "versionNumber": 1},
        "changeMessage",
        "\udc00",
    ),
]


@pytest.mark.parametrize(("model", "row", "field", "value"), CASES)
def test_a_record_refuses_what_no_backend_stores_verbatim(
    model: type[Any], row: dict[str, Any], field: str, value: Any
) -> None:
    coerce(model, row)  # the row itself is valid
    with pytest.raises(ValidationError):
        coerce(model, {**row, field: value})


def test_a_span_update_refuses_what_no_backend_stores_verbatim() -> None:
    for updates in ({"name": "a\x00"}, {"output": nested(40)}, {"endedAt": 5}):
        with pytest.raises(ValidationError):
            coerce(SpanUpdate, updates)


@pytest.mark.parametrize(
    "filters",
    [
        {"entityId": "a\x00"},
        {"metadata": {"k": float("nan")}},
        {"attributes": {"k": 2**64}},
        {"tags": ["\ud800"]},
    ],
)
def test_a_trace_filter_refuses_what_no_column_holds(filters: dict[str, Any]) -> None:
    # A driver would fail on the bound value (PostgreSQL refuses NUL) instead of answering.
    with pytest.raises(ValidationError):
        coerce(TraceFilter, filters)


def test_an_otel_filter_refuses_what_no_column_holds() -> None:
    for filters in ({"traceId": "\x00"}, {"kind": 1.0}, {"name": "\udfff"}):
        with pytest.raises(ValidationError):
            coerce(OtelSpanFilter, filters)


def test_other_given_as_json_is_stored_as_its_compact_text() -> None:
    # The documented conversion still holds once other is checked as JSON first.
    span = coerce(OtelSpan, {**OTEL, "other": {"a": [1, "é"]}})
    assert span.other == '{"a":[1,"é"]}'
