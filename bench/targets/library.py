"""The composite-store contender: every operation through the public async API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bench.targets.base import Msg, SpanRow, Target
from composite_store import OrderBy, Store, open_store
from composite_store.records.memory import Message, MessageContent, Thread

_DESC = OrderBy(field="createdAt", direction="DESC")


class LibraryTarget(Target):
    kind = "library"

    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self.store: Store = open_store(url, **options)

    async def open(self) -> None:
        await self.store.init()
        self.supports_spans = self.store.get("observability") is not None

    async def close(self) -> None:
        await self.store.close()

    async def reset(self) -> None:
        for domain in self.store.domains.values():
            await domain.dangerously_clear_all()

    async def save_thread(self, thread_id: str, resource_id: str, created_at: datetime) -> None:
        await self.store.memory.save_thread(
            thread=Thread(
                id=thread_id, resource_id=resource_id, title="bench", created_at=created_at,
                updated_at=created_at,
            )
        )

    async def save_messages(self, messages: list[Msg]) -> None:
        await self.store.memory.save_messages(
            messages=[
                Message(
                    id=m.id,
                    thread_id=m.thread_id,
                    resource_id=m.resource_id,
                    role=m.role,
                    content=MessageContent.model_validate(m.content),
                    created_at=m.created_at,
                )
                for m in messages
            ]
        )

    async def newest(self, thread_id: str, n: int) -> list[str]:
        page = await self.store.memory.list_messages(
            thread_id=thread_id, per_page=n, order_by=_DESC, include_total=False
        )
        return [m.id for m in page.items]

    async def newest_with_window(
        self, thread_id: str, n: int, message_id: str, before: int, after: int
    ) -> list[str]:
        page = await self.store.memory.list_messages(
            thread_id=thread_id,
            per_page=n,
            order_by=_DESC,
            include_total=False,
            include=[
                {"id": message_id, "with_previous_messages": before, "with_next_messages": after}
            ],
        )
        return [m.id for m in page.items]

    async def thread_page(self, resource_id: str, page: int, per_page: int) -> list[str]:
        result = await self.store.memory.list_threads(
            filter={"resource_id": resource_id}, page=page, per_page=per_page
        )
        return [t.id for t in result.items]

    async def update_working_memory(self, resource_id: str, text: str) -> None:
        await self.store.memory.update_resource(resource_id=resource_id, working_memory=text)

    async def get_working_memory(self, resource_id: str) -> str | None:
        found = await self.store.memory.get_resource_by_id(resource_id=resource_id)
        return found.working_memory if found else None

    async def save_snapshot(self, name: str, run_id: str, snapshot: dict[str, Any]) -> None:
        await self.store.workflows.persist_workflow_snapshot(
            workflow_name=name, run_id=run_id, snapshot=snapshot
        )

    async def load_snapshot(self, name: str, run_id: str) -> dict[str, Any] | None:
        return await self.store.workflows.load_workflow_snapshot(workflow_name=name, run_id=run_id)

    async def save_spans(self, spans: list[SpanRow]) -> None:
        await self.store.observability.batch_create_spans(
            records=[
                {
                    "trace_id": s.trace_id,
                    "span_id": s.span_id,
                    "parent_span_id": s.parent_span_id,
                    "name": s.name,
                    "span_type": s.span_type,
                    "is_event": False,
                    "started_at": s.started_at,
                    "ended_at": s.ended_at,
                    "attributes": s.attributes,
                    "input": s.input,
                    "output": s.output,
                }
                for s in spans
            ]
        )

    async def read_trace(self, trace_id: str) -> int:
        trace = await self.store.observability.get_trace(trace_id=trace_id)
        return len(trace.spans) if trace is not None else 0
