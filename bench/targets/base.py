"""``Target``: the logical operations the workloads time, implemented once per contender."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Msg:
    """One message of the generated data set (kept driver-neutral)."""

    id: str
    thread_id: str
    resource_id: str
    role: str
    content: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class SpanRow:
    """One AI span of the generated data set."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    span_type: str
    started_at: datetime
    ended_at: datetime | None
    attributes: dict[str, Any]
    input: Any
    output: Any


class Target(ABC):
    """One contender: ``library`` (composite-store) or ``raw`` (the driver by hand)."""

    #: ``library`` or ``raw``.
    kind: str
    #: Which optional workloads this target can run (W6 needs observability).
    supports_spans: bool = True

    async def open(self) -> None:  # noqa: B027 - an optional hook
        """Connect and create the schema (outside the timed region)."""

    async def close(self) -> None:  # noqa: B027 - an optional hook
        """Release connections."""

    @abstractmethod
    async def reset(self) -> None:
        """Empty every table the workloads use (outside the timed region)."""

    @abstractmethod
    async def save_thread(self, thread_id: str, resource_id: str, created_at: datetime) -> None:
        ...

    @abstractmethod
    async def save_messages(self, messages: list[Msg]) -> None:
        """Upsert a batch; bump updatedAt of the touched threads; refuse unknown threads."""

    @abstractmethod
    async def newest(self, thread_id: str, n: int) -> list[str]:
        """Ids of the newest ``n`` messages, newest first, without counting the thread."""

    @abstractmethod
    async def newest_with_window(
        self, thread_id: str, n: int, message_id: str, before: int, after: int
    ) -> list[str]:
        """``newest`` plus ``message_id`` and its neighbours, merged and deduplicated."""

    @abstractmethod
    async def thread_page(self, resource_id: str, page: int, per_page: int) -> list[str]:
        """One page of a resource's threads, newest first, with the total counted."""

    @abstractmethod
    async def update_working_memory(self, resource_id: str, text: str) -> None:
        ...

    @abstractmethod
    async def get_working_memory(self, resource_id: str) -> str | None:
        ...

    @abstractmethod
    async def save_snapshot(self, name: str, run_id: str, snapshot: dict[str, Any]) -> None:
        ...

    @abstractmethod
    async def load_snapshot(self, name: str, run_id: str) -> dict[str, Any] | None:
        ...

    async def save_spans(self, spans: list[SpanRow]) -> None:
        raise NotImplementedError

    async def read_trace(self, trace_id: str) -> int:
        """Read a whole trace back; return the number of spans."""
        raise NotImplementedError
