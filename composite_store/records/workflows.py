"""Records of the workflows domain: workflow run snapshots."""

from __future__ import annotations

from pydantic import Field

from composite_store.records.base import StampedRecord, Timestamp, stored, when
from composite_store.records.json import Id, JsonObject

__all__ = ["WorkflowRun"]


class WorkflowRun(StampedRecord):
    """One workflow run: its snapshot (the run state) keyed by (workflow_name, run_id)."""

    workflow_name: Id = stored("workflow_name", "workflowName", min_length=1)
    run_id: Id = stored("run_id", "runId", min_length=1)
    resource_id: Id | None = stored("resourceId", default=None)
    snapshot: JsonObject = Field(default_factory=dict)
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")
