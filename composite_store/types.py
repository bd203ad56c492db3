"""Argument and result types shared by every domain: pagination, ordering, includes, pages."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from composite_store.records.base import Record, Timestamp, stored
from composite_store.records.json import Id

__all__ = ["DateRange", "Include", "OrderBy", "Page", "Pagination", "PerPage"]

T = TypeVar("T")

#: An int page size, or ``False`` for "all rows".
PerPage = int | Literal[False]


class Include(Record):
    """Add message ``id`` and its neighbours (from its own thread) to a message page."""

    id: Id = Field(min_length=1)
    thread_id: Id | None = stored("thread_id", "threadId", default=None)
    with_previous_messages: int = stored("withPreviousMessages", default=0, ge=0)
    with_next_messages: int = stored("withNextMessages", default=0, ge=0)


class OrderBy(Record):
    """Sort field (stored or snake_case name) and direction."""

    field: str
    direction: Literal["ASC", "DESC"] = "DESC"

    @field_validator("direction", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class Pagination(Record):
    """Page number (0-based) and size for the non-memory domains; ``per_page=False`` is all."""

    page: int = 0
    per_page: PerPage | None = stored("perPage", default=None)


class DateRange(Record):
    """A date window; bounds are inclusive unless marked exclusive."""

    start: Timestamp | None = None
    end: Timestamp | None = None
    start_exclusive: bool = stored("startExclusive", default=False)
    end_exclusive: bool = stored("endExclusive", default=False)


class Page(BaseModel, Generic[T]):
    """One page of a listing."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    items: list[T]
    total: int | None
    page: int
    per_page: PerPage
    has_more: bool
