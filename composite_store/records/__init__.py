"""The records of every domain: pydantic models with stored names as aliases."""

from composite_store.records.base import Record, Timestamp, coerce, now_utc, to_utc_ms
from composite_store.records.memory import (
    CloneResult,
    Message,
    MessageContent,
    MessageUpdate,
    Resource,
    Role,
    Thread,
)
from composite_store.records.workflows import WorkflowRun

__all__ = [
    "CloneResult",
    "Message",
    "MessageContent",
    "MessageUpdate",
    "Record",
    "Resource",
    "Role",
    "Thread",
    "Timestamp",
    "WorkflowRun",
    "coerce",
    "now_utc",
    "to_utc_ms",
]
