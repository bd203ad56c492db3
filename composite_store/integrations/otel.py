"""An OpenTelemetry ``SpanExporter`` that stores SDK spans in the observability domain.

Five lines put every span an application's OpenTelemetry SDK records into any backend's
``mastra_traces`` table (``composite-store[otel]``)::

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from composite_store.integrations.otel import StoreSpanExporter
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(StoreSpanExporter("sqlite:///agent.db")))
    trace.set_tracer_provider(provider)

Read them back with ``store.observability.list_otel_spans(filters={"trace_id": ...})``.

The SDK calls ``export`` synchronously from its processor's thread, while stores are async and
bound to the event loop that ran ``init()``. Given a URL, the exporter opens its own store on
the blocking facade's private loop (``composite_store.sync``). Given an initialized store of the
application, each batch is handed to that store's loop and awaited from the processor's thread;
called from that very loop (a ``SimpleSpanProcessor`` inside a coroutine), the batch is
scheduled there instead of waited for, since the loop cannot wait for itself.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from composite_store.errors import AdapterNotInstalledError, CompositeStoreError
from composite_store.records.json import compact_json
from composite_store.records.observability import OtelSpan
from composite_store.store import Store

try:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import format_span_id, format_trace_id
except ImportError as exc:  # pragma: no cover - exercised where the SDK is absent
    raise AdapterNotInstalledError(
        'composite_store.integrations.otel needs the OpenTelemetry SDK: '
        'pip install "composite-store[otel]"'
    ) from exc

__all__ = ["StoreSpanExporter", "to_otel_span"]

#: Seconds ``export`` waits for a batch to be stored before reporting failure to the SDK.
DEFAULT_TIMEOUT = 30.0


class StoreSpanExporter(SpanExporter):
    """Write each exported batch of SDK spans with one ``batch_insert_otel_spans`` call.

    ``target`` is a store URL (the exporter opens, initializes and closes its own store) or a
    ``Store`` the application initialized (the exporter never closes it). A batch that cannot
    be stored is reported to the SDK as ``FAILURE`` (the SDK logs it and drops the batch).
    """

    def __init__(self, target: str | Store, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._timeout = timeout
        self._lock = threading.Lock()
        self._shut_down = False
        self._pending: set[asyncio.Future[Any]] = set()
        if isinstance(target, Store):
            self._store, self._owned = target, False
            self._sync = None
        else:
            from composite_store import sync

            self._sync = sync.open_store(target)
            self._sync.__enter__()
            self._store, self._owned = self._sync.store, True

    # -- SpanExporter ---------------------------------------------------------------------------

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shut_down:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            records = [to_otel_span(span) for span in spans]
            self._run(records)
        except (CompositeStoreError, FutureTimeout, ValueError):
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._shut_down:
                return
            self._shut_down = True
        if self._sync is not None:
            self._sync.__exit__(None, None, None)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        # Batches are stored before export returns, except those scheduled on the store's own
        # loop (see the module docstring); nothing else is buffered here.
        return not self._pending

    # -- running on the store's loop ------------------------------------------------------------

    def _run(self, records: list[OtelSpan]) -> None:
        if self._sync is not None:
            from composite_store import sync

            sync.run(self._store.observability.batch_insert_otel_spans(records=records))
            return
        loop = _bound_loop(self._store)
        coro = self._store.observability.batch_insert_otel_spans(records=records)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task = loop.create_task(coro)
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            return
        asyncio.run_coroutine_threadsafe(coro, loop).result(self._timeout)


def _bound_loop(store: Store) -> asyncio.AbstractEventLoop:
    domain = store.observability
    loop: asyncio.AbstractEventLoop | None = getattr(domain, "_loop", None)
    if loop is None or loop.is_closed():
        raise CompositeStoreError(
            "StoreSpanExporter needs an initialized store (await store.init() first), "
            "or a URL to open its own"
        )
    return loop


def to_otel_span(span: ReadableSpan) -> OtelSpan:
    """The ``mastra_traces`` record of one finished SDK span."""
    context = span.get_span_context()
    if context is None or span.start_time is None:
        raise ValueError(f"span {span.name!r} has no context or start time")
    scope = span.instrumentation_scope
    status: dict[str, Any] = {"code": span.status.status_code.value}
    if span.status.description:
        status["message"] = span.status.description
    other: dict[str, Any] = {
        "resource": _plain(dict(span.resource.attributes)),
        "droppedAttributesCount": span.dropped_attributes,
        "droppedEventsCount": span.dropped_events,
        "droppedLinksCount": span.dropped_links,
    }
    if scope is not None and scope.version:
        other["scopeVersion"] = scope.version
    return OtelSpan(
        id=format_span_id(context.span_id),
        parent_span_id=format_span_id(span.parent.span_id) if span.parent else None,
        name=span.name,
        trace_id=format_trace_id(context.trace_id),
        scope=scope.name if scope is not None else "",
        kind=span.kind.value,
        attributes=_plain(dict(span.attributes or {})),
        status=status,
        events=[
            {
                "name": event.name,
                "timestamp": event.timestamp,
                "attributes": _plain(dict(event.attributes or {})),
            }
            for event in span.events
        ],
        links=[
            {
                "traceId": format_trace_id(link.context.trace_id),
                "spanId": format_span_id(link.context.span_id),
                "attributes": _plain(dict(link.attributes or {})),
            }
            for link in span.links
        ],
        other=compact_json(other),
        start_time=span.start_time,
        end_time=span.end_time if span.end_time is not None else span.start_time,
    )


def _plain(attributes: dict[str, Any]) -> dict[str, Any]:
    """Attribute values as JSON has them: the SDK keeps sequences as tuples."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attributes.items()}
