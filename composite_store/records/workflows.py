"""Records of the workflows domain: workflow run snapshots."""

from __future__ import annotations

from pydantic import Field

from composite_store.records.base import StampedRecord, Timestamp, stored, when
from composite_store.records.json import JsonObject

__all__ = ["WorkflowRun"]


class WorkflowRun(StampedRecord):
    """One workflow run: its snapshot (the run state) keyed by (workflow_name, run_id)."""

    workflow_name: str = stored("workflow_name", "workflowName", min_length=1)
    run_id: str = stored("run_id", "runId", min_length=1)
    resource_id: str | None = stored("resourceId", default=None)
    snapshot: JsonObject = Field(default_factory=dict)
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")
