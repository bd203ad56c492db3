"""Whole-table reads for export, counts, schema versions and index backfills on Redis.

Export walks a table's whole-table sorted set (``<table>:<name>:{*}``) by rank, a page per
``ZRANGE``, and reads the records with one pipelined ``HGETALL`` per page: no key-space scan.
Every listed table has such a set: threads and OpenTelemetry spans always had one; resources,
scores and AI spans got theirs in schema version 1. A store an older release wrote lacks those
entries until ``composite-store migrate`` backfills them; that backfill is the one place that
scans the key space (``SCAN`` over the table's record keys), once.

A domain's schema version is a field of its tables' catalog hashes (``<table>:catalog``,
field ``schema_version``), next to the layout ``init()`` records.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from composite_store.errors import ValidationError
from composite_store.schema import table
from composite_store.schema.drift import Difference, Kind
from composite_store.schema.migrations import CreateIndex, IndexRecords, Statement, Step
from composite_store_redis.codec import decode_record
from composite_store_redis.keys import SortedIndex

if TYPE_CHECKING:
    from composite_store_redis.domain import RedisDomain

__all__ = [
    "VERSION_FIELD",
    "backfill",
    "count_index",
    "export_index",
    "fix_statement",
    "migration_plan",
    "offset_of",
    "read_hashes",
    "read_version",
    "write_version",
]

#: The catalog field holding the domain's schema version.
VERSION_FIELD = "schema_version"
#: Keys per SCAN reply and per pipelined read of a backfill.
_SCAN_BATCH = 500


def offset_of(cursor: str | None, what: str) -> int:
    """The rank a cursor of :func:`export_index` points at."""
    if cursor is None:
        return 0
    try:
        offset = int(cursor)
    except ValueError:
        offset = -1
    if offset < 0:
        raise ValidationError(f"invalid export cursor {cursor!r} for {what}")
    return offset


async def export_index(
    dom: RedisDomain,
    index: SortedIndex,
    cursor: str | None,
    limit: int,
    key_of: Callable[[str], str],
) -> tuple[list[dict[str, str]], str | None]:
    """One page of the records a whole-table index lists (``key_of`` maps a member to its
    record key), and the cursor of the next page."""
    offset = offset_of(cursor, index.table)
    page = await dom.conn.page(
        *dom.index_set(index, []), lex=index.lex, offset=offset, count=limit + 1
    )
    members = page.members[:limit]
    found = await read_hashes(dom, [key_of(m) for m in members])
    following = str(offset + limit) if len(page.members) > limit else None
    # A member whose record is gone was left by a partly applied cluster write.
    return [f for f in found if f], following


async def read_hashes(dom: RedisDomain, keys: Sequence[str]) -> list[dict[str, str]]:
    """``HGETALL`` of each key, pipelined (an empty dict for a missing key)."""
    return await dom.conn.read([["HGETALL", k] for k in keys])


async def count_index(dom: RedisDomain, index: SortedIndex, values: Sequence[str] = ()) -> int:
    """How many members one set of ``index`` holds (expired entries purged first)."""
    page = await dom.conn.page(*dom.index_set(index, values), lex=index.lex, count=0, total=True)
    return page.total or 0


# -- schema versions -----------------------------------------------------------------------------


async def read_version(dom: RedisDomain) -> int | None:
    """The version in the catalogs of the domain's tables; None unless all of them hold one."""
    found = await dom.conn.read([["HGET", dom.keys.catalog(t), VERSION_FIELD] for t in dom.tables])
    if any(v is None for v in found):
        return None
    return min(int(v) for v in found)


async def write_version(dom: RedisDomain, version: int) -> None:
    await dom.conn.read(
        [["HSET", dom.keys.catalog(t), VERSION_FIELD, str(version)] for t in dom.tables]
    )


# -- migrations ----------------------------------------------------------------------------------


async def _missing(dom: RedisDomain, step: Step) -> list[SortedIndex]:
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


async def migration_plan(dom: RedisDomain, step: Step) -> list[Statement]:
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


async def backfill(dom: RedisDomain, base: str, indexes: Sequence[SortedIndex]) -> int:
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


def fix_statement(dom: RedisDomain, difference: Difference) -> str:
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
