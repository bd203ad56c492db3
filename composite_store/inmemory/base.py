"""Shared plumbing of the in-memory domains: the data they share and copy-on-access."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from composite_store.domains.base import Capabilities, Domain, PhysicalTable
from composite_store.errors import UnsupportedOperationError, ValidationError
from composite_store.inmemory.physical import Layout, describe_layout
from composite_store.paging import Window

__all__ = ["InMemoryData", "InMemoryDomain", "paginate"]

T = TypeVar("T")


class InMemoryData:
    """The tables of one in-memory store: base name -> key -> record."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[Any, Any]] = {}

    def table(self, name: str) -> dict[Any, Any]:
        return self.tables.setdefault(name, {})


class InMemoryDomain(Domain):
    """Base of the in-memory domains: the semantics oracle the conformance suite trusts.

    Every method body runs without awaiting between its reads and writes, so on one event loop
    each operation is atomic; records are copied in and out so callers never alias stored state.
    """

    backend: ClassVar[str] = "memory"
    capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True,
        concurrent_updates=True,
        compare_and_set=True,
        transactions=True,
        sort_threads=True,
        metadata_filters=True,
        list_scores_by_span=True,
        span_attribute_filters=True,
    )
    tables: ClassVar[tuple[str, ...]] = ()
    #: Table -> the record model it holds and its dictionary key (see ``describe_physical``).
    layouts: ClassVar[Mapping[str, Layout]] = {}

    def __init__(self, *, data: InMemoryData | None = None) -> None:
        super().__init__()
        self.data = data or InMemoryData()

    def describe(self) -> str:
        return "memory (in-process)"

    async def describe_physical(self) -> list[PhysicalTable]:
        # docstring inherited
        self._check()
        missing = [t for t in self.tables if t not in self.layouts]
        if missing:
            raise UnsupportedOperationError(
                f"{type(self).__name__} cannot describe {missing}: add them to its `layouts` "
                "(table -> Layout(record model, key fields))"
            )
        return [describe_layout(t, self.layouts[t]) for t in self.tables if t in self.data.tables]

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        if table not in self.tables:
            raise ValidationError(f"{table!r} is not a table of the {self.domain} domain")
        for record in self.data.table(table).values():
            stored: dict[str, Any] = record.model_dump(by_alias=True)
            if all(stored.get(k) == v for k, v in key.items()):
                return stored
        return None

    async def _init(self) -> None:
        for name in self.tables:
            self.data.table(name)

    async def _clear(self) -> None:
        for name in self.tables:
            self.data.table(name).clear()


def paginate(
    records: Iterable[T], key: Callable[[T], Any], *, descending: bool, window: Window
) -> list[T]:
    """Sort and cut one page plus one extra row (for ``has_more``)."""
    ordered = sorted(records, key=key, reverse=descending)
    if window.limit is None:
        return ordered[window.offset :]
    return ordered[window.offset : window.offset + window.limit + 1]
