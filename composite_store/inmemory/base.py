"""Shared plumbing of the in-memory domains: the data they share and copy-on-access."""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeVar

from composite_store.domains.base import Capabilities
from composite_store.domains.hooks import Inspectable, Migratable, Transferable
from composite_store.errors import UnsupportedOperationError, ValidationError
from composite_store.inmemory.physical import Layout, describe_layout
from composite_store.records.base import Record
from composite_store.records.tables import key_of
from composite_store.rules.paging import Window
from composite_store.schema.physical import PhysicalTable

__all__ = ["InMemoryData", "InMemoryDomain", "paginate"]

T = TypeVar("T")


class InMemoryData:
    """The tables of one in-memory store: base name -> key -> record."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[Any, Any]] = {}
        #: Domain -> recorded schema version (``composite_store.schema.migrations``).
        self.versions: dict[str, int] = {}

    def table(self, name: str) -> dict[Any, Any]:
        return self.tables.setdefault(name, {})


class InMemoryDomain(Transferable, Migratable, Inspectable):
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

    @property
    def embedded(self) -> bool:
        # docstring inherited: its data lives in this process's memory
        return True

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

    async def _open(self) -> None:
        # Nothing persists: an attached in-memory store has its (empty) tables, as a new one.
        await self._init()

    async def _clear(self) -> None:
        for name in self.tables:
            self.data.table(name).clear()

    # -- export and import -------------------------------------------------------------------------

    @staticmethod
    def _as_tuple(key: Any) -> tuple[Any, ...]:
        return key if isinstance(key, tuple) else (key,)

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        rows = self.data.table(table)
        # Keyset over the dictionary keys in order: pages stay exact while others write.
        keys = sorted(rows, key=self._as_tuple)
        start = 0
        if cursor is not None:
            start = bisect.bisect_right(
                keys, tuple(json.loads(cursor)), key=self._as_tuple
            )
        page = keys[start : start + limit]
        records = [rows[k].model_copy(deep=True) for k in page]
        more = start + limit < len(keys)
        return records, json.dumps(list(self._as_tuple(page[-1]))) if more else None

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        rows = self.data.table(table)
        found = (rows.get(k[0] if len(k) == 1 else k) for k in keys)
        return [r.model_copy(deep=True) for r in found if r is not None]

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        rows = self.data.table(table)
        for record in records:
            key = key_of(table, record)
            slot = self._append_key(table) if not key else key[0] if len(key) == 1 else key
            rows[slot] = record.model_copy(deep=True)

    def _append_key(self, table: str) -> Any:
        """The dictionary key of a new record of a table without a key of its own."""
        raise UnsupportedOperationError(f"{type(self).__name__} has no keyless table {table!r}")

    async def _count(self, table: str) -> int:
        # docstring inherited
        return len(self.data.table(table))

    async def _read_schema_version(self) -> int | None:
        # docstring inherited
        return self.data.versions.get(self.domain)

    async def _write_schema_version(self, version: int) -> None:
        # docstring inherited
        self.data.versions[self.domain] = version


def paginate(
    records: Iterable[T], key: Callable[[T], Any], *, descending: bool, window: Window
) -> list[T]:
    """Sort and cut one page plus one extra row (for ``has_more``)."""
    ordered = sorted(records, key=key, reverse=descending)
    return ordered[window.offset : window.stop]
