"""Schema versions, index backfills and drift fixes on Redis (``Migratable``).

A domain's schema version is a field of its tables' catalog hashes (``<table>:catalog``,
field ``schema_version``), next to the layout ``init()`` records. A migration step builds the
whole-table sorted sets a store an older release wrote lacks; that backfill is the one place
that scans the key space (``SCAN`` over the table's record keys), once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from composite_store.schema import table
from composite_store.schema.drift import Difference, Kind
from composite_store.schema.migrations import CreateIndex, IndexRecords, Statement, Step
from composite_store_redis.batch import Batch
from composite_store_redis.codec import decode_record
from composite_store_redis.keys import Keys, SortedIndex
from composite_store_redis.transfer import Listings, read_hashes

__all__ = [
    "VERSION_FIELD",
    "Catalogued",
    "backfill",
    "fix_statement",
    "migration_plan",
    "read_version",
    "write_version",
]

#: The catalog field holding the domain's schema version.
VERSION_FIELD = "schema_version"
#: Keys per SCAN reply and per pipelined read of a backfill.
_SCAN_BATCH = 500
#: A stored record, by stored names.
Row = Mapping[str, Any]


class Catalogued(Listings, Protocol):
    """What schema versions and backfills need of a Redis domain (``RedisDomain`` has it)."""

    @property
    def keys(self) -> Keys: ...

    @property
    def tables(self) -> tuple[str, ...]: ...

    @property
    def indexes(self) -> tuple[SortedIndex, ...]: ...

    def batch(self) -> Batch: ...

    def reindex(
        self, batch: Batch, indexes: Sequence[SortedIndex], old: Row | None, new: Row | None
    ) -> None: ...

    def _layout(self, name: str) -> dict[str, str]: ...


async def read_version(dom: Catalogued) -> int | None:
    """The version in the catalogs of the domain's tables; None unless all of them hold one."""
    found = await dom.conn.read([["HGET", dom.keys.catalog(t), VERSION_FIELD] for t in dom.tables])
    if any(v is None for v in found):
        return None
    return min(int(v) for v in found)


async def write_version(dom: Catalogued, version: int) -> None:
    await dom.conn.read(
        [["HSET", dom.keys.catalog(t), VERSION_FIELD, str(version)] for t in dom.tables]
    )


# -- migrations ----------------------------------------------------------------------------------


async def _missing(dom: Catalogued, step: Step) -> list[SortedIndex]:
    """The indexes ``step`` asks for that the table's stored catalog does not list."""
    if not isinstance(step, (CreateIndex, IndexRecords)) or step.table not in dom.tables:
        return []
    [stored] = await dom.conn.read([["HGETALL", dom.keys.catalog(step.table)]])
    if not stored:
        return []  # init() writes the catalog and the sets together
    listed = {name for name, _, _ in json.loads(stored.get("indexes", "[]"))}
    wanted = [i for i in dom.indexes if i.table == step.table]
    if isinstance(step, CreateIndex):
        wanted = [i for i in wanted if i.name == step.index]
    return [i for i in wanted if f"{dom.keys.table(i.table)}_{i.name}" not in listed]


async def migration_plan(dom: Catalogued, step: Step) -> list[Statement]:
    """The backfill ``step`` needs: the sets the catalog lacks, built from the records."""
    missing = await _missing(dom, step)
    if not missing:
        return []
    sets = ", ".join(f"{dom.keys.table(i.table)}:{i.name}" for i in missing)
    text = (
        f"SCAN MATCH {dom.keys.table(step.table)}:{{* then ZADD each record into {sets}; "
        f"HSET {dom.keys.catalog(step.table)} with the layout listing them"
    )

    async def run() -> None:
        await backfill(dom, step.table, missing)

    return [Statement(text, run, transactional=False, export_incomplete=True)]


async def backfill(dom: Catalogued, base: str, indexes: Sequence[SortedIndex]) -> int:
    """Add every stored record of ``base`` to ``indexes``, then record the full layout in the
    table's catalog; returns how many records were indexed."""
    derived = [i.name for i in indexes if any(c.startswith("_") for c in (*i.columns, *i.member))]
    if derived:
        raise AssertionError(f"backfill of derived indexes is not supported: {derived}")
    spec = table(base)
    indexed = 0
    keys: list[str] = []

    async def flush() -> None:
        nonlocal indexed
        batch = dom.batch()
        for raw in await read_hashes(dom, keys):
            if raw:
                dom.reindex(batch, indexes, None, decode_record(spec, raw))
                indexed += 1
        if batch:
            await dom.conn.apply(batch)
        keys.clear()

    # Record keys are ``<table>:{<group>}...``; index, pointer and catalog keys are not.
    async for key in dom.conn.scan(f"{dom.keys.table(base)}:{{*"):
        keys.append(key)
        if len(keys) >= _SCAN_BATCH:
            await flush()
    if keys:
        await flush()
    [stored] = await dom.conn.read([["HGETALL", dom.keys.catalog(base)]])
    layout: dict[str, Any] = dom._layout(base)
    if stored and VERSION_FIELD in stored:
        layout[VERSION_FIELD] = stored[VERSION_FIELD]
    await dom.conn.read([["HSET", dom.keys.catalog(base), *_flat(layout)]])
    return indexed


def _flat(mapping: dict[str, Any]) -> list[str]:
    return [str(x) for pair in mapping.items() for x in pair]


def fix_statement(dom: Catalogued, difference: Difference) -> str:
    """What removes ``difference`` from a Redis key space."""
    if difference.kind in (Kind.MISSING_INDEX, Kind.INDEX_SHAPE):
        return (
            "composite-store migrate URL (builds the missing sorted sets from the stored "
            "records and records them in the catalog)"
        )
    if difference.kind is Kind.MISSING_TABLE:
        return "init() on this store writes the table's catalog"
    return (
        "this key layout was written by another adapter version: copy the data into a fresh "
        "prefix (composite-store copy SRC_URL 'redis://...?prefix=new_') and switch to it"
    )
