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

    id: str = Field(default_factory=uuid4_str, min_length=1)
    scorer_id: str = stored("scorerId", min_length=1)
    trace_id: str | None = stored("traceId", default=None)
    span_id: str | None = stored("spanId", default=None)
    run_id: str = stored("runId", min_length=1)
    scorer: dict[str, Any]
    preprocess_step_result: Any = stored("preprocessStepResult", default=None)
    extract_step_result: Any = stored("extractStepResult", default=None)
    analyze_step_result: Any = stored("analyzeStepResult", default=None)
    score: float
    reason: str | None = None
    metadata: dict[str, Any] | None = None
    preprocess_prompt: str | None = stored("preprocessPrompt", default=None)
    extract_prompt: str | None = stored("extractPrompt", default=None)
    generate_score_prompt: str | None = stored("generateScorePrompt", default=None)
    generate_reason_prompt: str | None = stored("generateReasonPrompt", default=None)
    analyze_prompt: str | None = stored("analyzePrompt", default=None)
    reason_prompt: str | None = stored("reasonPrompt", default=None)
    input: Any
    output: Any
    additional_context: Any = stored("additionalContext", default=None)
    request_context: Any = stored("requestContext", default=None)
    entity_type: str | None = stored("entityType", default=None)
    entity: dict[str, Any] | None = None
    entity_id: str | None = stored("entityId", default=None)
    source: ScoreSource
    resource_id: str | None = stored("resourceId", default=None)
    thread_id: str | None = stored("threadId", default=None)
    # Mastra 1.x's: tenancy, and the batch / dataset item an experiment scored.
    organization_id: str | None = stored("organizationId", default=None)
    project_id: str | None = stored("projectId", default=None)
    batch_id: str | None = stored("batchId", default=None)
    dataset_id: str | None = stored("datasetId", default=None)
    dataset_item_id: str | None = stored("datasetItemId", default=None)
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
        if isinstance(value, (int, float)) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class EvalRecord(Record):
    """One eval (metric) result of an agent run (``mastra_evals``, Mastra's legacy evals).

    Stored names are snake_case; Mastra's API spellings (``agentName``, ``testInfo``,
    ``globalRunId``, ...) are accepted too. ``run_id`` and ``global_run_id`` default to new
    UUID4s. ``result`` is ``{"score": number, "details"?: ...}``; ``test_info`` is set (with a
    ``testPath``) for evals of test runs and None for live ones.
    """

    input: str
    output: str
    result: dict[str, Any]
    agent_name: str = stored("agent_name", "agentName", min_length=1)
    metric_name: str = stored("metric_name", "metricName", min_length=1)
    instructions: str = ""
    test_info: dict[str, Any] | None = stored("test_info", "testInfo", default=None)
    global_run_id: str = stored(
        "global_run_id", "globalRunId", default_factory=uuid4_str, min_length=1
    )
    run_id: str = stored("run_id", "runId", default_factory=uuid4_str, min_length=1)
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
