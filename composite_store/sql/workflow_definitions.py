"""The workflow definitions domain in SQL, written once for every relational backend."""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store.domains.workflow_definitions import (
    DefinitionQuery,
    DefinitionUpdate,
    VersionFactory,
    VersionQuery,
    WorkflowDefinitionsDomain,
)
from composite_store.records.trusted import from_row
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.schema import table
from composite_store.sql.domain import SqlDomain

__all__ = ["SqlWorkflowDefinitions"]

DEFINITIONS = table("workflow_definitions")
VERSIONS = table("workflow_definition_versions")


class SqlWorkflowDefinitions(SqlDomain, WorkflowDefinitionsDomain):
    """Workflow definitions and their numbered versions on a relational backend."""

    # -- helpers ---------------------------------------------------------------------------------

    def _definition(
        self, conn: Connection, definition_id: str, *, lock: bool = False
    ) -> WorkflowDefinition | None:
        stmt = self.select_all("workflow_definitions").where(
            self.tables["workflow_definitions"].c.id == definition_id
        )
        if lock and self.db.dialect.supports_for_update:
            # Serialises writers of one definition (version numbering, updates).
            stmt = stmt.with_for_update()
        row = conn.execute(stmt).mappings().first()
        return from_row(WorkflowDefinition, row) if row is not None else None

    def _version(self, conn: Connection, *where: Any) -> WorkflowDefinitionVersion | None:
        stmt = self.select_all("workflow_definition_versions").where(*where).limit(1)
        row = conn.execute(stmt).mappings().first()
        return from_row(WorkflowDefinitionVersion, row) if row is not None else None

    # -- definitions -------------------------------------------------------------------------------

    async def _insert_definition(self, definition: WorkflowDefinition) -> bool:
        tbl = self.tables["workflow_definitions"]
        row = self.db.values(DEFINITIONS, definition.stored())

        def insert(conn: Connection) -> bool:
            if conn.execute(sa.select(tbl.c.id).where(tbl.c.id == definition.id)).first():
                return False
            conn.execute(tbl.insert().values(row))
            return True

        return await self.db.run(insert, write=True)

    async def _get_definition(self, definition_id: str) -> WorkflowDefinition | None:
        return await self.db.run(lambda conn: self._definition(conn, definition_id))

    async def _update_definition(
        self, definition_id: str, update: DefinitionUpdate
    ) -> WorkflowDefinition | None:
        tbl = self.tables["workflow_definitions"]
        versions = self.tables["workflow_definition_versions"]

        def apply(conn: Connection) -> WorkflowDefinition | None:
            current = self._definition(conn, definition_id, lock=True)
            if current is None:
                return None
            updated = update(current, lambda vid: self._version(conn, versions.c.id == vid))
            values = self.db.values(DEFINITIONS, updated.stored())
            del values["id"]
            conn.execute(tbl.update().where(tbl.c.id == definition_id).values(values))
            return updated

        return await self.db.run(apply, write=True)

    async def _delete_definition(self, definition_id: str) -> None:
        tbl = self.tables["workflow_definitions"]
        versions = self.tables["workflow_definition_versions"]

        def delete(conn: Connection) -> None:
            conn.execute(versions.delete().where(versions.c.workflowDefinitionId == definition_id))
            conn.execute(tbl.delete().where(tbl.c.id == definition_id))

        await self.db.run(delete, write=True)

    async def _list_definitions(
        self, query: DefinitionQuery
    ) -> tuple[list[WorkflowDefinition], int]:
        tbl = self.tables["workflow_definitions"]
        order = (tbl.c[query.order_field], tbl.c.id)
        stmt = self.select_all("workflow_definitions").order_by(
            *(c.desc() if query.descending else c.asc() for c in order)
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl)

        return await self.read_page(WorkflowDefinition, stmt, count)

    # -- versions ----------------------------------------------------------------------------------

    async def _create_version(
        self, definition_id: str, number: int | None, build: VersionFactory
    ) -> WorkflowDefinitionVersion | Literal["missing_definition", "number_taken", "id_taken"]:
        versions = self.tables["workflow_definition_versions"]
        of_definition = versions.c.workflowDefinitionId == definition_id

        def create(
            conn: Connection,
        ) -> WorkflowDefinitionVersion | Literal["missing_definition", "number_taken", "id_taken"]:
            if self._definition(conn, definition_id, lock=True) is None:
                return "missing_definition"
            n = number
            if n is None:
                top = conn.execute(
                    sa.select(sa.func.max(versions.c.versionNumber)).where(of_definition)
                ).scalar()
                n = int(top or 0) + 1
            elif self._version(conn, of_definition, versions.c.versionNumber == n) is not None:
                return "number_taken"
            version = build(n)
            if self._version(conn, versions.c.id == version.id) is not None:
                return "id_taken"
            conn.execute(versions.insert().values(self.db.values(VERSIONS, version.stored())))
            return version

        return await self.db.run(create, write=True)

    async def _get_version(self, version_id: str) -> WorkflowDefinitionVersion | None:
        versions = self.tables["workflow_definition_versions"]
        return await self.db.run(lambda conn: self._version(conn, versions.c.id == version_id))

    async def _get_version_by_number(
        self, definition_id: str, number: int
    ) -> WorkflowDefinitionVersion | None:
        versions = self.tables["workflow_definition_versions"]
        return await self.db.run(
            lambda conn: self._version(
                conn,
                versions.c.workflowDefinitionId == definition_id,
                versions.c.versionNumber == number,
            )
        )

    async def _list_versions(
        self, query: VersionQuery
    ) -> tuple[list[WorkflowDefinitionVersion], int]:
        versions = self.tables["workflow_definition_versions"]
        where = versions.c.workflowDefinitionId == query.workflow_definition_id
        order = (versions.c[query.order_field], versions.c.id)
        stmt = (
            self.select_all("workflow_definition_versions")
            .where(where)
            .order_by(*(c.desc() if query.descending else c.asc() for c in order))
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(versions).where(where)

        rows, total = await self.read_page(
            WorkflowDefinitionVersion, stmt, count if query.count else None
        )
        return rows, total or 0
