"""Guarded record writes: replace or delete one hash and move its index entries with it.

The domains whose aggregates are read, changed and written back (datasets, experiments,
workflow definitions) read a record's whole hash, then write under a guard that every
documented field still holds what was read (absent: the record still does not exist), so a
concurrent writer makes the write fail and the domain read again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from composite_store.schema import TableSpec
from composite_store_redis.batch import Batch
from composite_store_redis.codec import decode_record, encode_record
from composite_store_redis.keys import SortedIndex

if TYPE_CHECKING:
    from composite_store_redis.domain import RedisDomain

__all__ = ["drop", "guard", "insert", "locate", "put", "upsert"]


def guard(batch: Batch, key: str, spec: TableSpec, raw: Mapping[str, str] | None) -> None:
    """The hash at ``key`` must still hold ``raw`` (None or empty: must not exist)."""
    if not raw:
        batch.expect_exists(key, False)
        return
    for name in spec.column_names:
        batch.expect_field(key, name, raw.get(name))


def put(
    dom: RedisDomain,
    batch: Batch,
    key: str,
    spec: TableSpec,
    indexes: Sequence[SortedIndex],
    raw: Mapping[str, str] | None,
    stored: Mapping[str, Any],
) -> None:
    """Replace the hash at ``key`` (holding ``raw``, None when absent) with ``stored``."""
    batch.put_record(key, encode_record(spec, stored))
    dom.reindex(batch, indexes, decode_record(spec, raw) if raw else None, stored)


def drop(
    dom: RedisDomain,
    batch: Batch,
    key: str,
    spec: TableSpec,
    indexes: Sequence[SortedIndex],
    raw: Mapping[str, str] | None,
) -> None:
    """Delete the hash at ``key`` (holding ``raw``) and its index entries."""
    if raw:
        batch.delete(key)
        dom.reindex(batch, indexes, decode_record(spec, raw), None)


async def insert(
    dom: RedisDomain,
    key: str,
    spec: TableSpec,
    indexes: Sequence[SortedIndex],
    stored: Mapping[str, Any],
) -> bool:
    """Write a new record at ``key``; False (nothing written) when one exists there."""
    [exists] = await dom.conn.read([["EXISTS", key]])
    if exists:
        return False
    batch = dom.batch()
    guard(batch, key, spec, None)
    put(dom, batch, key, spec, indexes, None, stored)
    return await dom.conn.apply(batch)


async def upsert(
    dom: RedisDomain,
    key: str,
    spec: TableSpec,
    indexes: Sequence[SortedIndex],
    stored: Mapping[str, Any],
) -> None:
    """Write the record at ``key`` exactly as ``stored``, whatever it held (an import)."""

    async def attempt() -> bool | None:
        [raw] = await dom.conn.read([["HGETALL", key]])
        batch = dom.batch()
        guard(batch, key, spec, raw)
        put(dom, batch, key, spec, indexes, raw, stored)
        return await dom.conn.apply(batch) or None

    await dom.optimistic(attempt, f"import into {spec.base_name}")


async def locate(
    dom: RedisDomain, pointer: str, key_of: Callable[[str], str]
) -> tuple[str, dict[str, str]] | None:
    """(key, hash) of the record a pointer leads to (``key_of`` maps the group it holds to the
    record key), or None."""
    [group] = await dom.conn.read([["GET", pointer]])
    if group is None:
        return None
    key = key_of(group)
    [raw] = await dom.conn.read([["HGETALL", key]])
    return (key, raw) if raw else None
