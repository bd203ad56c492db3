"""The optional hooks a domain opts into for the admin tools and the conformance suite.

``Domain`` is the contract every domain serves. A backend adds, by mixing one of these classes
into its domain base, what the tools over the contract need from it:

- :class:`Transferable`: every record of a table, page by page, and writes that keep every stored
  value (``composite_store.admin.copy``);
- :class:`StoredRows`: the same for some tables as stored rows, without records (the relational
  backends, whose tables are the documented schema): ``copy``'s faster path between two of them;
- :class:`Migratable`: a recorded schema version, migration steps rendered into statements and
  the fix of a drift (``composite_store.admin.migrate``, ``init()``'s version check);
- :class:`Inspectable`: the physical tables as the backend's catalog describes them, and rows
  read raw (``composite_store.admin.inspect``, the conformance suite's schema half).

A tool asks ``isinstance(domain, Transferable)`` (or :func:`require`) and reports a domain that
lacks a hook as unsupported; nothing falls back to a slower path.
"""

from __future__ import annotations

import warnings
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from composite_store.domains.base import Domain
from composite_store.errors import SchemaMismatchError, UnsupportedOperationError, ValidationError
from composite_store.records.base import Record
from composite_store.records.tables import record_type
from composite_store.rules.paging import MAX_PAGE
from composite_store.schema import TableSpec, tables_for
from composite_store.schema.migrations import (
    Migration,
    SchemaDriftWarning,
    Statement,
    checking,
    current_version,
    pending,
)

if TYPE_CHECKING:
    from composite_store.schema.drift import Difference
    from composite_store.schema.migrations import Step
    from composite_store.schema.physical import PhysicalTable

__all__ = [
    "ExportPage",
    "Inspectable",
    "Migratable",
    "StoredRows",
    "Transferable",
    "outstanding",
    "recorded_version",
    "require",
    "settle",
]

H = TypeVar("H", bound=Domain)


def require(dom: Domain, hook: type[H], purpose: str) -> H:
    """Return ``dom`` as a ``hook`` domain; raise ``UnsupportedOperationError`` naming
    ``purpose`` (what the caller wanted to do) when it does not opt into ``hook``."""
    if not isinstance(dom, hook):
        raise UnsupportedOperationError(
            f"{type(dom).__name__} ({dom.backend}) cannot {purpose}: it does not implement "
            f"composite_store.domains.hooks.{hook.__name__}"
        )
    return dom


@dataclass(frozen=True)
class ExportPage:
    """One page of :meth:`Transferable.export_records`: records as stored, and the cursor of the
    next page (None after the last page)."""

    records: list[Record]
    cursor: str | None


def _check_page(limit: Any, cursor: Any) -> None:
    """Refuse an export page's ``limit`` outside 1..MAX_PAGE and a ``cursor`` not a string."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be an integer >= 1 and <= {MAX_PAGE}, got {limit!r}")
    if cursor is not None and not isinstance(cursor, str):
        raise ValidationError(f"cursor must be a string from a previous page, got {cursor!r}")


class Transferable(Domain):
    """A domain whose tables can be exported and imported record by record, as stored."""

    @property
    def embedded(self) -> bool:
        """Whether this domain's database runs inside this process (an embedded file such
        as SQLite's), so that its reads and writes are work of this process rather than waits
        on a server. ``composite_store.admin.copy`` reads the next page while it writes one
        only when one of its two sides waits on a server."""
        return False

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
        _check_page(limit, cursor)
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

    @abstractmethod
    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        """Return up to ``limit`` records of ``table`` after ``cursor`` (None: from the start)
        and the cursor of the next page, None when no record follows."""

    @abstractmethod
    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        """Return the records of ``table`` whose key is in ``keys`` (distinct tuples)."""

    @abstractmethod
    async def _import(self, table: str, records: list[Record]) -> None:
        """Upsert ``records`` by key (append for a table without key), exactly as given, with
        no side effect on other records."""

    @abstractmethod
    async def _count(self, table: str) -> int:
        """Return the number of records ``table`` holds."""


class StoredRows(Transferable):
    """A :class:`Transferable` domain that also moves some tables as stored rows.

    A stored row is the tuple of a table's documented columns (``TableSpec.column_names``, in
    that order), each value as ``records.tables.row_of`` gives it for the record
    :meth:`~Transferable.export_records` would return (datetimes as datetimes, message content
    as its compact JSON text). A store that keeps timestamps as the text
    ``YYYY-MM-DDTHH:MM:SS.sssZ`` (``records.base.iso_ms``'s spelling; ``timestamp_text``)
    exports that text as it is stored where the export asks for it (its spelling checked, not
    the instant it names): for another such store, so that a copy between the two neither
    parses nor formats a timestamp. Every import takes a timestamp in either form, and
    refuses text that is no instant as it refuses every value its records' import would.

    Between two such domains ``composite_store.admin.copy`` moves the tables both list in
    ``row_tables`` into a destination table that is empty when its copy starts without
    building a record per row; the destination converts only what its engine stores
    differently (its bind conversions, the same that check every written value).
    """

    #: Base names of the tables :meth:`export_stored_rows` and :meth:`import_stored_rows` take.
    row_tables: frozenset[str] = frozenset()

    @property
    def timestamp_text(self) -> bool:
        """Whether this store keeps timestamps as ``iso_ms`` text (SQLite, libSQL): stored
        rows for it are best exported with ``timestamp_text=True``."""
        return False

    async def export_stored_rows(
        self,
        *,
        table: str,
        cursor: str | None = None,
        limit: int = 500,
        timestamp_text: bool = False,
    ) -> tuple[list[tuple[Any, ...]], str | None]:
        """One page of :meth:`~Transferable.export_records` of ``table`` (one of
        ``row_tables``) as stored rows, and the cursor of the next page (the same cursors as
        ``export_records``: either call may continue from the other's). With
        ``timestamp_text``, a store that keeps timestamps as ``iso_ms`` text gives that text
        as it is stored instead of a datetime."""
        self._check()
        spec = self._row_table(table)
        _check_page(limit, cursor)
        return await self._export_stored(spec.base_name, cursor, limit, bool(timestamp_text))

    async def import_stored_rows(self, *, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """:meth:`~Transferable.import_records` of the records whose stored rows are ``rows``
        (``table`` one of ``row_tables``): the same upsert by key, the same values written
        and the same values refused."""
        self._check()
        spec = self._row_table(table)
        if isinstance(rows, (str, Mapping)) or not isinstance(rows, Sequence):
            raise ValidationError("rows must be a list")
        width = len(spec.column_names)
        for row in rows:
            # A tuple (what export_stored_rows gives) is checked without the ABC's slower test.
            if (type(row) is not tuple or len(row) != width) and (
                isinstance(row, (str, Mapping))
                or not isinstance(row, Sequence)
                or len(row) != width
            ):
                raise ValidationError(
                    f"a stored row of {spec.base_name!r} holds its {width} columns "
                    f"({', '.join(spec.column_names)}), got {row!r}"
                )
        if rows:
            await self._import_stored(spec.base_name, rows)

    def _row_table(self, name: str) -> TableSpec:
        spec = self._own_table(name)
        if spec.base_name not in self.row_tables:
            raise ValidationError(
                f"{self.backend} does not move table {spec.base_name!r} as stored rows; "
                f"it does: {', '.join(sorted(self.row_tables)) or 'none'}"
            )
        return spec

    @abstractmethod
    async def _export_stored(
        self, table: str, cursor: str | None, limit: int, timestamp_text: bool
    ) -> tuple[list[tuple[Any, ...]], str | None]:
        """:meth:`_export` of ``table`` (one of ``row_tables``) as stored rows; timestamps
        as this store keeps their text where ``timestamp_text`` asks for it."""

    @abstractmethod
    async def _import_stored(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """:meth:`_import` of the records whose stored rows are ``rows``."""


class Migratable(Domain):
    """A domain whose database records its schema version (``composite_store.schema.migrations``)
    and that renders migration steps and drift fixes into its backend's statements.

    ``init()`` checks and records the version (:func:`settle`).
    """

    #: Whether the latest ``init()`` created every table of the domain itself, in a database
    #: that had none of them: no migration can have anything left to do on them, so their
    #: version is the current one without looking (on SQLite that look read each table's
    #: indexes, 700 statements for the seven domains of an empty file).
    _created_by_init = False

    async def schema_version(self) -> int | None:
        """Return the schema version recorded for this domain in its database, or None when
        none is recorded."""
        self._check()
        return await self._read_schema_version()

    @abstractmethod
    async def _read_schema_version(self) -> int | None:
        """The recorded schema version, None when none is."""

    async def _version_at_init(self) -> int | None:
        """The recorded schema version as ``init()`` checks it (:func:`settle`): by default
        :meth:`_read_schema_version`. A backend may answer from one reading of every
        domain's version, made as ``init()`` looked at the database (``sql.schema_versions``
        does), rather than a round trip per domain."""
        return await self._read_schema_version()

    @abstractmethod
    async def _write_schema_version(self, version: int) -> None:
        """Record ``version`` as this domain's schema version."""

    async def _migration_plan(self, step: Step) -> list[Statement]:
        """The statements that perform migration ``step`` on this database now: empty when the
        step is already done or has nothing to do on this backend. Reads only."""
        return []

    def fix_statement(self, difference: Difference) -> str | None:
        """The statement (or command) that removes ``difference`` (``composite_store.schema.drift``)
        from this backend's database, or None when the backend knows none."""
        return None

    async def _settle(self) -> None:
        await settle(self)


class Inspectable(Domain):
    """A domain that describes its physical tables and reads stored rows raw, bypassing the
    domain code (the conformance suite holds both to the documented schema)."""

    @abstractmethod
    async def describe_physical(self) -> list[PhysicalTable]:
        """Describe the tables/collections of this domain as they physically exist.

        Reads the backend's catalog (never the domain's own table definitions), so the
        conformance suite can hold what was really created to the documented schema. A table
        that does not exist is absent from the list. Call after ``init()``.
        """

    @abstractmethod
    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """Read one stored row of documented table ``table`` (base name) by its key, raw.

        Values come back as the backend's driver returns them, under the stored names.
        """

    async def durability_warning(self) -> str | None:
        """Why this backend, as configured, may lose writes it acknowledged (a Redis server
        without an append-only file), or None when it keeps them. ``composite-store inspect``
        shows it; the default knows of no such risk."""
        return None


# -- schema versions (the procedures over ``Migratable`` domains) ------------------------------


async def outstanding(
    dom: Domain, migrations: list[Migration], *, required_only: bool = False
) -> list[Statement]:
    """The statements ``migrations`` still need on ``dom``'s database (empty: nothing to do, or
    ``dom`` is not ``Migratable``); with ``required_only``, those of their non-advisory steps."""
    found: list[Statement] = []
    if not isinstance(dom, Migratable):
        return found
    for migration in migrations:
        for step in migration.steps if required_only else migration.all_steps:
            found.extend(await dom._migration_plan(step))
    return found


async def recorded_version(dom: Domain) -> int | None:
    """The version ``dom``'s database is at: the recorded one, else (nothing recorded) the
    current version when no migration has anything left to do here (tables this release
    created), else 0 (an older release's or Mastra's tables). None where the domain keeps no
    version (it is not ``Migratable``). Reads only."""
    if not isinstance(dom, Migratable):
        return None
    recorded = await dom._read_schema_version()
    if recorded is not None:
        return recorded
    if not dom._created_by_init and await outstanding(dom, pending(dom.domain, 0)):
        return 0
    return current_version(dom.domain)


async def settle(dom: Migratable) -> None:
    """Record or check ``dom``'s schema version; called by ``init()`` after the tables exist.

    A version found by :func:`recorded_version` but not recorded yet is recorded. A recorded
    version older than the current one is lifted silently when its migrations have nothing to
    do on this backend; otherwise the fix is reported (``SchemaDriftWarning``, or
    ``SchemaMismatchError`` for a required migration). A version newer than this release
    knows raises ``SchemaMismatchError``. Never alters the documented tables. Does nothing
    within ``composite_store.schema.migrations.unchecked()``.
    """
    if not checking():
        return
    stored = await dom._version_at_init()
    recorded = await recorded_version(dom) if stored is None else stored
    assert recorded is not None
    if stored is None:
        await dom._write_schema_version(recorded)
    current = current_version(dom.domain)
    if recorded > current:
        raise SchemaMismatchError(
            f"the {dom.domain} domain of {dom.describe()} is at schema version {recorded}, "
            f"newer than this release of composite-store knows ({current}): upgrade "
            "composite-store"
        )
    if recorded == current:
        return
    todo = pending(dom.domain, recorded)
    if not await outstanding(dom, todo):
        await dom._write_schema_version(current)
        return
    message = (
        f"the {dom.domain} domain of {dom.describe()} is at schema version {recorded}; this "
        f"release uses version {current} ({'; '.join(m.description for m in todo)}). Fix: run "
        "`composite-store migrate URL` with this store's URL (add --dry-run to see the "
        "statements first)"
    )
    # Required only where a required migration has something left to do on this backend.
    blocking = [
        m for m in todo if m.required and await outstanding(dom, [m], required_only=True)
    ]
    if blocking:
        raise SchemaMismatchError(message)
    warnings.warn(message, SchemaDriftWarning, stacklevel=5)
