"""Records of the workflow definitions domain (beta): definitions and their numbered versions."""

from __future__ import annotations

from pydantic import Field, field_validator

from composite_store.records.base import (
    Record,
    StampedRecord,
    Timestamp,
    not_blank,
    stored,
    uuid4_str,
    when,
)
from composite_store.records.json import Id, Int64, JsonObject, JsonValue, StringList, Text

__all__ = ["WorkflowDefinition", "WorkflowDefinitionVersion"]


class WorkflowDefinition(StampedRecord):
    """A stored workflow definition; ``active_version_id`` names the version in use."""

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    name: Text = Field(min_length=1)
    description: Text | None = None
    metadata: JsonObject | None = None
    active_version_id: Id | None = stored("activeVersionId", default=None)
    # Mastra 1.71's definition fields (another model of definitions; kept as stored).
    input_schema: JsonValue = stored("inputSchema", default=None)
    output_schema: JsonValue = stored("outputSchema", default=None)
    state_schema: JsonValue = stored("stateSchema", default=None)
    request_context_schema: JsonValue = stored("requestContextSchema", default=None)
    graph: JsonValue = None
    schedule: JsonValue = None
    status: Text | None = None
    source: Text | None = None
    author_id: Id | None = stored("authorId", default=None)
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")

    @field_validator("id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)


class WorkflowDefinitionVersion(Record):
    """An immutable snapshot of a definition, numbered 1, 2, ... per definition."""

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    workflow_definition_id: Id = stored("workflowDefinitionId", min_length=1)
    version_number: Int64 = stored("versionNumber", ge=1)
    snapshot: JsonValue = None
    changed_fields: StringList | None = stored("changedFields", default=None)
    change_message: Text | None = stored("changeMessage", default=None)
    created_at: Timestamp = when("createdAt")

    @field_validator("id", "workflow_definition_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)
