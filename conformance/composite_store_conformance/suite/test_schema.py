"""The schema half: what a backend physically created and stores, held to the documented schema.

Every check is generated from ``composite_store.schema``: each documented table of every domain
the store offers must exist with every documented column, a compatible type, the documented
nullability, keys and indexes, and no column beyond the physical variants the backend declares.
The comparison itself is ``composite_store.schema.drift`` (``composite-store inspect`` reports
the same differences with their fixes); each test asserts on one kind of difference.
Rows written through the public API and read back with ``read_raw`` must carry the documented
names and the physical form DESIGN.md section 9 prescribes for the backend's family.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store.domains.hooks import Inspectable
from composite_store.schema import (
    DOMAINS,
    TABLES,
    Index,
    TableSpec,
    table,
    variant_columns,
)
from composite_store.schema.drift import Kind, compare_table
from composite_store.schema.physical import PhysicalTable
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


async def _domain(store: Store, name: str) -> Inspectable:
    """The initialized domain ``name``; skips when the store does not offer it or its backend
    cannot describe its tables and read rows raw (it is not ``Inspectable``)."""
    domain = store.get(name)
    if domain is None:
        pytest.skip(f"{store.backend} does not offer the {name} domain")
    if not isinstance(domain, Inspectable):
        pytest.skip(f"{store.backend}: the {name} domain is not Inspectable (no raw view)")
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


def _differences(spec: TableSpec, physical: PhysicalTable, kind: Kind) -> list[str]:
    """The messages of ``physical``'s differences of one kind (``composite_store.schema.drift``)."""
    return [d.message for d in compare_table(spec, physical) if d.kind is kind]


class SchemaSuite(Suite):
    """Every documented table, column, key and index, and the stored form of every value."""

    #: Each test initializes the one domain it inspects (see ``_domain``).
    domains: ClassVar[tuple[str, ...]] = ()

    # -- tables and columns ----------------------------------------------------------------------

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_documented_table_exists(self, cs_store: Store, spec: TableSpec) -> None:
        physical = await _physical(cs_store, spec)
        assert physical.table == spec.base_name

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_documented_columns_exist(self, cs_store: Store, spec: TableSpec) -> None:
        physical = await _physical(cs_store, spec)
        wrong = _differences(spec, physical, Kind.MISSING_COLUMN)
        assert not wrong, "; ".join(wrong)

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_column_types_are_compatible(self, cs_store: Store, spec: TableSpec) -> None:
        physical = await _physical(cs_store, spec)
        wrong = _differences(spec, physical, Kind.COLUMN_TYPE)
        assert not wrong, "incompatible column types: " + "; ".join(wrong)

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_nullability_is_as_documented(self, cs_store: Store, spec: TableSpec) -> None:
        physical = await _physical(cs_store, spec)
        wrong = _differences(spec, physical, Kind.NULLABILITY)
        assert not wrong, "; ".join(wrong)

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_only_declared_variant_columns_are_extra(
        self, cs_store: Store, spec: TableSpec
    ) -> None:
        physical = await _physical(cs_store, spec)
        wrong = _differences(spec, physical, Kind.EXTRA_COLUMN)
        assert not wrong, "; ".join(wrong)

    # -- keys and indexes ------------------------------------------------------------------------

    @pytest.mark.parametrize("spec", TABLE_PARAMS)
    async def test_primary_key_is_as_documented(self, cs_store: Store, spec: TableSpec) -> None:
        physical = await _physical(cs_store, spec)
        wrong = _differences(spec, physical, Kind.PRIMARY_KEY)
        assert not wrong, "; ".join(wrong)

    @pytest.mark.parametrize(("spec", "key"), UNIQUE_PARAMS)
    async def test_unique_key_exists(
        self, cs_store: Store, spec: TableSpec, key: tuple[str, ...]
    ) -> None:
        physical = await _physical(cs_store, spec)
        wrong = [
            d.message for d in compare_table(spec, physical)
            if d.kind is Kind.UNIQUE_KEY and d.key == key
        ]
        assert not wrong, "; ".join(wrong)

    @pytest.mark.parametrize(("spec", "index"), INDEX_PARAMS)
    async def test_documented_index_exists(
        self, cs_store: Store, spec: TableSpec, index: Index
    ) -> None:
        physical = await _physical(cs_store, spec)
        if not physical.has_indexes:
            pytest.skip(f"{physical.name} is scanned, not indexed (the backend has no indexes)")
        wrong = [
            d.message for d in compare_table(spec, physical)
            if d.kind in (Kind.MISSING_INDEX, Kind.INDEX_SHAPE) and d.index == index
        ]
        assert not wrong, "; ".join(wrong)

    # -- stored rows -----------------------------------------------------------------------------

    @pytest.mark.parametrize("domain_name", SAMPLE_PARAMS)
    async def test_stored_rows_have_the_documented_names_and_form(
        self, cs_store: Store, domain_name: str
    ) -> None:
        domain = await _domain(cs_store, domain_name)
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
    domain: Inspectable, expected: Expected, physical: PhysicalTable | None
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
