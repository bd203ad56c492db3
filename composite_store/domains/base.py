"""The domain base class: lifecycle, event-loop binding, capabilities and schema hooks."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from composite_store.errors import CompositeStoreError, UnsupportedOperationError
from composite_store.schema import ColumnType

__all__ = ["Capabilities", "Domain", "PhysicalColumn", "PhysicalIndex", "PhysicalTable"]


@dataclass(frozen=True)
class Capabilities:
    """What a domain implementation guarantees; every flag defaults to off (conservative)."""

    atomic_batches: bool = False
    """A ``save_messages`` (or any batch) call is all or nothing."""

    concurrent_updates: bool = False
    """Workflow step/state updates are atomic read-modify-writes under concurrent writers."""

    compare_and_set: bool = False
    """``expected_working_memory`` writes only if the stored value still equals it."""

    transactions: bool = False
    """Multi-record operations run in one transaction."""

    sort_threads: bool = False
    """``list_threads`` orders by ``createdAt`` or ``updatedAt``, either direction."""

    metadata_filters: bool = False
    """``list_threads(filter={"metadata": ...})`` is served (by an index or a bounded query)."""

    list_scores_by_span: bool = False
    """``list_scores_by_span`` is served from an index."""

    span_attribute_filters: bool = False
    """``list_traces`` filters on span attributes and metadata."""

    def enabled(self) -> tuple[str, ...]:
        """Names of the capabilities that are on."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name))


@dataclass(frozen=True)
class PhysicalColumn:
    """A column (or field) as the backend created it.

    ``type`` is the physical type as the backend reports it (``TEXT``, ``JSONB``,
    ``TIMESTAMP WITHOUT TIME ZONE``); ``holds`` is the set of documented types that physical
    type can hold on this backend (on SQLite ``TEXT`` holds text, JSON and timestamps), which is
    what the schema checks compare.
    """

    name: str
    type: str
    nullable: bool
    holds: frozenset[ColumnType]


@dataclass(frozen=True)
class PhysicalIndex:
    """An index or unique constraint as the backend created it.

    ``descending`` gives each column's direction, or is None when the backend does not report
    directions.
    """

    name: str
    columns: tuple[str, ...]
    unique: bool
    descending: tuple[bool, ...] | None = None


@dataclass(frozen=True)
class PhysicalTable:
    """A table (collection, key space) as the backend created it.

    ``table`` is the documented table it stores (base name, e.g. ``threads``), ``name`` its
    physical name (prefix and schema included). ``variants`` names the physical variants of
    the documented schema the table uses (``schema.VARIANTS``, e.g. PostgreSQL's shadow
    timestamp columns); they are the only extra columns the schema checks accept.
    ``has_indexes`` is False for a store that scans instead of indexing (the in-memory store).
    """

    table: str
    name: str
    columns: tuple[PhysicalColumn, ...]
    primary_key: tuple[str, ...]
    indexes: tuple[PhysicalIndex, ...] = field(default=())
    variants: frozenset[str] = field(default=frozenset())
    has_indexes: bool = True

    def column(self, name: str) -> PhysicalColumn | None:
        """The column called ``name``, or None."""
        return next((c for c in self.columns if c.name == name), None)


class Domain(ABC):
    """One storage domain served by one backend.

    Public methods are the contract; subclasses implement the abstract hooks (``_init``,
    ``_clear`` and the domain's own). ``init()`` binds the domain to the running event loop;
    every later call must come from that loop.
    """

    #: The domain key (``memory``, ``workflows``, ...).
    domain: ClassVar[str]
    #: The backend family (``sqlite``, ``postgresql``, ``memory``, ...).
    backend: ClassVar[str] = "unknown"
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = False

    # -- lifecycle -----------------------------------------------------------------------------

    async def init(self) -> None:
        """Create what the domain needs (tables, indexes); idempotent, safe to call twice."""
        if self._ready:
            self._check()
            return
        self._loop = asyncio.get_running_loop()
        await self._init()
        self._ready = True

    async def close(self) -> None:
        """Release what this domain opened itself; resources passed in stay open."""
        await self._close()
        self._ready = False
        self._loop = None

    async def dangerously_clear_all(self) -> None:
        """Delete every record of this domain (tables stay). For tests and resets."""
        self._check()
        await self._clear()

    async def ping(self) -> bool:
        """Return whether the backend answers."""
        try:
            await self._ping()
        except Exception:  # noqa: BLE001 - any failure means "not reachable"
            return False
        return True

    def describe(self) -> str:
        """A one-line description of the backend serving this domain, credentials redacted."""
        return self.backend

    # -- schema hooks (the conformance suite's raw view) ---------------------------------------

    async def describe_physical(self) -> list[PhysicalTable]:
        """Describe the tables/collections of this domain as they physically exist.

        Reads the backend's catalog (never the domain's own table definitions), so the
        conformance suite can hold what was really created to the documented schema. A table
        that does not exist is absent from the list. Call after ``init()``.
        """
        raise UnsupportedOperationError(f"{type(self).__name__} cannot describe its schema")

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """Read one stored row of documented table ``table`` (base name) by its key, raw.

        Values come back as the backend's driver returns them, under the stored names.
        """
        raise UnsupportedOperationError(f"{type(self).__name__} cannot read raw rows")

    # -- hooks -----------------------------------------------------------------------------------

    @abstractmethod
    async def _init(self) -> None:
        """Create tables/indexes; called once per ``init()``."""

    @abstractmethod
    async def _clear(self) -> None:
        """Delete every record of the domain."""

    async def _close(self) -> None:  # noqa: B027 - optional hook
        """Release owned resources."""

    async def _ping(self) -> None:  # noqa: B027 - optional hook
        """Raise if the backend does not answer."""

    # -- helpers ---------------------------------------------------------------------------------

    def _check(self) -> None:
        """Refuse calls before ``init()`` and from an event loop other than ``init()``'s."""
        if not self._ready:
            raise CompositeStoreError(
                f"{type(self).__name__} is not initialized: call `await store.init()` "
                "or use `async with store:` first"
            )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not self._loop:
            raise CompositeStoreError(
                f"{type(self).__name__} is bound to the event loop that ran init(); "
                "it was called from another loop. Open one store per event loop "
                "(or use composite_store.sync from synchronous code)."
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"
