"""Whole-table reads for export, and counts, on Redis (``Transferable``).

Export walks a table's whole-table sorted set (``<table>:<name>:{*}``) by rank, a page per
``ZRANGE``, and reads the records with one pipelined ``HGETALL`` per page: no key-space scan.
Every listed table has such a set: threads and OpenTelemetry spans always had one; resources,
scores and AI spans got theirs in schema version 1. A store an older release wrote lacks those
entries until ``composite-store migrate`` backfills them (``schema_versions``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from composite_store.errors import ValidationError
from composite_store_redis.connection import RedisConnection
from composite_store_redis.keys import SortedIndex

__all__ = [
    "Listings",
    "count_index",
    "export_index",
    "offset_of",
    "read_hashes",
]


class Listings(Protocol):
    """What the whole-table reads need of a Redis domain (``RedisDomain`` has it)."""

    @property
    def conn(self) -> RedisConnection: ...

    def index_set(self, index: SortedIndex, values: Sequence[str]) -> tuple[str, str | None]: ...


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
    dom: Listings,
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


async def read_hashes(dom: Listings, keys: Sequence[str]) -> list[dict[str, str]]:
    """``HGETALL`` of each key, pipelined (an empty dict for a missing key)."""
    return await dom.conn.read([["HGETALL", k] for k in keys])


async def count_index(dom: Listings, index: SortedIndex, values: Sequence[str] = ()) -> int:
    """How many members one set of ``index`` holds (expired entries purged first)."""
    page = await dom.conn.page(*dom.index_set(index, values), lex=index.lex, count=0, total=True)
    return page.total or 0
