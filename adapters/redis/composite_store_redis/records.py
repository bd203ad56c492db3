"""Guarded record writes: replace or delete one hash and move its index entries with it.

The domains whose aggregates are read, changed and written back (datasets, experiments,
workflow definitions) read a record's whole hash, then write under a guard that every
documented field still holds what was read (absent: the record still does not exist), so a
concurrent writer makes the write fail and the domain read again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from composite_store.schema import TableSpec
from composite_store_redis.batch import Batch
from composite_store_redis.codec import decode_record, encode_record
from composite_store_redis.keys import SortedIndex

if TYPE_CHECKING:
    from composite_store_redis.domain import RedisDomain

__all__ = ["drop", "guard", "put"]


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
