"""The observability domain contract: AI spans and traces, and OpenTelemetry spans."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from composite_store.domains.args import page_window, require_id, require_list
from composite_store.domains.base import Domain
from composite_store.domains.observability_filters import OtelSpanFilter, TraceFilter
from composite_store.errors import UnsupportedOperationError, ValidationError
from composite_store.records.base import coerce, now_utc
from composite_store.records.observability import (
    OtelSpan,
    Span,
    SpanUpdate,
    Trace,
    to_unix_nanos,
)
from composite_store.records.trusted import replaced
from composite_store.rules.paging import Window, build_page, order_field
from composite_store.types import DateRange, OrderBy, Page, Pagination

__all__ = [
    "LIGHT_OMITTED",
    "NanoRange",
    "ObservabilityDomain",
    "OtelSpanQuery",
    "SpanChange",
    "TraceQuery",
]

F = TypeVar("F", TraceFilter, OtelSpanFilter)

#: Default page sizes: Mastra's ``listTraces`` (10) and legacy ``getTraces`` (100).
TRACES_PER_PAGE = 10
OTEL_SPANS_PER_PAGE = 100
#: Payload columns ``get_trace_light`` leaves out (stored names); they read as None.
LIGHT_OMITTED: tuple[str, ...] = ("input", "output", "attributes", "metadata")

_TRACE_ORDER = {
    "startedAt": "startedAt",
    "started_at": "startedAt",
    "endedAt": "endedAt",
    "ended_at": "endedAt",
}


@dataclass(frozen=True, slots=True)
class SpanChange:
    """A normalised partial update of one span: attribute name -> new value."""

    trace_id: str
    span_id: str
    values: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TraceQuery:
    """A normalised ``list_traces`` request, handed to the backend hook.

    Order: ``order_field`` (``startedAt`` or ``endedAt``), then (traceId, spanId), all in the
    same direction. A NULL ``endedAt`` (a running trace) sorts as the latest value: first in
    DESC, last in ASC (Mastra's order).
    """

    filter: TraceFilter
    order_field: str
    descending: bool
    window: Window
    count: bool


@dataclass(frozen=True, slots=True)
class NanoRange:
    """Bounds in integer nanoseconds since the epoch; None is unbounded."""

    start: int | None
    end: int | None
    start_exclusive: bool
    end_exclusive: bool

    def contains(self, value: int) -> bool:
        if self.start is not None and (
            value <= self.start if self.start_exclusive else value < self.start
        ):
            return False
        return not (
            self.end is not None and (value >= self.end if self.end_exclusive else value > self.end)
        )


@dataclass(frozen=True, slots=True)
class OtelSpanQuery:
    """A normalised ``list_otel_spans`` request: newest ``startTime`` first, ties by id DESC."""

    filter: OtelSpanFilter
    start_time: NanoRange | None
    window: Window
    count: bool


def _filter(model: type[F], value: Any, what: str) -> F:
    if value is None:
        return model()
    if not isinstance(value, (model, Mapping)):
        raise ValidationError(f"{what} must be a {model.__name__} or a dict")
    return coerce(model, value, what=what)


def _span_change(item: Any, what: str) -> SpanChange:
    if not isinstance(item, Mapping):
        raise ValidationError(f"{what} must be a dict with trace_id, span_id and updates")
    data = dict(item)
    trace_id = data.pop("trace_id", data.pop("traceId", None))
    span_id = data.pop("span_id", data.pop("spanId", None))
    updates = data.pop("updates", None)
    if data:
        raise ValidationError(f"{what}: unknown keys {sorted(data)}")
    return _change(trace_id, span_id, updates, f"{what}.")


def _change(trace_id: Any, span_id: Any, updates: Any, prefix: str = "") -> SpanChange:
    require_id(trace_id, f"{prefix}trace_id")
    require_id(span_id, f"{prefix}span_id")
    if isinstance(updates, SpanUpdate):
        patch = updates
    else:
        if not isinstance(updates, Mapping):
            raise ValidationError(f"{prefix}updates must be a dict of span fields")
        fixed = {"trace_id", "traceId", "span_id", "spanId", "created_at", "createdAt",
                 "updated_at", "updatedAt"} & set(updates)
        if fixed:
            raise ValidationError(
                f"{prefix}updates cannot change {sorted(fixed)}: the key and createdAt are "
                "fixed, updatedAt is set by the store"
            )
        patch = coerce(SpanUpdate, updates, what=f"{prefix}updates")
    return SpanChange(trace_id, span_id, patch.changes())


def _nano_range(value: DateRange | None) -> NanoRange | None:
    if value is None:
        return None
    return NanoRange(
        None if value.start is None else to_unix_nanos(value.start),
        None if value.end is None else to_unix_nanos(value.end),
        value.start_exclusive,
        value.end_exclusive,
    )


class ObservabilityDomain(Domain):
    """AI spans and traces (``mastra_ai_spans``) and OpenTelemetry spans (``mastra_traces``).

    A trace is the set of spans sharing a ``trace_id``; its root span has no parent and gives
    the trace its status (``error`` if the root has an error, ``running`` if it has not ended,
    else ``success``). Public methods validate their arguments and call the abstract hooks
    below with normalised values; a backend implements the hooks only.
    """

    domain: ClassVar[str] = "observability"

    # -- writing spans -----------------------------------------------------------------------------

    async def create_span(self, *, span: Span | Mapping[str, Any]) -> Span:
        """Store one span and return it; a span with the same (trace_id, span_id) is replaced.

        ``created_at`` defaults to now and ``updated_at`` to ``created_at``.
        """
        self._check()
        return (await self._store_spans([coerce(Span, span, what="span")]))[0]

    async def batch_create_spans(
        self, *, records: Sequence[Span | Mapping[str, Any]]
    ) -> list[Span]:
        """Store spans in one batch and return them; existing (trace_id, span_id) are replaced
        and within the batch the last occurrence wins. Every span is validated before anything
        is written; the batch is atomic where ``capabilities.atomic_batches``."""
        self._check()
        items = require_list(records, "records")
        return await self._store_spans(
            [coerce(Span, s, what=f"records[{i}]") for i, s in enumerate(items)]
        )

    async def _store_spans(self, spans: list[Span]) -> list[Span]:
        spans = [
            s if s.updated_at is not None else replaced(s, updated_at=s.created_at)
            for s in spans
        ]
        if spans:
            by_key = {(s.trace_id, s.span_id): s for s in spans}
            await self._save_spans(list(by_key.values()))
        return spans

    async def update_span(
        self, *, trace_id: str, span_id: str, updates: SpanUpdate | Mapping[str, Any]
    ) -> None:
        """Apply a partial update to one span and set its ``updated_at`` to now.

        Given fields replace the stored ones (an explicit None clears an optional field); the
        key, ``created_at`` and ``updated_at`` cannot be given. Raises ``NotFoundError`` when
        the span does not exist.
        """
        self._check()
        await self._update_spans([_change(trace_id, span_id, updates)], now_utc())

    async def batch_update_spans(self, *, records: Sequence[Mapping[str, Any]]) -> None:
        """Apply several partial updates (``{"trace_id", "span_id", "updates"}`` each) in order
        and set ``updated_at`` of every updated span to now.

        Raises ``NotFoundError`` naming the missing spans, with nothing written; the batch is
        atomic where ``capabilities.atomic_batches``.
        """
        self._check()
        changes = [
            _span_change(r, f"records[{i}]") for i, r in enumerate(require_list(records, "records"))
        ]
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for change in changes:
            merged.setdefault((change.trace_id, change.span_id), {}).update(change.values)
        if merged:
            await self._update_spans(
                [SpanChange(t, s, values) for (t, s), values in merged.items()], now_utc()
            )

    async def batch_delete_traces(self, *, trace_ids: Sequence[str]) -> None:
        """Delete every span of these traces; unknown ids are skipped."""
        self._check()
        ids = [require_id(t, "trace_ids[]") for t in require_list(trace_ids, "trace_ids")]
        if ids:
            await self._delete_traces(sorted(set(ids)))

    # -- reading spans and traces ------------------------------------------------------------------

    async def get_span(self, *, trace_id: str, span_id: str) -> Span | None:
        """Return one span, or None."""
        self._check()
        return await self._get_span(
            require_id(trace_id, "trace_id"), require_id(span_id, "span_id")
        )

    async def get_root_span(self, *, trace_id: str) -> Span | None:
        """Return the root span (no parent) of a trace, or None."""
        self._check()
        return await self._get_root_span(require_id(trace_id, "trace_id"))

    async def get_trace(self, *, trace_id: str) -> Trace | None:
        """Return a trace with all its spans (oldest ``started_at`` first, ties by span id),
        or None when it has no span."""
        self._check()
        spans = await self._trace_spans(require_id(trace_id, "trace_id"), light=False)
        return Trace(trace_id=trace_id, spans=spans) if spans else None

    async def get_trace_light(self, *, trace_id: str) -> Trace | None:
        """Like ``get_trace`` without the heavy payloads: ``input``, ``output``,
        ``attributes`` and ``metadata`` of every span read as None (for timelines)."""
        self._check()
        spans = await self._trace_spans(require_id(trace_id, "trace_id"), light=True)
        return Trace(trace_id=trace_id, spans=spans) if spans else None

    async def list_traces(
        self,
        *,
        filters: TraceFilter | Mapping[str, Any] | None = None,
        pagination: Pagination | Mapping[str, Any] | None = None,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[Span]:
        """List traces as their root spans (``span.status`` is the trace status), newest
        ``started_at`` first by default, 10 a page.

        ``filters`` (a ``TraceFilter`` or a dict in any spelling) match the root span: text
        fields exactly, ``started_at``/``ended_at`` date ranges (a running trace matches no
        ``ended_at`` range), ``status``, ``has_child_error``, ``tags`` (all present) and
        key/value pairs of ``metadata``, ``attributes`` and ``scope``. ``order_by`` is
        ``started_at`` or ``ended_at``, either direction; a running trace (no ``ended_at``)
        counts as the latest, so it comes first in DESC and last in ASC. Ties break by
        (trace_id, span_id) in the same direction, so pages never overlap.

        Raises ``UnsupportedOperationError`` for a ``metadata``/``attributes``/``scope`` filter
        where ``capabilities.span_attribute_filters`` is off.
        """
        self._check()
        query_filter = _filter(TraceFilter, filters, "filters")
        if query_filter.uses_json and not self.capabilities.span_attribute_filters:
            raise UnsupportedOperationError(
                f"{self.backend} cannot filter traces by metadata, attributes or scope "
                "(capability span_attribute_filters is off)"
            )
        field, descending = order_field(
            dict(order_by) if isinstance(order_by, Mapping) else order_by,
            allowed=_TRACE_ORDER,
            default=("startedAt", "DESC"),
        )
        w = page_window(pagination, default=TRACES_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_traces(
            TraceQuery(query_filter, field, descending, w, include_total)
        )
        return build_page(rows, w, total)

    # -- OpenTelemetry spans -----------------------------------------------------------------------

    async def batch_insert_otel_spans(
        self, *, records: Sequence[OtelSpan | Mapping[str, Any]]
    ) -> list[OtelSpan]:
        """Store OpenTelemetry spans in one batch (upsert by id; the last occurrence wins) and
        return them. Validated before anything is written; atomic where
        ``capabilities.atomic_batches``."""
        self._check()
        spans = [
            coerce(OtelSpan, s, what=f"records[{i}]")
            for i, s in enumerate(require_list(records, "records"))
        ]
        if spans:
            await self._save_otel_spans(list({s.id: s for s in spans}.values()))
        return spans

    async def list_otel_spans(
        self,
        *,
        filters: OtelSpanFilter | Mapping[str, Any] | None = None,
        pagination: Pagination | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[OtelSpan]:
        """List OpenTelemetry spans, newest ``start_time`` first (ties by id), 100 a page.

        ``filters``: exact ``trace_id``, ``parent_span_id``, ``name``, ``scope``, ``kind``;
        ``attributes`` key/value pairs; ``start_time`` a date range on ``startTime``. Raises
        ``UnsupportedOperationError`` for ``attributes`` where
        ``capabilities.span_attribute_filters`` is off.
        """
        self._check()
        query_filter = _filter(OtelSpanFilter, filters, "filters")
        if query_filter.attributes and not self.capabilities.span_attribute_filters:
            raise UnsupportedOperationError(
                f"{self.backend} cannot filter spans by attributes "
                "(capability span_attribute_filters is off)"
            )
        w = page_window(pagination, default=OTEL_SPANS_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_otel_spans(
            OtelSpanQuery(query_filter, _nano_range(query_filter.start_time), w, include_total)
        )
        return build_page(rows, w, total)

    # -- hooks -------------------------------------------------------------------------------------

    @abstractmethod
    async def _save_spans(self, spans: Sequence[Span]) -> None:
        """Upsert spans by (traceId, spanId) (unique within the batch), all or nothing."""

    @abstractmethod
    async def _update_spans(self, changes: Sequence[SpanChange], now: datetime) -> None:
        """Apply each change (unique span per change) and set updatedAt=``now``. Raise
        ``NotFoundError`` naming the missing spans before writing anything."""

    @abstractmethod
    async def _delete_traces(self, trace_ids: Sequence[str]) -> None:
        """Delete every span of these traces."""

    @abstractmethod
    async def _get_span(self, trace_id: str, span_id: str) -> Span | None:
        """Return the span or None."""

    @abstractmethod
    async def _get_root_span(self, trace_id: str) -> Span | None:
        """Return the span of the trace without parent (the earliest if several), or None."""

    @abstractmethod
    async def _trace_spans(self, trace_id: str, *, light: bool) -> list[Span]:
        """Return the trace's spans ordered by (startedAt, spanId); with ``light`` the
        ``LIGHT_OMITTED`` columns are not read and come back None."""

    @abstractmethod
    async def _list_traces(self, query: TraceQuery) -> tuple[list[Span], int | None]:
        """Return up to ``limit + 1`` root spans (parentSpanId NULL) matching ``query.filter``
        from ``offset`` in the order ``TraceQuery`` describes, and the total when
        ``query.count``."""

    @abstractmethod
    async def _save_otel_spans(self, spans: Sequence[OtelSpan]) -> None:
        """Upsert OpenTelemetry spans by id (unique within the batch), all or nothing."""

    @abstractmethod
    async def _list_otel_spans(self, query: OtelSpanQuery) -> tuple[list[OtelSpan], int | None]:
        """Return up to ``limit + 1`` spans matching ``query`` from ``offset`` ordered by
        (startTime, id) DESC, and the total when ``query.count``."""
