"""What a backend physically created: tables (collections, key spaces), columns, keys and
indexes as its catalog reports them, for the schema checks (``drift``, the conformance suite)."""

from __future__ import annotations

from dataclasses import dataclass, field

from composite_store.schema.documented import ColumnType

__all__ = ["PhysicalColumn", "PhysicalIndex", "PhysicalTable"]


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
    #: A partial index (over the rows a WHERE clause selects): it serves only those rows.
    partial: bool = False


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
