"""The workflow definitions domain on Redis: a definition and its versions on one slot.

A definition is ``mastra_workflow_definitions:{<definition id>}``; its versions are
``mastra_workflow_definition_versions:{<definition id>}:<version id>``, ordered by the
definition's sets (by versionNumber, by createdAt), and each number is claimed by the string
key ``mastra_workflow_definition_versions:workflowdefinitionid_versionnumber_key:{<definition
id>}:<number>`` (the unique key): all in the definition's slot, so numbering a version is one
guarded script on a cluster too. ``id_workflowdefinitionid_idx:{<version id>}`` points from a
version id to its definition. Definitions are listed from whole-table sets by createdAt and
by updatedAt; every version is in one more set, for export.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from composite_store.domains.base import Capabilities
from composite_store.domains.workflow_definitions import (
    DefinitionQuery,
    DefinitionUpdate,
    VersionFactory,
    VersionQuery,
    WorkflowDefinitionsDomain,
)
from composite_store.records.base import Record
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.schema import table
from composite_store_redis import records, transfer
from composite_store_redis.codec import decode_record, from_stored
from composite_store_redis.domain import RedisDomain
from composite_store_redis.keys import pack, sorted_index, unpack

__all__ = ["RedisWorkflowDefinitions"]

_DEFS, _VERSIONS = table("workflow_definitions"), table("workflow_definition_versions")
_V = "workflow_definition_versions"
DEFS_BY_CREATED = sorted_index("workflow_definitions", [], "createdAt", ["id"])
DEFS_BY_UPDATED = sorted_index("workflow_definitions", [], "updatedAt", ["id"])
DEF_INDEXES = (DEFS_BY_CREATED, DEFS_BY_UPDATED)
#: Order field -> the definition's set of versions in that order.
VERSION_LISTINGS = {
    "versionNumber": sorted_index(_V, ["workflowDefinitionId"], "versionNumber", ["id"]),
    "createdAt": sorted_index(_V, ["workflowDefinitionId"], "createdAt", ["id"]),
}
ALL_VERSIONS = sorted_index(_V, [], "createdAt", ["workflowDefinitionId", "id"])
VERSION_INDEXES = (*VERSION_LISTINGS.values(), ALL_VERSIONS)
VERSION_DEFINITION = "id_workflowdefinitionid_idx"
VERSION_NUMBER = "workflowdefinitionid_versionnumber_key"


def _definition(fields: Mapping[str, str]) -> WorkflowDefinition:
    return from_stored(WorkflowDefinition, decode_record(_DEFS, fields))


def _version(fields: Mapping[str, str]) -> WorkflowDefinitionVersion:
    return from_stored(WorkflowDefinitionVersion, decode_record(_VERSIONS, fields))


class _Missing(Exception):
    """An update looked up a version not read yet."""

    def __init__(self, version_id: str) -> None:
        self.version_id = version_id


class RedisWorkflowDefinitions(RedisDomain, WorkflowDefinitionsDomain):
    """Workflow definitions and their numbered versions on Redis (standalone or cluster)."""

    tables = ("workflow_definitions", "workflow_definition_versions")
    indexes = (*DEF_INDEXES, *VERSION_INDEXES)
    pointers = ((_V, VERSION_DEFINITION, "id", "workflowDefinitionId"),)
    uniques = ((_V, VERSION_NUMBER, ("workflowDefinitionId", "versionNumber")),)
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True, concurrent_updates=True, transactions=True
    )
    # A definition's records share a slot; its entry in the whole-table sets follows.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(concurrent_updates=True)

    # -- keys --------------------------------------------------------------------------------------

    def _def_key(self, definition_id: str) -> str:
        return self.keys.record("workflow_definitions", definition_id)

    def _version_key(self, definition_id: str, version_id: str) -> str:
        return self.keys.record(_V, definition_id, pack(version_id))

    def _pointer(self, version_id: str) -> str:
        return self.keys.pointer(_V, VERSION_DEFINITION, version_id)

    def _number_key(self, definition_id: str, number: int) -> str:
        return f"{self.keys.pointer(_V, VERSION_NUMBER, definition_id)}:{number}"

    async def _version_raw(self, version_id: str) -> dict[str, str] | None:
        found = await records.locate(
            self, self._pointer(version_id), lambda d: self._version_key(d, version_id)
        )
        return None if found is None else found[1]

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        if table == "workflow_definitions":
            return await self._raw(table, self._def_key(key["id"]))
        found = await records.locate(
            self, self._pointer(key["id"]), lambda d: self._version_key(d, key["id"])
        )
        return None if found is None else await self._raw(table, found[0])

    # -- definitions -------------------------------------------------------------------------------

    async def _insert_definition(self, definition: WorkflowDefinition) -> bool:
        # docstring inherited
        return await records.insert(
            self, self._def_key(definition.id), _DEFS, DEF_INDEXES, definition.stored()
        )

    async def _get_definition(self, definition_id: str) -> WorkflowDefinition | None:
        # docstring inherited
        [raw] = await self.conn.read([["HGETALL", self._def_key(definition_id)]])
        return _definition(raw) if raw else None

    async def _update_definition(
        self, definition_id: str, update: DefinitionUpdate
    ) -> WorkflowDefinition | None:
        # docstring inherited
        key = self._def_key(definition_id)
        # Versions are immutable: one read of each looked-up version serves every attempt.
        seen: dict[str, WorkflowDefinitionVersion | None] = {}

        def lookup(version_id: str) -> WorkflowDefinitionVersion | None:
            if version_id not in seen:
                raise _Missing(version_id)
            return seen[version_id]

        async def attempt() -> tuple[WorkflowDefinition | None] | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            if not raw:
                return (None,)
            while True:
                try:
                    updated = update(_definition(raw), lookup)
                    break
                except _Missing as missing:
                    found = await self._version_raw(missing.version_id)
                    seen[missing.version_id] = _version(found) if found else None
            batch = self.batch()
            records.guard(batch, key, _DEFS, raw)
            records.put(self, batch, key, _DEFS, DEF_INDEXES, raw, updated.stored())
            return (updated,) if await self.conn.apply(batch) else None

        (result,) = await self.optimistic(attempt, f"update_workflow_definition({definition_id!r})")
        return result

    async def _delete_definition(self, definition_id: str) -> None:
        # docstring inherited
        key = self._def_key(definition_id)

        async def attempt() -> bool | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            page = await self.conn.page(
                *self.index_set(VERSION_LISTINGS["versionNumber"], [definition_id]),
                records=self.keys.record_prefix(_V, definition_id),
            )
            assert page.records is not None
            batch = self.batch()
            records.guard(batch, key, _DEFS, raw)
            records.drop(self, batch, key, _DEFS, DEF_INDEXES, raw)
            for member, version in zip(page.members, page.records, strict=True):
                if not version:
                    continue
                version_id = unpack(member)[0]
                vkey = self._version_key(definition_id, version_id)
                batch.expect_exists(vkey)
                records.drop(self, batch, vkey, _VERSIONS, VERSION_INDEXES, version)
                batch.delete(self._number_key(definition_id, int(version["versionNumber"])))
                batch.delete(self._pointer(version_id))
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"delete_workflow_definition({definition_id!r})")

    async def _list_definitions(
        self, query: DefinitionQuery
    ) -> tuple[list[WorkflowDefinition], int]:
        # docstring inherited
        index = DEFS_BY_CREATED if query.order_field == "createdAt" else DEFS_BY_UPDATED
        w = query.window
        page = await self.conn.page(
            *self.index_set(index, []),
            reverse=query.descending,
            offset=w.offset,
            count=w.fetch,
            total=True,
        )
        found = await transfer.read_hashes(
            self, [self._def_key(unpack(m)[0]) for m in page.members]
        )
        return [_definition(raw) for raw in found if raw], page.total or 0

    # -- versions ----------------------------------------------------------------------------------

    async def _create_version(
        self, definition_id: str, number: int | None, build: VersionFactory
    ) -> WorkflowDefinitionVersion | Literal["missing_definition", "number_taken", "id_taken"]:
        # docstring inherited
        key = self._def_key(definition_id)
        by_number, companion = self.index_set(VERSION_LISTINGS["versionNumber"], [definition_id])

        async def attempt() -> (
            WorkflowDefinitionVersion
            | Literal["missing_definition", "number_taken", "id_taken"]
            | None
        ):
            [exists] = await self.conn.read([["EXISTS", key]])
            if not exists:
                return "missing_definition"
            n = number
            if n is None:
                last = await self.conn.page(by_number, companion, reverse=True, count=1)
                n = 1
                if last.members:
                    [found] = await self.conn.read(
                        [["HGET", self._version_key(definition_id, unpack(last.members[0])[0]),
                          "versionNumber"]]
                    )
                    n = int(found) + 1 if found is not None else 1
            number_key = self._number_key(definition_id, n)
            version = build(n)
            pointer = self._pointer(version.id)
            taken, owner = await self.conn.read([["EXISTS", number_key], ["GET", pointer]])
            if taken:
                return "number_taken" if number is not None else None
            if owner is not None:
                [stale] = await self.conn.read([["EXISTS", self._version_key(owner, version.id)]])
                if stale:
                    return "id_taken"
            vkey = self._version_key(definition_id, version.id)
            batch = self.batch()
            # The definition's slot first: on a cluster its guarded step runs before the
            # pointer's, so a lost race on the number leaves no pointer behind.
            batch.expect_exists(key)
            batch.expect_value(number_key, None)
            records.guard(batch, vkey, _VERSIONS, None)
            records.put(self, batch, vkey, _VERSIONS, VERSION_INDEXES, None, version.stored())
            batch.set_string(number_key, version.id)
            batch.expect_value(pointer, owner)
            batch.set_string(pointer, definition_id)
            return version if await self.conn.apply(batch) else None

        return await self.optimistic(attempt, f"create_version({definition_id!r})")

    async def _get_version(self, version_id: str) -> WorkflowDefinitionVersion | None:
        # docstring inherited
        raw = await self._version_raw(version_id)
        return _version(raw) if raw else None

    async def _get_version_by_number(
        self, definition_id: str, number: int
    ) -> WorkflowDefinitionVersion | None:
        # docstring inherited
        [version_id] = await self.conn.read([["GET", self._number_key(definition_id, number)]])
        if version_id is None:
            return None
        [raw] = await self.conn.read([["HGETALL", self._version_key(definition_id, version_id)]])
        return _version(raw) if raw else None

    async def _list_versions(
        self, query: VersionQuery
    ) -> tuple[list[WorkflowDefinitionVersion], int]:
        # docstring inherited
        definition_id = query.workflow_definition_id
        w = query.window
        page = await self.conn.page(
            *self.index_set(VERSION_LISTINGS[query.order_field], [definition_id]),
            reverse=query.descending,
            offset=w.offset,
            count=w.fetch,
            total=query.count,
            records=self.keys.record_prefix(_V, definition_id),
        )
        assert page.records is not None
        return [_version(raw) for raw in page.records if raw], page.total or 0

    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        if table == "workflow_definitions":
            return await self._export_from(
                DEFS_BY_CREATED, cursor, limit, lambda m: self._def_key(unpack(m)[0]),
                _definition,
            )

        def key_of(member: str) -> str:
            definition_id, version_id = unpack(member)
            return self._version_key(definition_id, version_id)

        return await self._export_from(ALL_VERSIONS, cursor, limit, key_of, _version)

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        if table == "workflow_definitions":
            return await self._fetch_keys([self._def_key(k[0]) for k in keys], _definition)
        found = [await self._version_raw(k[0]) for k in keys]
        return [_version(raw) for raw in found if raw]

    async def _import(self, table: str, records_: list[Record]) -> None:
        # docstring inherited
        for record in records_:
            if isinstance(record, WorkflowDefinition):
                await records.upsert(
                    self, self._def_key(record.id), _DEFS, DEF_INDEXES, record.stored()
                )
            elif isinstance(record, WorkflowDefinitionVersion):
                await self._import_version(record)

    async def _import_version(self, version: WorkflowDefinitionVersion) -> None:
        definition_id = version.workflow_definition_id
        key = self._version_key(definition_id, version.id)
        pointer = self._pointer(version.id)

        async def attempt() -> bool | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            batch = self.batch()
            records.guard(batch, key, _VERSIONS, raw)
            if raw:
                batch.delete(self._number_key(definition_id, int(raw["versionNumber"])))
            records.put(self, batch, key, _VERSIONS, VERSION_INDEXES, raw, version.stored())
            batch.set_string(self._number_key(definition_id, version.version_number), version.id)
            batch.set_string(pointer, definition_id)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"import workflow definition version {version.id!r}")

    async def _count(self, table: str) -> int:
        # docstring inherited
        index = DEFS_BY_CREATED if table == "workflow_definitions" else ALL_VERSIONS
        return await transfer.count_index(self, index)
