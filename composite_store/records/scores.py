"""Records of the scores domain: scorer results (``mastra_scorers``) and eval results
(``mastra_evals``)."""

from __future__ import annotations

import math
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
from composite_store.records.json import Id, JsonObject, JsonValue, Text

__all__ = ["EvalRecord", "EvalType", "Score", "ScoreSource"]

#: Where a score comes from: a live run or a test (dataset) run.
ScoreSource = Literal["LIVE", "TEST"]
#: ``list_evals(type=...)``: evals of test runs (``test_info.testPath`` set) or live ones.
EvalType = Literal["test", "live"]


def _json_present(value: Any) -> Any:
    # The column is NOT NULL: a missing payload is an error, not a silent SQL NULL.
    if value is None:
        raise ValueError("must not be null")
    return value


class Score(StampedRecord):
    """One scorer result: the score a scorer gave one run (``mastra_scorers``).

    ``id`` defaults to a new UUID4. ``input``/``output`` hold any JSON value; ``scorer``
    describes the scorer (name, description, config) as a JSON object.
    """

    id: Id = Field(default_factory=uuid4_str, min_length=1)
    scorer_id: Id = stored("scorerId", min_length=1)
    trace_id: Id | None = stored("traceId", default=None)
    span_id: Id | None = stored("spanId", default=None)
    run_id: Id = stored("runId", min_length=1)
    scorer: JsonObject
    preprocess_step_result: JsonValue = stored("preprocessStepResult", default=None)
    extract_step_result: JsonValue = stored("extractStepResult", default=None)
    analyze_step_result: JsonValue = stored("analyzeStepResult", default=None)
    score: float
    reason: Text | None = None
    metadata: JsonObject | None = None
    preprocess_prompt: Text | None = stored("preprocessPrompt", default=None)
    extract_prompt: Text | None = stored("extractPrompt", default=None)
    generate_score_prompt: Text | None = stored("generateScorePrompt", default=None)
    generate_reason_prompt: Text | None = stored("generateReasonPrompt", default=None)
    analyze_prompt: Text | None = stored("analyzePrompt", default=None)
    reason_prompt: Text | None = stored("reasonPrompt", default=None)
    input: JsonValue
    output: JsonValue
    additional_context: JsonValue = stored("additionalContext", default=None)
    request_context: JsonValue = stored("requestContext", default=None)
    entity_type: Id | None = stored("entityType", default=None)
    entity: JsonObject | None = None
    entity_id: Id | None = stored("entityId", default=None)
    source: ScoreSource
    resource_id: Id | None = stored("resourceId", default=None)
    thread_id: Id | None = stored("threadId", default=None)
    # Mastra 1.x's: tenancy, and the batch / dataset item an experiment scored.
    organization_id: Id | None = stored("organizationId", default=None)
    project_id: Id | None = stored("projectId", default=None)
    batch_id: Id | None = stored("batchId", default=None)
    dataset_id: Id | None = stored("datasetId", default=None)
    dataset_item_id: Id | None = stored("datasetItemId", default=None)
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")

    @field_validator("id", "scorer_id", "run_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        return not_blank(value)

    @field_validator("input", "output")
    @classmethod
    def _payload_present(cls, value: Any) -> Any:
        return _json_present(value)

    @field_validator("score", mode="before")
    @classmethod
    def _finite_number(cls, value: Any) -> Any:
        # bool is an int to Python; a score of True is a caller bug. NaN/inf are not JSON and
        # SQLite stores NaN as NULL, which the NOT NULL column refuses.
        if isinstance(value, bool):
            raise ValueError("must be a number, not a boolean")
        if not isinstance(value, (int, float)):
            # A numeric string would be parsed, so it would not come back as it was given.
            raise ValueError(f"must be a number, got {type(value).__name__}")
        if isinstance(value, int) and not -(2**53) <= value <= 2**53:
            # The column is a double: a wider integer would come back as another number
            # (and one past a double's range would raise OverflowError in isfinite).
            raise ValueError("an integer score must be within +-2**53 (a double holds it exactly)")
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class EvalRecord(Record):
    """One eval (metric) result of an agent run (``mastra_evals``, Mastra's legacy evals).

    Stored names are snake_case; Mastra's API spellings (``agentName``, ``testInfo``,
    ``globalRunId``, ...) are accepted too. ``run_id`` and ``global_run_id`` default to new
    UUID4s. ``result`` is ``{"score": number, "details"?: ...}``; ``test_info`` is set (with a
    ``testPath``) for evals of test runs and None for live ones.
    """

    input: Text
    output: Text
    result: JsonObject
    agent_name: Id = stored("agent_name", "agentName", min_length=1)
    metric_name: Id = stored("metric_name", "metricName", min_length=1)
    instructions: Text = ""
    test_info: JsonObject | None = stored("test_info", "testInfo", default=None)
    global_run_id: Id = stored(
        "global_run_id", "globalRunId", default_factory=uuid4_str, min_length=1
    )
    run_id: Id = stored("run_id", "runId", default_factory=uuid4_str, min_length=1)
    created_at: Timestamp = when("created_at", "createdAt")

    @field_validator("agent_name", "metric_name", "global_run_id", "run_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        return not_blank(value)

    @field_validator("instructions", mode="before")
    @classmethod
    def _instructions_none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("result")
    @classmethod
    def _result_has_score(cls, value: dict[str, Any]) -> dict[str, Any]:
        score = value.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ValueError("must be an object with a numeric 'score' ({score, details?})")
        return value

    @property
    def is_test(self) -> bool:
        """Whether this eval comes from a test run (``test_info.testPath`` is set), as Mastra
        classifies it."""
        return self.test_info is not None and self.test_info.get("testPath") is not None
