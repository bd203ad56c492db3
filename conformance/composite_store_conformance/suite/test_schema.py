"""The schema half: what a backend physically created and stores, held to the documented schema.

Every check is generated from ``composite_store.schema``: each documented table of every domain
the store offers must exist with every documented column, a compatible type, the documented
nullability, keys and indexes, and no column beyond the physical variants the backend declares.
Rows written through the public API and read back with ``read_raw`` must carry the documented
names and the physical form DESIGN.md section 9 prescribes for the backend's family.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store.domains.base import Domain, PhysicalIndex, PhysicalTable
from composite_store.schema import (
    DOMAINS,
    TABLES,
    Index,
    TableSpec,
    table,
    variant_columns,
    variant_nullable,
)
from composite_store.store import Store
from composite_store_conformance.base import Suite
from composite_store_conformance.raw import form_for
from composite_store_conformance.samples import SAMPLES, Expected

__all__ = ["SchemaSuite"]

TABLE_PARAMS = [pytest.param(spec, id=spec.base_name) for spec in TABLES]
UNIQUE_PARAMS = [
    pytest.param(spec, key, id=f"{spec.base_name}-{'-'.join(key)}")
    for spec in TABLES
    for key in spec.unique
]
INDEX_PARAMS = [
    pytest.param(spec, index, id=f"{spec.base_name}-{index.suffix}")
    for spec in TABLES
    for index in spec.indexes
]
SAMPLE_PARAMS = [pytest.param(name, id=name) for name in DOMAINS]


async def _domain(store: Store, name: str) -> Domain:
    """The initialized domain ``name``; skips when the store does not offer it."""
    domain = store.get(name)
    if domain is None:
        pytest.skip(f"{store.backend} does not offer the {name} domain")
    await domain.init()
    return domain


async def _physical(store: Store, spec: TableSpec) -> PhysicalTable:
    domain = await _domain(store, spec.domain)
    described = {t.table: t for t in await domain.describe_physical()}
    found = described.get(spec.base_name)
    assert found is not None, (
        f"{domain.backend}: the {spec.domain} domain did not create {spec.name()!r} "
        f"(it describes: {sorted(described) or 'nothing'})"
    )
    return found


def _show(indexes: tuple[PhysicalIndex, ...]) -> str:
    return "; ".join(
        f"{ix.name}({', '.join(ix.columns)}){' unique' if ix.unique else ''}"
        f"{'' if ix.descending is None else ' desc=' + str(list(ix.descending))}"
        for ix in indexes
    ) or "none"


class SchemaSuite(Suite):
    """Every documented table, column, key and index, and the stored form of every value."""

    #: Each test initializes the one domain it inspects (see ``_domain``).
    domains: ClassVar[tuple[str, ...]] = ()

    # -- tables and columns ----------------------------------------------------------------------

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_documented_table_exists(self, store: Store, spec: TableSpec) -> None:
        physical = await _physical(store, spec)
        assert physical.table == spec.base_name

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_documented_columns_exist(self, store: Store, spec: TableSpec) -> None:
        physical = await _physical(store, spec)
        missing = [name for name in spec.column_names if physical.column(name) is None]
        assert not missing, (
            f"{physical.name} lacks documented columns {missing}; "
            f"it has {[c.name for c in physical.columns]}"
        )

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_column_types_are_compatible(self, store: Store, spec: TableSpec) -> None:
        physical = await _physical(store, spec)
        wrong = []
        for col in spec.columns:
            found = physical.column(col.name)
            if found is not None and col.type not in found.holds:
                held = ", ".join(sorted(t.value for t in found.holds)) or "nothing documented"
                wrong.append(f"{col.name}: documented {col.type.value}, physical {found.type} "
                             f"(holds {held})")
        assert not wrong, f"{physical.name}: incompatible column types: " + "; ".join(wrong)

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_nullability_is_as_documented(self, store: Store, spec: TableSpec) -> None:
        physical = await _physical(store, spec)
        # Oracle stores '' as NULL: its variant keeps such text columns nullable.
        relaxed = variant_nullable(spec, physical.variants)
        wrong = []
        for col in spec.columns:
            found = physical.column(col.name)
            if found is None:
                continue
            if not col.nullable and found.nullable and col.name not in relaxed:
                wrong.append(f"{col.name} is documented NOT NULL but accepts NULL")
            # Key columns are NOT NULL by nature; elsewhere a stricter column would refuse
            # records the documented schema (and Mastra) writes.
            if col.nullable and not found.nullable and col.name not in physical.primary_key:
                wrong.append(f"{col.name} is documented nullable but is NOT NULL")
        assert not wrong, f"{physical.name}: " + "; ".join(wrong)

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_only_declared_variant_columns_are_extra(
        self, store: Store, spec: TableSpec
    ) -> None:
        physical = await _physical(store, spec)
        allowed = variant_columns(spec, physical.variants)
        documented = set(spec.column_names)
        wrong = []
        for col in physical.columns:
            if col.name in documented:
                continue
            accompanies = allowed.get(col.name)
            if accompanies is None:
                wrong.append(
                    f"{col.name} ({col.type}) is neither documented nor a declared variant"
                )
            elif accompanies.type not in col.holds:
                wrong.append(f"variant {col.name} cannot hold the {accompanies.type.value} "
                             f"of {accompanies.name} ({col.type})")
        assert not wrong, (
            f"{physical.name} (variants: {sorted(physical.variants) or 'none'}): "
            + "; ".join(wrong)
        )

    # -- keys and indexes ------------------------------------------------------------------------

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_primary_key_is_as_documented(self, store: Store, spec: TableSpec) -> None:
        physical = await _physical(store, spec)
        if spec.primary_key:
            assert physical.primary_key == spec.primary_key, (
                f"{physical.name}: primary key {physical.primary_key}, "
                f"documented {spec.primary_key}"
            )
        else:
            # No documented primary key: none, or a documented unique key promoted to one.
            assert physical.primary_key in ((), *spec.unique), (
                f"{physical.name}: primary key {physical.primary_key}, but the documented table "
                f"has none (unique keys: {list(spec.unique)})"
            )

    @pytest.mark.parametrize(("spec", "key"), UNIQUE_PARAMS)
    async def test_unique_key_exists(
        self, store: Store, spec: TableSpec, key: tuple[str, ...]
    ) -> None:
        physical = await _physical(store, spec)
        if set(physical.primary_key) == set(key):
            return  # the primary key enforces it
        unique = [ix for ix in physical.indexes if ix.unique and set(ix.columns) == set(key)]
        assert unique, (
            f"{physical.name}: no unique key on {key}; indexes: {_show(physical.indexes)}"
        )

    @pytest.mark.parametrize(("spec", "index"), INDEX_PARAMS)
    async def test_documented_index_exists(
        self, store: Store, spec: TableSpec, index: Index
    ) -> None:
        physical = await _physical(store, spec)
        if not physical.has_indexes:
            pytest.skip(f"{physical.name} is scanned, not indexed (the backend has no indexes)")
        columns = tuple(name for name, _ in index.columns)
        directions = tuple(desc for _, desc in index.columns)
        same = [ix for ix in physical.indexes if ix.columns == columns]
        assert same, (
            f"{physical.name}: no index on {columns} (documented {index.name(physical.name)}); "
            f"indexes: {_show(physical.indexes)}"
        )
        fitting = [
            ix for ix in same
            if (ix.descending is None or ix.descending == directions)
            and (ix.unique or not index.unique)
        ]
        assert fitting, (
            f"{physical.name}: the index on {columns} must be "
            f"{'unique, ' if index.unique else ''}directions {list(directions)}; "
            f"found {_show(tuple(same))}"
        )

    # -- stored rows -----------------------------------------------------------------------------

    @pytest.mark.parametrize("domain_name", SAMPLE_PARAMS)
    async def test_stored_rows_have_the_documented_names_and_form(
        self, store: Store, domain_name: str
    ) -> None:
        domain = await _domain(store, domain_name)
        write = SAMPLES.get(domain_name)
        if write is None:
            pytest.fail(f"composite_store_conformance has no raw sample for {domain_name!r}")
        await domain.dangerously_clear_all()
        described = {t.table: t for t in await domain.describe_physical()}
        problems: list[str] = []
        for expected in await write(domain):
            problems.extend(
                await _check_row(domain, expected, described.get(expected.table))
            )
        assert not problems, f"{domain.backend} {domain_name}:\n  " + "\n  ".join(problems)


async def _check_row(
    domain: Domain, expected: Expected, physical: PhysicalTable | None
) -> list[str]:
    spec = table(expected.table)
    unsampled = set(spec.column_names) ^ set(expected.values)
    assert not unsampled, f"the {expected.table} sample does not match its columns: {unsampled}"
    where = f"{expected.table} {expected.key}"
    raw = await domain.read_raw(expected.table, expected.key)
    if raw is None:
        return [f"{where}: read_raw found no row"]
    problems = []
    variants = variant_columns(spec, physical.variants if physical else ())
    missing = [name for name in spec.column_names if name not in raw]
    if missing:
        problems.append(f"{where}: stored without the documented names {missing}: {sorted(raw)}")
    extra = sorted(set(raw) - set(spec.column_names) - set(variants))
    if extra:
        problems.append(f"{where}: stored undocumented names {extra}")
    form = form_for(domain.backend)
    for col in spec.columns:
        if col.name not in raw:
            continue
        problem = form.check(
            col.type, raw[col.name], expected.values[col.name],
            json_text=col.name in expected.json_text,
        )
        if problem:
            problems.append(f"{where}.{col.name}: {problem}")
    for name, col in variants.items():
        want = expected.values[col.name]
        if name not in raw or want is None:
            continue
        value: Any = raw[name]
        # The shadow is written with its column on every insert and update (DESIGN.md 9).
        problem = "not written" if value is None else form.shadow(value, want)
        if problem:
            problems.append(f"{where}.{name} (shadow of {col.name}): {problem}")
    return problems
