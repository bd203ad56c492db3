"""Whole-collection export and import, schema versions and index migrations on MongoDB.

Export pages by the server's ``_id`` (``{_id: {$gt: last}}`` sorted by ``_id``, always
indexed), which also covers Mastra's keyless ``evals``. Import replaces each document by its
documented key (upsert), or inserts where the table has no key; documents hold every
documented field, as the domains write them. A domain's schema version is a document of the
``<prefix>composite_schema`` collection (``_id`` = domain). A migration step on a collection
creates the indexes of this release (``indexes.index_defs``) that it lacks, matched by keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bson import json_util
from pymongo import InsertOne, ReplaceOne

from composite_store.errors import ConflictError, ValidationError
from composite_store.records.base import Record, now_utc
from composite_store.records.tables import record_from_row, row_of
from composite_store.schema import TableSpec, table
from composite_store.schema.drift import Difference, Kind
from composite_store.schema.migrations import (
    AddColumns,
    CreateIndex,
    NamePrimaryKey,
    Statement,
    Step,
    version_table,
)
from composite_store_mongodb.connection import Document
from composite_store_mongodb.indexes import IndexDef, index_defs

if TYPE_CHECKING:
    from composite_store_mongodb.domain import MongoDomain

__all__ = [
    "count_documents",
    "export_documents",
    "fetch_documents",
    "fix_statement",
    "import_documents",
    "migration_plan",
    "read_version",
    "write_version",
]

#: Keys per lookup query.
_FETCH_CHUNK = 100


async def export_documents(
    dom: MongoDomain, base: str, cursor: str | None, limit: int
) -> tuple[list[Record], str | None]:
    """One page of collection ``base`` after ``cursor`` (the last ``_id``, as extended JSON)."""
    query: dict[str, Any] = {}
    if cursor is not None:
        try:
            query = {"_id": {"$gt": json_util.loads(cursor)}}
        except (ValueError, TypeError):
            raise ValidationError(f"invalid export cursor {cursor!r} for {base}") from None
    collection = dom.c(base)

    async def read(_: Any) -> list[Document]:
        return await collection.find(query).sort("_id", 1).limit(limit + 1).to_list()

    docs = await dom.conn.run(read)
    page = docs[:limit]
    records = [record_from_row(base, _documented(d)) for d in page]
    following = json_util.dumps(page[-1]["_id"]) if len(docs) > limit else None
    return records, following


def _documented(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "_id"}


def _document(spec: TableSpec, record: Record) -> dict[str, Any]:
    row = row_of(spec.base_name, record)
    return {name: row.get(name) for name in spec.column_names}


async def fetch_documents(
    dom: MongoDomain, base: str, keys: Sequence[tuple[Any, ...]]
) -> list[Record]:
    """The documents of ``base`` whose documented key is in ``keys``."""
    key = table(base).key_columns
    collection = dom.c(base)
    found: list[Record] = []
    for start in range(0, len(keys), _FETCH_CHUNK):
        chunk = keys[start : start + _FETCH_CHUNK]
        if len(key) == 1:
            query: dict[str, Any] = {key[0]: {"$in": [k[0] for k in chunk]}}
        else:
            query = {"$or": [dict(zip(key, k, strict=True)) for k in chunk]}

        async def read(_: Any, query: dict[str, Any] = query) -> list[Document]:
            return await collection.find(query, {"_id": False}).to_list()

        found.extend(record_from_row(base, d) for d in await dom.conn.run(read))
    return found


async def import_documents(dom: MongoDomain, base: str, records: Sequence[Record]) -> None:
    """Replace (upsert) each record's document by its key; insert into a keyless table. One
    transaction where the deployment has them.

    A batch is first inserted (a fresh destination, the common case: an insert costs a
    fraction of an upsert); when a key exists already, the whole batch is upserted instead.
    """
    spec = table(base)
    key = spec.key_columns
    docs = [_document(spec, record) for record in records]
    collection = dom.c(base)

    async def insert(session: Any) -> None:
        await collection.bulk_write(
            [InsertOne(dict(d)) for d in docs], ordered=True, session=session
        )

    async def upsert(session: Any) -> None:
        ops = [ReplaceOne({c: d[c] for c in key}, d, upsert=True) for d in docs]
        await collection.bulk_write(ops, ordered=True, session=session)

    if not key:
        await dom.conn.run(insert, atomic=True)
        return
    try:
        await dom.conn.run(insert, atomic=True)
    except ConflictError:
        # Where there is no transaction the inserts before the duplicate stayed: the upserts
        # rewrite them with the same documents.
        await dom.conn.run(upsert, atomic=True)


async def count_documents(dom: MongoDomain, base: str) -> int:
    collection = dom.c(base)

    async def count(_: Any) -> int:
        return await collection.count_documents({})

    return await dom.conn.run(count)


# -- schema versions -----------------------------------------------------------------------------


async def read_version(dom: MongoDomain) -> int | None:
    versions = dom.conn.db[version_table(dom.conn.prefix)]

    async def read(_: Any) -> Document | None:
        return await versions.find_one({"_id": dom.domain})

    found = await dom.conn.run(read)
    return None if found is None else int(found["version"])


async def write_version(dom: MongoDomain, version: int) -> None:
    versions = dom.conn.db[version_table(dom.conn.prefix)]

    async def write(_: Any) -> None:
        await versions.replace_one(
            {"_id": dom.domain}, {"version": version, "updatedAt": now_utc()}, upsert=True
        )

    await dom.conn.run(write)


# -- migrations and fixes ------------------------------------------------------------------------


def _create_command(collection: str, index: IndexDef) -> str:
    keys = json.dumps(dict(index.keys))
    options = {"name": index.name, **({"unique": True} if index.unique else {})}
    return f"db.getCollection({json.dumps(collection)}).createIndex({keys}, {json.dumps(options)})"


async def _missing_indexes(dom: MongoDomain, spec: TableSpec) -> list[IndexDef] | None:
    """This release's indexes of ``spec``'s collection it lacks (matched by keys); None when the
    collection does not exist."""
    name = spec.name(dom.conn.prefix)

    async def read(_: Any) -> list[Mapping[str, Any]] | None:
        if name not in await dom.conn.db.list_collection_names():
            return None
        return list(await (await dom.conn.db[name].list_indexes()).to_list())

    existing = await dom.conn.run(read)
    if existing is None:
        return None
    have = {tuple((k, int(v)) for k, v in ix["key"].items()) for ix in existing}
    wanted = index_defs(spec, dom.conn.prefix, dom.conn.shard_keys.get(name, ()))
    return [d for d in wanted if d.keys not in have]


async def migration_plan(dom: MongoDomain, step: Step) -> list[Statement]:
    """Create the indexes of ``step``'s collection that it lacks (a collection that does not
    exist yet gets them from ``init()``)."""
    if isinstance(step, (AddColumns, NamePrimaryKey)):
        return []  # documents have no fixed columns, collections no named keys
    if isinstance(step, CreateIndex) and step.documented().families:
        return []  # one of Mastra's own indexes (PostgreSQL, SQLite/libSQL only)
    spec = table(step.table)
    missing = await _missing_indexes(dom, spec)
    if not missing:
        return []
    name = spec.name(dom.conn.prefix)
    statements = []
    for index in missing:

        async def run(index: IndexDef = index) -> None:
            from pymongo import IndexModel

            model = IndexModel(list(index.keys), name=index.name, unique=index.unique)

            async def create(_: Any) -> None:
                await dom.conn.db[name].create_indexes([model])

            await dom.conn.run(create)

        statements.append(Statement(_create_command(name, index), run, transactional=False))
    return statements


def fix_statement(dom: MongoDomain, difference: Difference) -> str:
    """The shell command removing ``difference`` from the database."""
    spec = difference.spec
    name = spec.name(dom.conn.prefix)
    defs = {d.name: d for d in index_defs(spec, dom.conn.prefix)}
    if difference.kind is Kind.MISSING_TABLE:
        return f"db.createCollection({json.dumps(name)}); then init() creates its indexes"
    if difference.kind in (Kind.MISSING_INDEX, Kind.INDEX_SHAPE) and difference.index:
        index = defs[difference.index.name(name)]
        create = _create_command(name, index)
        if difference.kind is Kind.INDEX_SHAPE:
            drop = f"db.getCollection({json.dumps(name)}).dropIndex({json.dumps(index.name)})"
            return f"{drop}; {create}"
        return create
    if difference.kind in (Kind.PRIMARY_KEY, Kind.UNIQUE_KEY):
        suffix = "pkey" if difference.kind is Kind.PRIMARY_KEY else (
            "_".join(difference.key or ()) + "_key"
        )
        found = defs.get(f"{name}_{suffix}")
        if found is not None:
            return _create_command(name, found)
    return (
        f'db.runCommand({{collMod: {json.dumps(name)}, validator: <the documented $jsonSchema>}}) '
        "(init() with validator=true installs it)"
    )
