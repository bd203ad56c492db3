"""Records of the experiments domain: experiment runs, their per-item results, review counts."""

from __future__ import annotations

from typing import Any, Literal

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

__all__ = [
    "Experiment",
    "ExperimentResult",
    "ExperimentStatus",
    "ResultStatus",
    "ReviewSummary",
]

#: Lifecycle of an experiment run.
ExperimentStatus = Literal["pending", "running", "completed", "failed"]
#: Review state of one result.
ResultStatus = Literal["needs-review", "reviewed", "complete"]


class Experiment(StampedRecord):
    """One run of a target (agent, workflow, scorer, ...) over a dataset's items."""

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    name: Text | None = None
    description: Text | None = None
    metadata: JsonObject | None = None
    dataset_id: Id | None = stored("datasetId", default=None)
    dataset_version: Int64 | None = stored("datasetVersion", default=None, ge=0)
    # create_experiment requires both; nullable as stored (Mastra 1.x leaves them null).
    target_type: Id | None = stored("targetType", default=None, min_length=1)
    target_id: Id | None = stored("targetId", default=None, min_length=1)
    status: ExperimentStatus = "pending"
    total_items: Int64 = stored("totalItems", default=0, ge=0)
    succeeded_count: Int64 = stored("succeededCount", default=0, ge=0)
    failed_count: Int64 = stored("failedCount", default=0, ge=0)
    skipped_count: Int64 = stored("skippedCount", default=0, ge=0)
    # Mastra 1.x's: provenance, grouping of compared runs, scorers, tenancy.
    provenance: JsonValue = None
    runner_attestation: JsonValue = stored("runnerAttestation", default=None)
    experiment_set_id: Id | None = stored("experimentSetId", default=None)
    comparison_id: Id | None = stored("comparisonId", default=None)
    variant_id: Id | None = stored("variantId", default=None)
    trial_index: Int64 | None = stored("trialIndex", default=None)
    scorer_ids: StringList | None = stored("scorerIds", default=None)
    agent_version: Text | None = stored("agentVersion", default=None)
    organization_id: Id | None = stored("organizationId", default=None)
    project_id: Id | None = stored("projectId", default=None)
    started_at: Timestamp | None = stored("startedAt", default=None)
    completed_at: Timestamp | None = stored("completedAt", default=None)
    # Nullable as documented (rows written elsewhere may lack them); ours always set them.
    created_at: Timestamp | None = when("createdAt")
    updated_at: Timestamp | None = when("updatedAt")

    @field_validator("id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)


class ExperimentResult(Record):
    """The outcome of running one dataset item in one experiment (unique per item)."""

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    experiment_id: Id = stored("experimentId", min_length=1)
    item_id: Id = stored("itemId", min_length=1)
    item_dataset_version: Int64 | None = stored("itemDatasetVersion", default=None, ge=0)
    input: JsonValue
    output: JsonValue = None
    ground_truth: JsonValue = stored("groundTruth", default=None)
    error: JsonValue = None
    started_at: Timestamp = when("startedAt")
    completed_at: Timestamp = when("completedAt")
    retry_count: Int64 = stored("retryCount", default=0, ge=0)
    trace_id: Id | None = stored("traceId", default=None)
    status: ResultStatus | None = None
    tags: StringList | None = None
    # Mastra 1.x's: metadata, the attempt, a reviewer's comment, tool mocks, tenancy.
    metadata: JsonObject | None = None
    attempt: Int64 | None = None
    comment: Text | None = None
    tool_mock_report: JsonValue = stored("toolMockReport", default=None)
    organization_id: Id | None = stored("organizationId", default=None)
    project_id: Id | None = stored("projectId", default=None)
    created_at: Timestamp | None = when("createdAt")

    @field_validator("input")
    @classmethod
    def _input_required(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("input is required (a JSON value, not None)")
        return value

    @field_validator("id", "experiment_id", "item_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)


class ReviewSummary(Record):
    """How many results of one experiment are in each review state (``total`` counts all)."""

    experiment_id: str = stored("experimentId")
    total: int = 0
    needs_review: int = stored("needsReview", default=0)
    reviewed: int = 0
    complete: int = 0
