"""The domain base class: lifecycle, event-loop binding, capabilities and schema hooks."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from composite_store.errors import (
    CompositeStoreError,
    UnsupportedOperationError,
    ValidationError,
    redact,
)
from composite_store.records.base import Record
from composite_store.records.tables import record_type
from composite_store.schema import TableSpec, tables_for
from composite_store.schema.physical import PhysicalTable

if TYPE_CHECKING:
    from composite_store.schema.drift import Difference
    from composite_store.schema.migrations import Statement, Step

__all__ = [
    "Capabilities",
    "Domain",
    "ExportPage",
]


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

    reasons: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Why a flag is off, by flag name (shown by the conformance suite and ``check``). A flag a
    domain's rules depend on may be off only with a reason."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reasons) - set(self.names()))
        if unknown:
            raise ValueError(
                f"reasons given for unknown capabilities {unknown}; known: {list(self.names())}"
            )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every capability flag, in declaration order."""
        return tuple(f.name for f in fields(cls) if f.name != "reasons")

    def enabled(self) -> tuple[str, ...]:
        """Names of the capabilities that are on."""
        return tuple(name for name in self.names() if getattr(self, name))

    def reason(self, name: str) -> str | None:
        """Why flag ``name`` is off (None when it is on or no reason was given)."""
        if getattr(self, name):
            return None
        return self.reasons.get(name) or None


@dataclass(frozen=True)
class ExportPage:
    """One page of :meth:`Domain.export_records`: records as stored, and the cursor of the
    next page (None after the last page)."""

    records: list[Record]
    cursor: str | None


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
    #: The most values one statement or command of this domain carries, by kind (``ids`` in
    #: one ``IN`` list, ``rows`` in one upsert): longer calls are split in chunks. Declared so
    #: that the conformance suite sizes its batches past every chunk boundary.
    batch_limits: ClassVar[Mapping[str, int]] = {}

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = False
        #: Ready through ``attach()`` only: a later ``init()`` still creates and checks.
        self._attached = False

    # -- lifecycle -----------------------------------------------------------------------------

    async def init(self) -> None:
        """Create what the domain needs (tables, indexes); idempotent, safe to call twice."""
        if self._ready:
            self._check()
            if not self._attached:
                return
        self._loop = asyncio.get_running_loop()
        await self._init()
        self._ready, self._attached = True, False
        # Record (or check) the schema version; never alters a current database.
        from composite_store.schema.migrations import settle

        try:
            await settle(self)
        except BaseException:
            self._ready = False
            raise

    async def attach(self) -> None:
        """Bind to the running event loop and connect, creating nothing.

        For tools that must see a database as it is (``composite-store inspect``): every
        method then works on the tables that exist, and nothing is created, checked or
        recorded. Use ``init()`` to serve an application.
        """
        if self._ready:
            self._check()
            return
        self._loop = asyncio.get_running_loop()
        await self._open()
        self._ready, self._attached = True, True

    async def close(self) -> None:
        """Release what this domain opened itself; resources passed in stay open."""
        await self._close()
        self._ready = self._attached = False
        self._loop = None

    async def dangerously_clear_all(self) -> None:
        """Delete every record of this domain (tables stay). For tests and resets."""
        self._check()
        await self._clear()

    async def ping(self) -> bool:
        """Return whether the backend answers."""
        return await self.unreachable_reason() is None

    async def unreachable_reason(self) -> str | None:
        """None when the backend answers, else why it does not (the error, redacted): a
        refused connection, an unknown user, a missing database."""
        try:
            await self._ping()
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            return redact(str(exc)) or type(exc).__name__
        return None

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

    # -- export and import (``composite_store.admin.copy``) ------------------------------------

    async def export_records(
        self, *, table: str, cursor: str | None = None, limit: int = 500
    ) -> ExportPage:
        """Return one page of every record of documented table ``table`` (a base name of this
        domain, e.g. ``messages``), as stored.

        Pass the returned ``cursor`` back for the next page until it is None. A full pass over
        a table nobody writes meanwhile returns each stored record exactly once: every thread's
        messages, every resource, dataset item history rows and tombstones, version rows,
        evals. Records keep their stored ids, timestamps and versions. Pages come in the
        backend's export order (by key where the table has one); the cursor is opaque and only
        valid for the store that issued it.
        """
        self._check()
        spec = self._own_table(table)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError(f"limit must be an integer >= 1, got {limit!r}")
        if cursor is not None and not isinstance(cursor, str):
            raise ValidationError(f"cursor must be a string from a previous page, got {cursor!r}")
        records, following = await self._export(spec.base_name, cursor, limit)
        return ExportPage(records=records, cursor=following)

    async def fetch_records(
        self, *, table: str, keys: Sequence[Sequence[Any]]
    ) -> list[Record]:
        """Return the stored records of ``table`` whose keys are among ``keys``, in any order;
        unknown keys are skipped.

        A key is the tuple of the table's ``TableSpec.key_columns`` values (``("t1",)`` for a
        thread, ``("trace", "span")`` for a span). Raises ``ValidationError`` for a table
        without a key (Mastra's ``evals``: compare whole records instead).
        """
        self._check()
        spec = self._own_table(table)
        width = len(spec.key_columns)
        if not width:
            raise ValidationError(
                f"table {spec.base_name!r} has no key: records cannot be fetched by key"
            )
        if isinstance(keys, (str, Mapping)) or not isinstance(keys, Sequence):
            raise ValidationError(f"keys must be a list of key tuples, got {keys!r}")
        normalised: list[tuple[Any, ...]] = []
        for key in keys:
            if isinstance(key, str) or not isinstance(key, Sequence) or len(key) != width:
                raise ValidationError(
                    f"a key of {spec.base_name!r} is a tuple of {width} value(s) "
                    f"({', '.join(spec.key_columns)}), got {key!r}"
                )
            normalised.append(tuple(key))
        if not normalised:
            return []
        return await self._fetch(spec.base_name, list(dict.fromkeys(normalised)))

    async def import_records(self, *, table: str, records: Sequence[Record]) -> None:
        """Write records exactly as given: upsert by key, keeping every stored value.

        Unlike the domain's own writes, nothing else changes: no ``updatedAt`` bump of a
        message's thread, no dataset version bump, no new version row, no derived default. This
        is the import path of ``composite_store.admin.copy``: ids, timestamps and SCD-2 history
        (dataset item versions and version rows, workflow definition versions) arrive as they
        were. A table without a key (``evals``) appends each record. Records that need another
        (a message its thread) must come after it; the batch is atomic where
        ``capabilities.atomic_batches``.
        """
        self._check()
        spec = self._own_table(table)
        model = record_type(spec.base_name)
        if isinstance(records, (str, Mapping)) or not isinstance(records, Sequence):
            raise ValidationError("records must be a list")
        wrong = [type(r).__name__ for r in records if not isinstance(r, model)]
        if wrong:
            raise ValidationError(
                f"records of {spec.base_name!r} must be {model.__name__} records, got {wrong[0]}"
            )
        if records:
            await self._import(spec.base_name, list(records))

    async def count_records(self, *, table: str) -> int:
        """Return how many records documented table ``table`` of this domain holds."""
        self._check()
        return await self._count(self._own_table(table).base_name)

    def _own_table(self, name: str) -> TableSpec:
        mine = tables_for(self.domain)
        for spec in mine:
            if spec.base_name == name:
                return spec
        raise ValidationError(
            f"{name!r} is not a table of the {self.domain} domain; its tables: "
            f"{', '.join(s.base_name for s in mine)}"
        )

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        """Return up to ``limit`` records of ``table`` after ``cursor`` (None: from the start)
        and the cursor of the next page, None when no record follows."""
        raise UnsupportedOperationError(f"{type(self).__name__} cannot export records")

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        """Return the records of ``table`` whose key is in ``keys`` (distinct tuples)."""
        raise UnsupportedOperationError(f"{type(self).__name__} cannot fetch records by key")

    async def _import(self, table: str, records: list[Record]) -> None:
        """Upsert ``records`` by key (append for a table without key), exactly as given, with
        no side effect on other records."""
        raise UnsupportedOperationError(f"{type(self).__name__} cannot import records")

    async def _count(self, table: str) -> int:
        """Return the number of records ``table`` holds."""
        raise UnsupportedOperationError(f"{type(self).__name__} cannot count records")

    # -- schema versions (``composite_store.schema.migrations``) -------------------------------

    async def schema_version(self) -> int | None:
        """Return the schema version recorded for this domain in its database, or None when
        none is recorded (or the backend keeps no record)."""
        self._check()
        try:
            return await self._read_schema_version()
        except UnsupportedOperationError:
            return None

    async def _read_schema_version(self) -> int | None:
        """The recorded schema version, None when none is; raise
        ``UnsupportedOperationError`` when the backend keeps no record (no versioning)."""
        raise UnsupportedOperationError(f"{type(self).__name__} keeps no schema version")

    async def _write_schema_version(self, version: int) -> None:
        """Record ``version`` as this domain's schema version."""
        raise UnsupportedOperationError(f"{type(self).__name__} keeps no schema version")

    async def _migration_plan(self, step: Step) -> list[Statement]:
        """The statements that perform migration ``step`` on this database now: empty when the
        step is already done or has nothing to do on this backend. Reads only."""
        return []

    def fix_statement(self, difference: Difference) -> str | None:
        """The statement (or command) that removes ``difference`` (``composite_store.schema.drift``)
        from this backend's database, or None when the backend knows none."""
        return None

    # -- hooks -----------------------------------------------------------------------------------

    @abstractmethod
    async def _init(self) -> None:
        """Create tables/indexes; called once per ``init()``."""

    @abstractmethod
    async def _clear(self) -> None:
        """Delete every record of the domain."""

    async def _open(self) -> None:  # noqa: B027 - optional hook
        """Connect without creating anything (``attach``); the default has nothing to open."""

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
