"""Create each domain's collections, indexes and validators, and describe what exists.

``ensure`` is idempotent: it creates missing collections with their indexes and leaves existing
ones as they are (their missing indexes are migrations, ``composite-store migrate``). An index
that exists under a documented name with other keys is drift; it is reported with the command
that fixes it, never silently replaced. ``describe`` reads the server's catalog
(``listCollections``, ``listIndexes``) and never the definitions this adapter would create, so
the conformance suite holds the database itself to the documented schema.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymongo import IndexModel
from pymongo.errors import OperationFailure

from composite_store.errors import SchemaMismatchError
from composite_store.schema import TableSpec
from composite_store.schema.physical import PhysicalColumn, PhysicalIndex, PhysicalTable
from composite_store_mongodb.connection import MongoConnection
from composite_store_mongodb.errors import mongo_errors
from composite_store_mongodb.indexes import IndexDef, index_defs
from composite_store_mongodb.validator import documented_types, json_schema, read_properties

__all__ = ["describe", "ensure"]

#: Server codes for "an index with this name or these keys exists with other options".
_INDEX_CONFLICTS = {85, 86}
_NAMESPACE_EXISTS = 48


async def ensure(conn: MongoConnection, specs: Iterable[TableSpec]) -> None:
    """Create the collections of ``specs`` with their indexes (and validators when the
    connection has ``validator`` on) where they are missing."""
    wanted = [s for s in specs if s.name(conn.prefix) not in conn.ensured]
    if not wanted:
        return
    with mongo_errors():
        existing = set(await conn.db.list_collection_names())
        for spec in wanted:
            name = spec.name(conn.prefix)
            options: dict[str, Any] = {}
            if conn.validator:
                options = {
                    "validator": json_schema(spec, conn.prefix),
                    "validationLevel": "strict",
                    "validationAction": "error",
                }
            if name not in existing:
                try:
                    await conn.db.create_collection(name, check_exists=False, **options)
                except OperationFailure as exc:
                    # Another process created it first: fine, it is there now.
                    if exc.code != _NAMESPACE_EXISTS:
                        raise
                    if options:
                        await conn.db.command("collMod", name, **options)
                await _create_indexes(conn, spec)
            elif options:
                await conn.db.command("collMod", name, **options)
            # An existing collection keeps its indexes: init() never alters a current database
            # (indexes a release adds are migrations: `composite-store migrate`).
            conn.ensured.add(name)


async def _create_indexes(conn: MongoConnection, spec: TableSpec) -> None:
    name = spec.name(conn.prefix)
    defs = index_defs(spec, conn.prefix, conn.shard_keys.get(name, ()))
    models = [
        IndexModel(list(d.keys), name=d.name, **({"unique": True} if d.unique else {}))
        for d in defs
    ]
    try:
        await conn.db[name].create_indexes(models)
    except OperationFailure as exc:
        if exc.code not in _INDEX_CONFLICTS:
            raise
        raise SchemaMismatchError(_drift(conn, name, defs, exc)) from exc


def _drift(
    conn: MongoConnection, name: str, defs: Iterable[IndexDef], exc: OperationFailure
) -> str:
    wanted = "; ".join(
        f"{d.name} {dict(d.keys)}{' unique' if d.unique else ''}" for d in defs
    )
    return (
        f"collection {conn.database_name}.{name} has an index that differs from the documented "
        f"schema ({exc.details.get('errmsg') if exc.details else exc}). Expected: {wanted}. "
        f"Fix: drop the conflicting index (db.{name}.dropIndex('<name>')) and run init() again."
    )


async def describe(conn: MongoConnection, specs: Iterable[TableSpec]) -> list[PhysicalTable]:
    """Describe the collections of ``specs`` that exist, from the server's catalog.

    Fields come from the collection's ``$jsonSchema`` validator (a collection without one
    enforces no shape, so it lists no fields); indexes from ``listIndexes``, without the
    server's own ``_id_``; the primary key is the key of the ``<collection>_pkey`` index.
    """
    described: list[PhysicalTable] = []
    with mongo_errors():
        infos = {
            info["name"]: info for info in await (await conn.db.list_collections()).to_list()
        }
        for spec in specs:
            name = spec.name(conn.prefix)
            info = infos.get(name)
            if info is None:
                continue
            props = read_properties((info.get("options") or {}).get("validator"))
            columns = tuple(
                PhysicalColumn(
                    name=field,
                    type="|".join(sorted(types | ({"null"} if nullable else set()))),
                    nullable=nullable,
                    holds=documented_types(types),
                )
                for field, (types, nullable) in props.items()
            )
            raw_indexes = await (await conn.db[name].list_indexes()).to_list()
            indexes = tuple(
                PhysicalIndex(
                    name=ix["name"],
                    columns=tuple(ix["key"]),
                    unique=bool(ix.get("unique")),
                    descending=tuple(_descending(v) for v in ix["key"].values()),
                )
                for ix in raw_indexes
                if ix["name"] != "_id_"
            )
            pkey = next((ix for ix in indexes if ix.name == f"{name}_pkey"), None)
            described.append(
                PhysicalTable(
                    table=spec.base_name,
                    name=f"{conn.database_name}.{name}",
                    columns=columns,
                    primary_key=pkey.columns if pkey is not None else (),
                    indexes=indexes,
                )
            )
    return described


def _descending(direction: Any) -> bool:
    return isinstance(direction, (int, float)) and direction < 0
