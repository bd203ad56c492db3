"""Records of the datasets domain: datasets, their versioned items and their version log."""

from __future__ import annotations

from typing import Any

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

__all__ = ["Dataset", "DatasetItem", "DatasetItemInput", "DatasetVersion"]


def _required_json(value: Any) -> Any:
    if value is None:
        raise ValueError("input is required (a JSON value, not None)")
    return value


class Dataset(StampedRecord):
    """A dataset: named examples for experiments, optionally held to JSON Schemas.

    ``version`` counts the item mutations (0 while the dataset is empty and untouched).
    """

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    name: Text = Field(min_length=1)
    description: Text | None = None
    metadata: JsonObject | None = None
    input_schema: JsonObject | None = stored("inputSchema", default=None)
    ground_truth_schema: JsonObject | None = stored("groundTruthSchema", default=None)
    tags: StringList | None = None
    target_type: Text | None = stored("targetType", default=None)
    target_ids: StringList | None = stored("targetIds", default=None)
    scorer_ids: StringList | None = stored("scorerIds", default=None)
    version: Int64 = Field(default=0, ge=0)
    # Mastra 1.x's: the request-context schema, tenancy, and the candidate it was made for.
    request_context_schema: JsonObject | None = stored("requestContextSchema", default=None)
    organization_id: Id | None = stored("organizationId", default=None)
    project_id: Id | None = stored("projectId", default=None)
    candidate_key: Text | None = stored("candidateKey", default=None)
    candidate_id: Id | None = stored("candidateId", default=None)
    # Nullable as documented (rows written elsewhere may lack them); ours always set them.
    created_at: Timestamp | None = when("createdAt")
    updated_at: Timestamp | None = when("updatedAt")

    @field_validator("id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)


class DatasetItemInput(Record):
    """One item to add to a dataset (``add_item``, ``batch_insert_items``); the id is optional."""

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    input: JsonValue
    ground_truth: JsonValue = stored("groundTruth", default=None)
    request_context: JsonObject | None = stored("requestContext", default=None)
    metadata: JsonObject | None = None
    source: JsonObject | None = None

    @field_validator("input")
    @classmethod
    def _input_required(cls, value: Any) -> Any:
        return _required_json(value)

    @field_validator("id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)


class DatasetItem(StampedRecord):
    """One stored row of an item's history (SCD-2).

    The row written at dataset version ``dataset_version`` stays current until the version
    ``valid_to`` replaced it; a tombstone (``is_deleted``) records the item's deletion.
    """

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    dataset_id: Id = stored("datasetId", min_length=1)
    dataset_version: Int64 = stored("datasetVersion", ge=1)
    valid_to: Int64 | None = stored("validTo", default=None)
    is_deleted: bool = stored("isDeleted", default=False)
    input: JsonValue
    ground_truth: JsonValue = stored("groundTruth", default=None)
    request_context: JsonObject | None = stored("requestContext", default=None)
    metadata: JsonObject | None = None
    source: JsonObject | None = None
    # Mastra 1.x's: trajectory and tool mocks of agent items, scorers, tenancy, external id.
    expected_trajectory: JsonValue = stored("expectedTrajectory", default=None)
    tool_mocks: JsonValue = stored("toolMocks", default=None)
    unmocked_tool_policy: Text | None = stored("unmockedToolPolicy", default=None)
    scorer_ids: StringList | None = stored("scorerIds", default=None)
    organization_id: Id | None = stored("organizationId", default=None)
    project_id: Id | None = stored("projectId", default=None)
    external_id: Id | None = stored("externalId", default=None)
    created_at: Timestamp | None = when("createdAt")
    updated_at: Timestamp | None = when("updatedAt")

    @field_validator("input")
    @classmethod
    def _input_required(cls, value: Any) -> Any:
        return _required_json(value)

    @field_validator("id", "dataset_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)


class DatasetVersion(Record):
    """One entry of a dataset's version log: the mutation that produced ``version``."""

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    dataset_id: Id = stored("datasetId", min_length=1)
    version: Int64 = Field(ge=1)
    created_at: Timestamp | None = when("createdAt")

    @field_validator("id", "dataset_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        # A blank id is written but never read back (every lookup refuses it).
        return not_blank(value)
