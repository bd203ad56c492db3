"""The memory domain in process memory (the reference implementation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from composite_store.domains.memory import (
    MemoryDomain,
    MessageQuery,
    ThreadQuery,
    resource_after_update,
    thread_after_update,
)
from composite_store.errors import NotFoundError
from composite_store.inmemory.base import InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.memory import Message, Resource, Thread
from composite_store.rules.json_match import pairs_match
from composite_store.types import DateRange

__all__ = ["InMemoryMemory"]


def _in_range(value: Any, rng: DateRange | None) -> bool:
    if rng is None:
        return True
    if rng.start is not None and (value <= rng.start if rng.start_exclusive else value < rng.start):
        return False
    return rng.end is None or (value < rng.end if rng.end_exclusive else value <= rng.end)


class InMemoryMemory(InMemoryDomain, MemoryDomain):
    """Threads, messages and resources in dictionaries."""

    tables = ("threads", "messages", "resources")
    layouts = {
        "threads": Layout(Thread, ("id",)),
        "messages": Layout(Message, ("id",)),
        "resources": Layout(Resource, ("id",)),
    }

    @property
    def _threads(self) -> dict[str, Thread]:
        return self.data.table("threads")

    @property
    def _messages(self) -> dict[str, Message]:
        return self.data.table("messages")

    @property
    def _resources(self) -> dict[str, Resource]:
        return self.data.table("resources")

    async def _get_thread(self, thread_id: str) -> Thread | None:
        found = self._threads.get(thread_id)
        return found.model_copy(deep=True) if found else None

    async def _save_thread(self, thread: Thread) -> None:
        self._threads[thread.id] = thread.model_copy(deep=True)

    async def _update_thread(
        self,
        thread_id: str,
        *,
        title: str | None,
        metadata: dict[str, Any] | None,
        updated_at: Any,
        expected_working_memory: Any,
    ) -> Thread | None:
        current = self._threads.get(thread_id)
        if current is None:
            return None
        updated = thread_after_update(
            current, title, metadata, updated_at, expected_working_memory
        ).model_copy(deep=True)
        self._threads[thread_id] = updated
        return updated.model_copy(deep=True)

    async def _delete_thread(self, thread_id: str) -> None:
        self._threads.pop(thread_id, None)
        for mid in [m.id for m in self._messages.values() if m.thread_id == thread_id]:
            del self._messages[mid]

    async def _list_threads(self, query: ThreadQuery) -> tuple[list[Thread], int | None]:
        def matches(t: Thread) -> bool:
            if query.resource_id is not None and t.resource_id != query.resource_id:
                return False
            return pairs_match(t.metadata or {}, query.metadata)

        found = [t for t in self._threads.values() if matches(t)]
        attr = "created_at" if query.order_field == "createdAt" else "updated_at"
        rows = paginate(
            found,
            lambda t: (getattr(t, attr), t.id),
            descending=query.descending,
            window=query.window,
        )
        return [t.model_copy(deep=True) for t in rows], len(found) if query.count else None

    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        ids = set(query.thread_ids)
        found = [
            m
            for m in self._messages.values()
            if m.thread_id in ids
            and (query.resource_id is None or m.resource_id == query.resource_id)
            and _in_range(m.created_at, query.date_range)
        ]
        rows = paginate(
            found, lambda m: (m.created_at, m.id), descending=query.descending, window=query.window
        )
        return [m.model_copy(deep=True) for m in rows], len(found) if query.count else None

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        target = self._messages.get(message_id)
        if target is None:
            return []
        ordered = sorted(
            (m for m in self._messages.values() if m.thread_id == target.thread_id),
            key=lambda m: (m.created_at, m.id),
        )
        at = next(i for i, m in enumerate(ordered) if m.id == message_id)
        picked = ordered[max(0, at - before) : at + after + 1]
        return [m.model_copy(deep=True) for m in picked]

    async def _get_messages(self, message_ids: Sequence[str]) -> list[Message]:
        return [
            self._messages[i].model_copy(deep=True)
            for i in dict.fromkeys(message_ids)
            if i in self._messages
        ]

    async def _save_messages(self, messages: Sequence[Message], now: Any) -> None:
        targets = {m.thread_id for m in messages}
        missing = sorted(t for t in targets if t not in self._threads)
        if missing:
            raise NotFoundError(f"thread(s) not found: {missing}")
        touched = set(targets)
        for m in messages:
            previous = self._messages.get(m.id)
            if previous is not None:
                touched.add(previous.thread_id)
            self._messages[m.id] = m.model_copy(deep=True)
        self._touch(touched, now)

    async def _delete_messages(self, message_ids: Sequence[str], now: Any) -> None:
        touched = set()
        for mid in message_ids:
            removed = self._messages.pop(mid, None)
            if removed is not None:
                touched.add(removed.thread_id)
        self._touch(touched, now)

    def _touch(self, thread_ids: set[str], now: Any) -> None:
        for tid in thread_ids:
            if tid in self._threads:
                self._threads[tid] = self._threads[tid].model_copy(update={"updated_at": now})

    async def _get_resource(self, resource_id: str) -> Resource | None:
        found = self._resources.get(resource_id)
        return found.model_copy(deep=True) if found else None

    async def _save_resource(self, resource: Resource) -> None:
        self._resources[resource.id] = resource.model_copy(deep=True)

    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        updated = resource_after_update(
            self._resources.get(resource_id),
            resource_id,
            working_memory=working_memory,
            metadata=metadata,
            now=now,
            expected_working_memory=expected_working_memory,
        )
        self._resources[resource_id] = updated
        return updated.model_copy(deep=True)
