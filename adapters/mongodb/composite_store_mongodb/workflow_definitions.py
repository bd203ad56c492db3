"""The workflow definitions domain on MongoDB (beta): definitions and numbered versions."""

from __future__ import annotations

from typing import Literal

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

from composite_store.domains.workflow_definitions import (
    DefinitionQuery,
    DefinitionUpdate,
    VersionFactory,
    VersionQuery,
    WorkflowDefinitionsDomain,
)
from composite_store.errors import ConflictError
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.schema import table
from composite_store_mongodb.cas import MAX_ATTEMPTS, update_document, with_loader
from composite_store_mongodb.connection import Document, Session
from composite_store_mongodb.documents import NO_ID, document, from_document
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of

__all__ = ["MongoWorkflowDefinitions"]

DEFINITIONS = table("workflow_definitions")
VERSIONS = table("workflow_definition_versions")
Outcome = Literal["missing_definition", "number_taken", "id_taken"]


class MongoWorkflowDefinitions(MongoDomain, WorkflowDefinitionsDomain):
    """Definitions by ``id``; versions by ``id``, numbered uniquely per definition."""

    # -- definitions -----------------------------------------------------------------------------

    async def _insert_definition(self, definition: WorkflowDefinition) -> bool:
        coll = self.c("workflow_definitions")

        async def insert(_: Session) -> bool:
            try:
                await coll.insert_one(document(DEFINITIONS, definition))
            except DuplicateKeyError:
                return False
            return True

        return await self.conn.run(insert)

    async def _get_definition(self, definition_id: str) -> WorkflowDefinition | None:
        coll = self.c("workflow_definitions")
        doc = await self.conn.run(lambda _: coll.find_one({"id": definition_id}, NO_ID))
        return from_document(WorkflowDefinition, doc) if doc is not None else None

    async def _update_definition(
        self, definition_id: str, update: DefinitionUpdate
    ) -> WorkflowDefinition | None:
        async def compute(current: Document) -> Document:
            definition = from_document(WorkflowDefinition, current)
            updated = await with_loader(
                lambda lookup: update(definition, lookup), self._get_version
            )
            return document(DEFINITIONS, updated)

        new = await update_document(
            self.conn, self.c("workflow_definitions"), DEFINITIONS, {"id": definition_id}, compute
        )
        return from_document(WorkflowDefinition, new) if new is not None else None

    async def _delete_definition(self, definition_id: str) -> None:
        definitions = self.c("workflow_definitions")
        versions = self.c("workflow_definition_versions")

        async def delete(session: Session) -> None:
            await versions.delete_many({"workflowDefinitionId": definition_id}, session=session)
            await definitions.delete_one({"id": definition_id}, session=session)

        await self.conn.run(delete, atomic=True)

    async def _list_definitions(
        self, query: DefinitionQuery
    ) -> tuple[list[WorkflowDefinition], int]:
        direction = DESCENDING if query.descending else ASCENDING
        docs, total = await page_of(
            self.conn,
            self.c("workflow_definitions"),
            {},
            [(query.order_field, direction), ("id", direction)],
            query.window,
            True,
        )
        return [from_document(WorkflowDefinition, d) for d in docs], total or 0

    # -- versions --------------------------------------------------------------------------------

    async def _create_version(
        self, definition_id: str, number: int | None, build: VersionFactory
    ) -> WorkflowDefinitionVersion | Outcome:
        definitions = self.c("workflow_definitions")
        versions = self.c("workflow_definition_versions")

        async def create(session: Session) -> WorkflowDefinitionVersion | Outcome:
            exists = await definitions.find_one({"id": definition_id}, {"_id": 1}, session=session)
            if exists is None:
                return "missing_definition"
            if number is None:
                top = await versions.find_one(
                    {"workflowDefinitionId": definition_id},
                    {"_id": 0, "versionNumber": 1},
                    sort=[("versionNumber", DESCENDING)],
                    session=session,
                )
                n = int(top["versionNumber"]) + 1 if top is not None else 1
            else:
                taken = {"workflowDefinitionId": definition_id, "versionNumber": number}
                if await versions.find_one(taken, {"_id": 1}, session=session) is not None:
                    return "number_taken"
                n = number
            version = build(n)
            if await versions.find_one({"id": version.id}, {"_id": 1}, session=session):
                return "id_taken"
            await versions.insert_one(document(VERSIONS, version), session=session)
            return version

        for _ in range(MAX_ATTEMPTS):
            try:
                return await self.conn.run(create, atomic=True)
            except ConflictError as exc:
                # A concurrent writer took the computed number between the read and the
                # insert (the unique index refused ours): compute it again. Each lost round
                # means another version landed, so this ends.
                if number is not None or not _number_taken(exc):
                    raise
        raise ConflictError(
            f"workflow definition {definition_id!r}: {MAX_ATTEMPTS} concurrent writers took "
            "every version number computed; retry"
        )

    async def _get_version(self, version_id: str) -> WorkflowDefinitionVersion | None:
        coll = self.c("workflow_definition_versions")
        doc = await self.conn.run(lambda _: coll.find_one({"id": version_id}, NO_ID))
        return from_document(WorkflowDefinitionVersion, doc) if doc is not None else None

    async def _get_version_by_number(
        self, definition_id: str, number: int
    ) -> WorkflowDefinitionVersion | None:
        coll = self.c("workflow_definition_versions")
        query = {"workflowDefinitionId": definition_id, "versionNumber": number}
        doc = await self.conn.run(lambda _: coll.find_one(query, NO_ID))
        return from_document(WorkflowDefinitionVersion, doc) if doc is not None else None

    async def _list_versions(
        self, query: VersionQuery
    ) -> tuple[list[WorkflowDefinitionVersion], int]:
        direction = DESCENDING if query.descending else ASCENDING
        docs, total = await page_of(
            self.conn,
            self.c("workflow_definition_versions"),
            {"workflowDefinitionId": query.workflow_definition_id},
            [(query.order_field, direction), ("id", direction)],
            query.window,
            query.count,
        )
        return [from_document(WorkflowDefinitionVersion, d) for d in docs], total or 0


def _number_taken(exc: ConflictError) -> bool:
    """Whether ``exc`` is the unique (workflowDefinitionId, versionNumber) index refusing."""
    cause = exc.__cause__
    if not isinstance(cause, DuplicateKeyError):
        return False
    pattern = (cause.details or {}).get("keyPattern")
    if isinstance(pattern, dict):
        return "versionNumber" in pattern
    return "versionNumber" in str(cause)
