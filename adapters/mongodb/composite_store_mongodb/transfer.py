"""Whole-collection export and import on MongoDB (``Transferable``).

Export pages by the server's ``_id`` (``{_id: {$gt: last}}`` sorted by ``_id``, always
indexed), which also covers Mastra's keyless ``evals``. Exported and fetched documents have
their NaN and infinities (another writer's: the domains refuse them) marked as
``NonFiniteNumber``, as the SQL stores read them from JSON text: a copy then refuses them
where the destination's JSON encoder would have written ``null``. Import replaces each
document by its documented key (upsert), or inserts where the table has no key; documents
hold every documented field, as the domains write them. Schema versions and index
migrations: ``schema_versions``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bson import json_util
from pymongo import InsertOne, ReplaceOne

from composite_store.errors import ConflictError, ValidationError
from composite_store.records.base import Record
from composite_store.records.json import marked_non_finite
from composite_store.records.tables import record_from_row, row_of
from composite_store.schema import TableSpec, table
from composite_store_mongodb.connection import Document, MongoConnection

__all__ = [
    "count_documents",
    "export_documents",
    "fetch_documents",
    "import_documents",
]

#: Keys per lookup query.
_FETCH_CHUNK = 100


async def export_documents(
    conn: MongoConnection, base: str, cursor: str | None, limit: int
) -> tuple[list[Record], str | None]:
    """One page of collection ``base`` after ``cursor`` (the last ``_id``, as extended JSON)."""
    query: dict[str, Any] = {}
    if cursor is not None:
        try:
            query = {"_id": {"$gt": json_util.loads(cursor)}}
        except (ValueError, TypeError):
            raise ValidationError(f"invalid export cursor {cursor!r} for {base}") from None
    collection = conn.collection(table(base))

    async def read(_: Any) -> list[Document]:
        return await collection.find(query).sort("_id", 1).limit(limit + 1).to_list()

    docs = await conn.run(read)
    page = docs[:limit]
    records = [record_from_row(base, _documented(d)) for d in page]
    following = json_util.dumps(page[-1]["_id"]) if len(docs) > limit else None
    return records, following


def _documented(doc: Mapping[str, Any]) -> dict[str, Any]:
    """``doc``'s documented fields (not the server's ``_id``), non-finite numbers marked."""
    return {k: marked_non_finite(v) for k, v in doc.items() if k != "_id"}


def _document(spec: TableSpec, record: Record) -> dict[str, Any]:
    row = row_of(spec.base_name, record)
    return {name: row.get(name) for name in spec.column_names}


async def fetch_documents(
    conn: MongoConnection, base: str, keys: Sequence[tuple[Any, ...]]
) -> list[Record]:
    """The documents of ``base`` whose documented key is in ``keys``."""
    key = table(base).key_columns
    collection = conn.collection(table(base))
    found: list[Record] = []
    for start in range(0, len(keys), _FETCH_CHUNK):
        chunk = keys[start : start + _FETCH_CHUNK]
        if len(key) == 1:
            query: dict[str, Any] = {key[0]: {"$in": [k[0] for k in chunk]}}
        else:
            query = {"$or": [dict(zip(key, k, strict=True)) for k in chunk]}

        async def read(_: Any, query: dict[str, Any] = query) -> list[Document]:
            return await collection.find(query, {"_id": False}).to_list()

        found.extend(record_from_row(base, _documented(d)) for d in await conn.run(read))
    return found


async def import_documents(conn: MongoConnection, base: str, records: Sequence[Record]) -> None:
    """Replace (upsert) each record's document by its key; insert into a keyless table. One
    transaction where the deployment has them.

    A batch is first inserted (a fresh destination, the common case: an insert costs a
    fraction of an upsert); when a key exists already, the whole batch is upserted instead.
    """
    spec = table(base)
    key = spec.key_columns
    docs = [_document(spec, record) for record in records]
    collection = conn.collection(table(base))

    async def insert(session: Any) -> None:
        await collection.bulk_write(
            [InsertOne(dict(d)) for d in docs], ordered=True, session=session
        )

    async def upsert(session: Any) -> None:
        ops = [ReplaceOne({c: d[c] for c in key}, d, upsert=True) for d in docs]
        await collection.bulk_write(ops, ordered=True, session=session)

    if not key:
        await conn.run(insert, atomic=True)
        return
    try:
        await conn.run(insert, atomic=True)
    except ConflictError:
        # Where there is no transaction the inserts before the duplicate stayed: the upserts
        # rewrite them with the same documents.
        await conn.run(upsert, atomic=True)


async def count_documents(conn: MongoConnection, base: str) -> int:
    collection = conn.collection(table(base))

    async def count(_: Any) -> int:
        return await collection.count_documents({})

    return await conn.run(count)
