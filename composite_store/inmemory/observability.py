"""The observability domain in process memory (the reference implementation)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from composite_store.domains.observability import (
    LIGHT_OMITTED,
    ObservabilityDomain,
    OtelSpanQuery,
    SpanChange,
    TraceQuery,
)
from composite_store.domains.observability_filters import TraceFilter
from composite_store.errors import NotFoundError
from composite_store.inmemory.base import InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.observability import OtelSpan, Span
from composite_store.rules.json_match import pairs_match
from composite_store.types import DateRange

__all__ = ["InMemoryObservability"]

SpanKey = tuple[str, str]
#: Stored column name -> record attribute.
_SPAN_ATTRIBUTE = {info.serialization_alias or n: n for n, info in Span.model_fields.items()}
_LIGHT_ATTRIBUTES = {_SPAN_ATTRIBUTE[name]: None for name in LIGHT_OMITTED}
#: Stands in for a NULL endedAt in sort keys; running traces are ordered among themselves by
#: the tie-breakers alone, as SQL orders NULLs.
_NEVER = datetime.min.replace(tzinfo=UTC)


def _in_range(value: datetime | None, rng: DateRange) -> bool:
    if value is None:
        return False
    if rng.start is not None and (value <= rng.start if rng.start_exclusive else value < rng.start):
        return False
    return not (
        rng.end is not None and (value >= rng.end if rng.end_exclusive else value > rng.end)
    )


class InMemoryObservability(InMemoryDomain, ObservabilityDomain):
    """AI spans keyed by (trace_id, span_id) and OpenTelemetry spans keyed by id."""

    tables = ("ai_spans", "traces")
    layouts = {
        "ai_spans": Layout(Span, ("traceId", "spanId")),
        "traces": Layout(OtelSpan, ("id",)),
    }

    @property
    def _spans(self) -> dict[SpanKey, Span]:
        return self.data.table("ai_spans")

    @property
    def _otel(self) -> dict[str, OtelSpan]:
        return self.data.table("traces")

    # -- writes ----------------------------------------------------------------------------------

    async def _save_spans(self, spans: Sequence[Span]) -> None:
        for span in spans:
            self._spans[(span.trace_id, span.span_id)] = span.model_copy(deep=True)

    async def _update_spans(self, changes: Sequence[SpanChange], now: datetime) -> None:
        missing = [
            (c.trace_id, c.span_id) for c in changes if (c.trace_id, c.span_id) not in self._spans
        ]
        if missing:
            raise NotFoundError(f"spans not found (trace_id, span_id): {missing}")
        for change in changes:
            key = (change.trace_id, change.span_id)
            self._spans[key] = self._spans[key].model_copy(
                update={**copy.deepcopy(dict(change.values)), "updated_at": now}, deep=True
            )

    async def _delete_traces(self, trace_ids: Sequence[str]) -> None:
        doomed = set(trace_ids)
        for key in [k for k in self._spans if k[0] in doomed]:
            del self._spans[key]

    async def _save_otel_spans(self, spans: Sequence[OtelSpan]) -> None:
        for span in spans:
            self._otel[span.id] = span.model_copy(deep=True)

    # -- reads -----------------------------------------------------------------------------------

    async def _get_span(self, trace_id: str, span_id: str) -> Span | None:
        found = self._spans.get((trace_id, span_id))
        return found.model_copy(deep=True) if found is not None else None

    def _roots(self, trace_id: str) -> list[Span]:
        return sorted(
            (s for (t, _), s in self._spans.items() if t == trace_id and s.parent_span_id is None),
            key=lambda s: (s.started_at, s.span_id),
        )

    async def _get_root_span(self, trace_id: str) -> Span | None:
        roots = self._roots(trace_id)
        return roots[0].model_copy(deep=True) if roots else None

    async def _trace_spans(self, trace_id: str, *, light: bool) -> list[Span]:
        spans = sorted(
            (s for (t, _), s in self._spans.items() if t == trace_id),
            key=lambda s: (s.started_at, s.span_id),
        )
        if light:
            return [s.model_copy(update=_LIGHT_ATTRIBUTES, deep=True) for s in spans]
        return [s.model_copy(deep=True) for s in spans]

    def _matches(self, root: Span, f: TraceFilter) -> bool:
        for column, value in f.columns().items():
            if getattr(root, _SPAN_ATTRIBUTE[column]) != value:
                return False
        if f.started_at is not None and not _in_range(root.started_at, f.started_at):
            return False
        if f.ended_at is not None and not _in_range(root.ended_at, f.ended_at):
            return False
        if f.status is not None and root.status != f.status:
            return False
        if f.has_child_error is not None:
            failed = any(
                s.error is not None for (t, _), s in self._spans.items() if t == root.trace_id
            )
            if failed != f.has_child_error:
                return False
        if f.tags and not set(f.tags) <= set(root.tags or ()):
            return False
        return (
            pairs_match(root.metadata, f.metadata)
            and pairs_match(root.attributes, f.attributes)
            and pairs_match(root.scope, f.scope)
        )

    async def _list_traces(self, query: TraceQuery) -> tuple[list[Span], int | None]:
        found = [
            s for s in self._spans.values()
            if s.parent_span_id is None and self._matches(s, query.filter)
        ]
        if query.order_field == "endedAt":
            # A running trace (no endedAt) counts as the latest: first in DESC, last in ASC.
            def key(s: Span) -> tuple[Any, ...]:
                return (s.ended_at is None, s.ended_at or _NEVER, s.trace_id, s.span_id)
        else:
            def key(s: Span) -> tuple[Any, ...]:
                return (s.started_at, s.trace_id, s.span_id)

        rows = paginate(found, key, descending=query.descending, window=query.window)
        return [s.model_copy(deep=True) for s in rows], len(found) if query.count else None

    async def _list_otel_spans(self, query: OtelSpanQuery) -> tuple[list[OtelSpan], int | None]:
        wanted = query.filter.columns()
        attributes = query.filter.attributes
        rng = query.start_time

        def matches(s: OtelSpan) -> bool:
            stored = s.model_dump(by_alias=True, include=set(_OTEL_FILTERED))
            if any(stored[name] != value for name, value in wanted.items()):
                return False
            if rng is not None and not rng.contains(s.start_time):
                return False
            return pairs_match(s.attributes, attributes)

        found = [s for s in self._otel.values() if matches(s)]
        rows = paginate(
            found, lambda s: (s.start_time, s.id), descending=True, window=query.window
        )
        return [s.model_copy(deep=True) for s in rows], len(found) if query.count else None


_OTEL_FILTERED = ("trace_id", "parent_span_id", "name", "scope", "kind")
