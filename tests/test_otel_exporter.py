"""The OpenTelemetry exporter, driven by the real OpenTelemetry SDK: spans an application
records come back from the observability domain as the SDK saw them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode, format_trace_id

from composite_store import OtelSpan, Store, open_store
from composite_store.integrations.otel import StoreSpanExporter


def _record_a_trace(provider: TracerProvider) -> str:
    tracer = provider.get_tracer("agent-app", "1.2.3")
    with tracer.start_as_current_span("agent.run", kind=SpanKind.SERVER) as root:
        root.set_attribute("agent.name", "planner")
        root.set_attribute("tags", ["a", "b"])
        with tracer.start_as_current_span("tool.call", kind=SpanKind.CLIENT) as child:
            child.add_event("retry", {"attempt": 2})
            child.set_status(Status(StatusCode.ERROR, "timeout"))
        trace_id = format_trace_id(root.get_span_context().trace_id)
    return trace_id


async def _spans(store: Store, trace_id: str) -> dict[str, OtelSpan]:
    page = await store.observability.list_otel_spans(filters={"trace_id": trace_id})
    return {span.name: span for span in page.items}


def _check(spans: dict[str, OtelSpan]) -> None:
    assert set(spans) == {"agent.run", "tool.call"}
    root, child = spans["agent.run"], spans["tool.call"]
    assert root.parent_span_id is None and child.parent_span_id == root.id
    assert (root.kind, child.kind) == (SpanKind.SERVER.value, SpanKind.CLIENT.value)
    assert root.scope == "agent-app"
    assert root.attributes == {"agent.name": "planner", "tags": ["a", "b"]}
    assert child.status == {"code": StatusCode.ERROR.value, "message": "timeout"}
    assert child.events is not None and child.events[0]["name"] == "retry"
    assert child.events[0]["attributes"] == {"attempt": 2}
    assert root.start_time <= child.start_time <= child.end_time <= root.end_time
    assert len(root.id) == 16 and len(root.trace_id) == 32


def test_batch_processor_into_a_store_the_exporter_opens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'traces.db'}"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(StoreSpanExporter(url)))
    trace_id = _record_a_trace(provider)
    provider.shutdown()  # flushes the batch, then closes the exporter's store

    async def read() -> dict[str, OtelSpan]:
        async with open_store(url) as store:
            return await _spans(store, trace_id)

    _check(asyncio.run(read()))




@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_the_applications_own_store_from_the_processors_thread(
    backend: str, tmp_path: Path
) -> None:
    url = "memory://" if backend == "memory" else f"sqlite:///{tmp_path / 'app.db'}"

    async def main() -> dict[str, OtelSpan]:
        async with open_store(url) as store:
            provider = TracerProvider()
            provider.add_span_processor(BatchSpanProcessor(StoreSpanExporter(store)))
            trace_id = _record_a_trace(provider)
            # The processor's thread waits on this loop: flush from a thread, not the loop.
            await asyncio.to_thread(provider.shutdown)
            return await _spans(store, trace_id)

    _check(asyncio.run(main()))


def test_a_simple_processor_inside_the_stores_own_loop(tmp_path: Path) -> None:
    async def main() -> dict[str, OtelSpan]:
        async with open_store(f"sqlite:///{tmp_path / 'inline.db'}") as store:
            exporter = StoreSpanExporter(store)
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace_id = _record_a_trace(provider)
            while not exporter.force_flush():
                await asyncio.sleep(0.01)
            return await _spans(store, trace_id)

    _check(asyncio.run(main()))


def test_an_uninitialized_store_fails_the_batch_not_the_application() -> None:
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = StoreSpanExporter(open_store("memory://"))
    provider = TracerProvider()
    spans: list[object] = []

    class Capture(SimpleSpanProcessor):
        def on_end(self, span: object) -> None:
            spans.append(span)

    provider.add_span_processor(Capture(exporter))
    _record_a_trace(provider)
    assert exporter.export(spans) == SpanExportResult.FAILURE  # type: ignore[arg-type]


def test_postgresql() -> None:
    """The same trace through a BatchSpanProcessor into PostgreSQL, in a throwaway schema."""
    server = os.environ.get("COMPOSITE_STORE_TEST_POSTGRES_URL")
    if not server:
        pytest.skip("COMPOSITE_STORE_TEST_POSTGRES_URL is not set")
    from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

    schema = asyncio.run(create_namespace(server))
    try:
        url = store_url(server, schema)
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(StoreSpanExporter(url)))
        trace_id = _record_a_trace(provider)
        provider.shutdown()

        async def read() -> dict[str, OtelSpan]:
            async with open_store(url) as store:
                return await _spans(store, trace_id)

        _check(asyncio.run(read()))
    finally:
        asyncio.run(drop_namespace(server, schema))
