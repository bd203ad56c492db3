"""Schema versions, index migrations and drift fixes on MongoDB (``Migratable``).

A domain's schema version is a document of the ``<prefix>composite_schema`` collection
(``_id`` = domain). A migration step on a collection creates the indexes of this release
(``indexes.index_defs``) that it lacks, matched by keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from composite_store.records.base import now_utc
from composite_store.schema import TableSpec, table
from composite_store.schema.drift import Difference, Kind
from composite_store.schema.migrations import (
    AddColumns,
    CreateIndex,
    ExactText,
    NamePrimaryKey,
    Statement,
    Step,
    version_table,
)
from composite_store_mongodb.connection import Document, MongoConnection
from composite_store_mongodb.indexes import IndexDef, index_defs

__all__ = ["fix_statement", "migration_plan", "read_version", "write_version"]


async def read_version(conn: MongoConnection, domain: str) -> int | None:
    versions = conn.db[version_table(conn.prefix)]

    async def read(_: Any) -> Document | None:
        return await versions.find_one({"_id": domain})

    found = await conn.run(read)
    return None if found is None else int(found["version"])


async def write_version(conn: MongoConnection, domain: str, version: int) -> None:
    versions = conn.db[version_table(conn.prefix)]

    async def write(_: Any) -> None:
        await versions.replace_one(
            {"_id": domain}, {"version": version, "updatedAt": now_utc()}, upsert=True
        )

    await conn.run(write)


# -- migrations and fixes ------------------------------------------------------------------------


def _create_command(collection: str, index: IndexDef) -> str:
    keys = json.dumps(dict(index.keys))
    options = {"name": index.name, **({"unique": True} if index.unique else {})}
    return f"db.getCollection({json.dumps(collection)}).createIndex({keys}, {json.dumps(options)})"


async def _missing_indexes(conn: MongoConnection, spec: TableSpec) -> list[IndexDef] | None:
    """This release's indexes of ``spec``'s collection it lacks (matched by keys); None when the
    collection does not exist."""
    name = spec.name(conn.prefix)

    async def read(_: Any) -> list[Mapping[str, Any]] | None:
        if name not in await conn.db.list_collection_names():
            return None
        return list(await (await conn.db[name].list_indexes()).to_list())

    existing = await conn.run(read)
    if existing is None:
        return None
    have = {tuple((k, int(v)) for k, v in ix["key"].items()) for ix in existing}
    wanted = index_defs(spec, conn.prefix, conn.shard_keys.get(name, ()))
    return [d for d in wanted if d.keys not in have]


async def migration_plan(conn: MongoConnection, step: Step) -> list[Statement]:
    """Create the indexes of ``step``'s collection that it lacks (a collection that does not
    exist yet gets them from ``init()``)."""
    if isinstance(step, (AddColumns, NamePrimaryKey, ExactText)):
        # Documents have no fixed columns, collections no named keys, strings compare exactly.
        return []
    if isinstance(step, CreateIndex) and step.documented().families:
        return []  # one of Mastra's own indexes (PostgreSQL, SQLite/libSQL only)
    spec = table(step.table)
    missing = await _missing_indexes(conn, spec)
    if not missing:
        return []
    name = spec.name(conn.prefix)
    statements = []
    for index in missing:

        async def run(index: IndexDef = index) -> None:
            from pymongo import IndexModel

            model = IndexModel(list(index.keys), name=index.name, unique=index.unique)

            async def create(_: Any) -> None:
                await conn.db[name].create_indexes([model])

            await conn.run(create)

        statements.append(Statement(_create_command(name, index), run, transactional=False))
    return statements


def fix_statement(conn: MongoConnection, difference: Difference) -> str:
    """The shell command removing ``difference`` from the database."""
    spec = difference.spec
    name = spec.name(conn.prefix)
    defs = {d.name: d for d in index_defs(spec, conn.prefix)}
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
