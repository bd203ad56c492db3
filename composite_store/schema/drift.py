"""Compare what a backend physically created with the documented schema: the differences.

Pure: it takes ``Inspectable.describe_physical()`` results and ``composite_store.schema`` specs and
returns :class:`Difference` values, each naming what differs and where. The conformance suite's
schema checks assert on them, and ``composite-store inspect`` reports them with the statement
that fixes each (``Migratable.fix_statement``). A database Mastra created is not drift:
the physical variants a backend declares (``schema.VARIANTS``: PostgreSQL's shadow timestamp
columns, Oracle's nullable empty strings) are accepted, and indexes are matched by columns and
directions, not by name.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from composite_store.schema import Column, Index, TableSpec, variant_columns, variant_nullable
from composite_store.schema.physical import PhysicalIndex, PhysicalTable

__all__ = [
    "Difference",
    "Kind",
    "compare",
    "compare_table",
    "index_matches",
    "show_indexes",
]


class Kind(enum.Enum):
    """What kind of difference: one per check of the schema half of the conformance suite."""

    MISSING_TABLE = "missing table"
    MISSING_COLUMN = "missing column"
    COLUMN_TYPE = "column type"
    NULLABILITY = "nullability"
    EXTRA_COLUMN = "extra column"
    PRIMARY_KEY = "primary key"
    UNIQUE_KEY = "unique key"
    MISSING_INDEX = "missing index"
    INDEX_SHAPE = "index shape"


@dataclass(frozen=True)
class Difference:
    """One way a physical table differs from its documented table.

    ``column`` is the documented column concerned (None for an undocumented extra column,
    whose name is ``name``), ``index`` the documented index, ``key`` the documented key.
    """

    kind: Kind
    spec: TableSpec
    message: str
    name: str | None = None
    column: Column | None = None
    index: Index | None = None
    key: tuple[str, ...] | None = None
    #: For NULLABILITY: whether the documented column is nullable (what the fix sets).
    nullable: bool | None = None


def show_indexes(indexes: Iterable[PhysicalIndex]) -> str:
    """Indexes as ``name(col, ...) unique desc=[...]`` for messages."""
    return "; ".join(
        f"{ix.name}({', '.join(ix.columns)}){' unique' if ix.unique else ''}"
        f"{'' if ix.descending is None else ' desc=' + str(list(ix.descending))}"
        for ix in indexes
    ) or "none"


def index_matches(physical: PhysicalTable, index: Index) -> tuple[list[PhysicalIndex], bool]:
    """(physical indexes on ``index``'s columns in order, whether one of them also has its
    directions and uniqueness)."""
    columns = index.column_names
    directions = tuple(desc for _, desc in index.columns)
    # A partial index serves only some rows: it is the documented index only if that is
    # partial too (Mastra's root-span indexes, WHERE parentSpanId IS NULL).
    partial = index.where_null is not None
    # A documented index over the rows where a column is not NULL serves reads that filter
    # on that column: a full index does as well (a database built before it was partial, a
    # backend without partial indexes).
    either = index.where_not_null is not None
    same = [
        ix
        for ix in physical.indexes
        if ix.columns == columns and (either or ix.partial == partial)
    ]
    fitting = any(
        (ix.descending is None or ix.descending == directions or index.any_direction)
        and (ix.unique or not index.unique)
        for ix in same
    )
    return same, fitting


def compare_table(spec: TableSpec, physical: PhysicalTable | None) -> list[Difference]:
    """Every difference between documented table ``spec`` and ``physical`` (None: the table
    does not exist), in the order the checks run."""
    if physical is None:
        return [Difference(Kind.MISSING_TABLE, spec, f"{spec.name()} does not exist")]
    found: list[Difference] = []
    found += _columns(spec, physical)
    found += _keys(spec, physical)
    found += _indexes(spec, physical)
    return found


def compare(
    specs: Sequence[TableSpec], physicals: Iterable[PhysicalTable]
) -> list[Difference]:
    """The differences of every table of ``specs``, given what ``describe_physical`` found."""
    by_table = {p.table: p for p in physicals}
    return [d for spec in specs for d in compare_table(spec, by_table.get(spec.base_name))]


def _columns(spec: TableSpec, physical: PhysicalTable) -> list[Difference]:
    found: list[Difference] = []
    name = physical.name
    for col in spec.columns:
        if physical.column(col.name) is None:
            have = [c.name for c in physical.columns]
            found.append(
                Difference(
                    Kind.MISSING_COLUMN, spec, f"{name} lacks documented column {col.name} "
                    f"(it has {have})", name=col.name, column=col,
                )
            )
    for col in spec.columns:
        phys = physical.column(col.name)
        if phys is not None and col.type not in phys.holds:
            held = ", ".join(sorted(t.value for t in phys.holds)) or "nothing documented"
            found.append(
                Difference(
                    Kind.COLUMN_TYPE, spec, f"{name}.{col.name}: documented {col.type.value}, "
                    f"physical {phys.type} (holds {held})", name=col.name, column=col,
                )
            )
    # Oracle stores '' as NULL: its variant keeps such text columns nullable.
    relaxed = variant_nullable(spec, physical.variants)
    for col in spec.columns:
        phys = physical.column(col.name)
        if phys is None:
            continue
        if not col.nullable and phys.nullable and col.name not in relaxed:
            found.append(
                Difference(
                    Kind.NULLABILITY, spec, f"{name}.{col.name} is documented NOT NULL but "
                    "accepts NULL", name=col.name, column=col, nullable=False,
                )
            )
        # Key columns are NOT NULL by nature; elsewhere a stricter column would refuse records
        # the documented schema (and Mastra) writes.
        if col.nullable and not phys.nullable and col.name not in physical.primary_key:
            found.append(
                Difference(
                    Kind.NULLABILITY, spec, f"{name}.{col.name} is documented nullable but is "
                    "NOT NULL", name=col.name, column=col, nullable=True,
                )
            )
    allowed = variant_columns(spec, physical.variants)
    documented = set(spec.column_names)
    for phys in physical.columns:
        if phys.name in documented:
            continue
        accompanies = allowed.get(phys.name)
        if accompanies is None:
            found.append(
                Difference(
                    Kind.EXTRA_COLUMN, spec, f"{name}.{phys.name} ({phys.type}) is neither "
                    f"documented nor a declared variant (variants: "
                    f"{sorted(physical.variants) or 'none'})", name=phys.name,
                )
            )
        elif accompanies.type not in phys.holds:
            found.append(
                Difference(
                    Kind.EXTRA_COLUMN, spec, f"{name}: variant {phys.name} cannot hold the "
                    f"{accompanies.type.value} of {accompanies.name} ({phys.type})",
                    name=phys.name, column=accompanies,
                )
            )
    return found


def _keys(spec: TableSpec, physical: PhysicalTable) -> list[Difference]:
    found: list[Difference] = []
    name = physical.name
    if spec.primary_key and physical.primary_key != spec.primary_key:
        found.append(
            Difference(
                Kind.PRIMARY_KEY, spec, f"{name}: primary key {physical.primary_key}, documented "
                f"{spec.primary_key}", key=spec.primary_key,
            )
        )
    # No documented primary key: none, or a documented unique key promoted to one.
    if not spec.primary_key and physical.primary_key not in ((), *spec.unique):
        found.append(
            Difference(
                Kind.PRIMARY_KEY, spec, f"{name}: primary key {physical.primary_key}, but the "
                f"documented table has none (unique keys: {list(spec.unique)})", key=(),
            )
        )
    for key in spec.unique:
        if set(physical.primary_key) == set(key):
            continue  # the primary key enforces it
        if not any(ix.unique and set(ix.columns) == set(key) for ix in physical.indexes):
            found.append(
                Difference(
                    Kind.UNIQUE_KEY, spec, f"{name}: no unique key on {key}; indexes: "
                    f"{show_indexes(physical.indexes)}", key=key,
                )
            )
    return found


def _indexes(spec: TableSpec, physical: PhysicalTable) -> list[Difference]:
    if not physical.has_indexes:
        return []  # a store that scans (in-memory) has nothing to index
    found: list[Difference] = []
    name = physical.name
    for index in spec.indexes:
        columns = index.column_names
        same, fitting = index_matches(physical, index)
        if not same:
            found.append(
                Difference(
                    Kind.MISSING_INDEX, spec, f"{name}: no index on {columns} (documented "
                    f"{index.name(name.rsplit('.', 1)[-1])}); indexes: "
                    f"{show_indexes(physical.indexes)}", name=index.suffix, index=index,
                )
            )
        elif not fitting:
            directions = [desc for _, desc in index.columns]
            found.append(
                Difference(
                    Kind.INDEX_SHAPE, spec, f"{name}: the index on {columns} must be "
                    f"{'unique, ' if index.unique else ''}directions {directions}; found "
                    f"{show_indexes(same)}", name=index.suffix, index=index,
                )
            )
    return found
