"""The records of every domain: pydantic models with stored names as aliases."""

from composite_store.records.base import Record, Timestamp, coerce, now_utc, to_utc_ms
from composite_store.records.datasets import (
    Dataset,
    DatasetItem,
    DatasetItemInput,
    DatasetVersion,
)
from composite_store.records.experiments import (
    Experiment,
    ExperimentResult,
    ExperimentStatus,
    ResultStatus,
    ReviewSummary,
)
from composite_store.records.memory import (
    CloneResult,
    Message,
    MessageContent,
    MessageUpdate,
    Resource,
    Role,
    Thread,
)
from composite_store.records.observability import (
    OtelSpan,
    Span,
    SpanUpdate,
    Trace,
    TraceStatus,
)
from composite_store.records.scores import EvalRecord, EvalType, Score, ScoreSource
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.records.workflows import WorkflowRun

__all__ = [
    "CloneResult",
    "Dataset",
    "DatasetItem",
    "DatasetItemInput",
    "DatasetVersion",
    "EvalRecord",
    "EvalType",
    "Experiment",
    "ExperimentResult",
    "ExperimentStatus",
    "Message",
    "MessageContent",
    "MessageUpdate",
    "OtelSpan",
    "Record",
    "Resource",
    "ResultStatus",
    "ReviewSummary",
    "Role",
    "Score",
    "ScoreSource",
    "Span",
    "SpanUpdate",
    "Thread",
    "Timestamp",
    "Trace",
    "TraceStatus",
    "WorkflowDefinition",
    "WorkflowDefinitionVersion",
    "WorkflowRun",
    "coerce",
    "now_utc",
    "to_utc_ms",
]
