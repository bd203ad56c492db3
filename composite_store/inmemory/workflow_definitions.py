"""The workflow definitions domain in process memory (the reference implementation)."""

from __future__ import annotations

from typing import Literal

from composite_store.domains.workflow_definitions import (
    DefinitionQuery,
    DefinitionUpdate,
    VersionFactory,
    VersionQuery,
    WorkflowDefinitionsDomain,
)
from composite_store.inmemory.base import InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)

__all__ = ["InMemoryWorkflowDefinitions"]

_FIELDS = {
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "versionNumber": "version_number",
}


class InMemoryWorkflowDefinitions(InMemoryDomain, WorkflowDefinitionsDomain):
    """Definitions and their versions in dictionaries keyed by id."""

    tables = ("workflow_definitions", "workflow_definition_versions")
    layouts = {
        "workflow_definitions": Layout(WorkflowDefinition, ("id",)),
        "workflow_definition_versions": Layout(
            WorkflowDefinitionVersion, ("id",), unique=(("workflowDefinitionId", "versionNumber"),)
        ),
    }

    @property
    def _definitions(self) -> dict[str, WorkflowDefinition]:
        return self.data.table("workflow_definitions")

    @property
    def _versions(self) -> dict[str, WorkflowDefinitionVersion]:
        return self.data.table("workflow_definition_versions")

    def _versions_of(self, definition_id: str) -> list[WorkflowDefinitionVersion]:
        return [v for v in self._versions.values() if v.workflow_definition_id == definition_id]

    # -- definitions -------------------------------------------------------------------------------

    async def _insert_definition(self, definition: WorkflowDefinition) -> bool:
        if definition.id in self._definitions:
            return False
        self._definitions[definition.id] = definition.model_copy(deep=True)
        return True

    async def _get_definition(self, definition_id: str) -> WorkflowDefinition | None:
        found = self._definitions.get(definition_id)
        return found.model_copy(deep=True) if found is not None else None

    async def _update_definition(
        self, definition_id: str, update: DefinitionUpdate
    ) -> WorkflowDefinition | None:
        current = self._definitions.get(definition_id)
        if current is None:
            return None

        def lookup(version_id: str) -> WorkflowDefinitionVersion | None:
            found = self._versions.get(version_id)
            return found.model_copy(deep=True) if found is not None else None

        updated = update(current.model_copy(deep=True), lookup)
        self._definitions[definition_id] = updated.model_copy(deep=True)
        return updated

    async def _delete_definition(self, definition_id: str) -> None:
        self._definitions.pop(definition_id, None)
        for version in self._versions_of(definition_id):
            del self._versions[version.id]

    async def _list_definitions(
        self, query: DefinitionQuery
    ) -> tuple[list[WorkflowDefinition], int]:
        field = _FIELDS[query.order_field]
        found = list(self._definitions.values())
        rows = paginate(
            found,
            lambda d: (getattr(d, field), d.id),
            descending=query.descending,
            window=query.window,
        )
        return [d.model_copy(deep=True) for d in rows], len(found)

    # -- versions ----------------------------------------------------------------------------------

    async def _create_version(
        self, definition_id: str, number: int | None, build: VersionFactory
    ) -> WorkflowDefinitionVersion | Literal["missing_definition", "number_taken", "id_taken"]:
        # No await between reading and writing: numbering is atomic on the event loop.
        if definition_id not in self._definitions:
            return "missing_definition"
        existing = self._versions_of(definition_id)
        if number is None:
            number = max((v.version_number for v in existing), default=0) + 1
        elif any(v.version_number == number for v in existing):
            return "number_taken"
        version = build(number)
        if version.id in self._versions:
            return "id_taken"
        self._versions[version.id] = version.model_copy(deep=True)
        return version

    async def _get_version(self, version_id: str) -> WorkflowDefinitionVersion | None:
        found = self._versions.get(version_id)
        return found.model_copy(deep=True) if found is not None else None

    async def _get_version_by_number(
        self, definition_id: str, number: int
    ) -> WorkflowDefinitionVersion | None:
        for version in self._versions_of(definition_id):
            if version.version_number == number:
                return version.model_copy(deep=True)
        return None

    async def _list_versions(
        self, query: VersionQuery
    ) -> tuple[list[WorkflowDefinitionVersion], int]:
        field = _FIELDS[query.order_field]
        found = self._versions_of(query.workflow_definition_id)
        rows = paginate(
            found,
            lambda v: (getattr(v, field), v.id),
            descending=query.descending,
            window=query.window,
        )
        return [v.model_copy(deep=True) for v in rows], len(found)
