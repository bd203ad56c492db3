"""Records of the observability domain: AI spans and traces (``mastra_ai_spans``) and
OpenTelemetry spans (``mastra_traces``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from composite_store.records.base import Record, Timestamp, not_blank, stored, when
from composite_store.records.json import (
    Id,
    Int64,
    JsonArray,
    JsonObject,
    JsonValue,
    StringList,
    Text,
    compact_json,
    json_value,
)

__all__ = [
    "INT64_MAX",
    "OtelSpan",
    "Span",
    "SpanUpdate",
    "Trace",
    "TraceStatus",
    "to_unix_nanos",
    "trace_status",
]

#: A trace's state, derived from its root span.
TraceStatus = Literal["success", "error", "running"]
#: The largest value a BIGINT column holds (nanosecond timestamps must fit).
INT64_MAX = 2**63 - 1

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def trace_status(error: Any, ended_at: datetime | None) -> TraceStatus:
    """The status of a trace from its root span: ``error`` if it has an error, ``running`` if
    it has not ended, else ``success`` (Mastra's rule)."""
    if error is not None:
        return "error"
    if ended_at is None:
        return "running"
    return "success"


def to_unix_nanos(value: datetime) -> int:
    """``value`` as integer nanoseconds since the Unix epoch (exact, no float rounding)."""
    return (value - _EPOCH) // timedelta(microseconds=1) * 1000


class Span(Record):
    """One AI span (``mastra_ai_spans``), keyed by (``trace_id``, ``span_id``).

    A span without ``parent_span_id`` is its trace's root. ``ended_at`` None means the span is
    still running; ``error`` set means it failed.
    """

    trace_id: Id = stored("traceId", min_length=1)
    span_id: Id = stored("spanId", min_length=1)
    parent_span_id: Id | None = stored("parentSpanId", default=None)
    # An id, not free text: Mastra indexes name and (entityType, entityName), and a B-tree
    # entry holds a few kilobytes (PostgreSQL refuses a longer one when it is written).
    name: Id
    span_type: Id = stored("spanType", min_length=1)
    is_event: bool = stored("isEvent", default=False)
    started_at: Timestamp = stored("startedAt")
    ended_at: Timestamp | None = stored("endedAt", default=None)
    entity_type: Id | None = stored("entityType", default=None)
    entity_id: Id | None = stored("entityId", default=None)
    entity_name: Id | None = stored("entityName", default=None)
    parent_entity_type: Id | None = stored("parentEntityType", default=None)
    parent_entity_id: Id | None = stored("parentEntityId", default=None)
    parent_entity_name: Text | None = stored("parentEntityName", default=None)
    root_entity_type: Id | None = stored("rootEntityType", default=None)
    root_entity_id: Id | None = stored("rootEntityId", default=None)
    root_entity_name: Text | None = stored("rootEntityName", default=None)
    user_id: Id | None = stored("userId", default=None)
    organization_id: Id | None = stored("organizationId", default=None)
    resource_id: Id | None = stored("resourceId", default=None)
    run_id: Id | None = stored("runId", default=None)
    session_id: Id | None = stored("sessionId", default=None)
    thread_id: Id | None = stored("threadId", default=None)
    request_id: Id | None = stored("requestId", default=None)
    environment: Text | None = None
    service_name: Text | None = stored("serviceName", default=None)
    source: Text | None = None
    # Mastra 1.x's (@mastra/core 1.71): the versions of the entities, and the experiment.
    entity_version_id: Id | None = stored("entityVersionId", default=None)
    parent_entity_version_id: Id | None = stored("parentEntityVersionId", default=None)
    root_entity_version_id: Id | None = stored("rootEntityVersionId", default=None)
    experiment_id: Id | None = stored("experimentId", default=None)
    scope: JsonObject | None = None
    metadata: JsonObject | None = None
    tags: StringList | None = None
    attributes: JsonObject | None = None
    links: JsonArray | None = None
    input: JsonValue = None
    output: JsonValue = None
    error: JsonValue = None
    request_context: JsonObject | None = stored("requestContext", default=None)
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp | None = stored("updatedAt", default=None)

    @field_validator("trace_id", "span_id", "span_type")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        return not_blank(value)

    @property
    def is_root(self) -> bool:
        """Whether this span is its trace's root (it has no parent)."""
        return self.parent_span_id is None

    @property
    def status(self) -> TraceStatus:
        """``error``, ``running`` or ``success``; on a root span (as ``list_traces`` returns)
        this is the status of its whole trace."""
        return trace_status(self.error, self.ended_at)


class SpanUpdate(Record):
    """A partial span update: every given field replaces the stored one.

    The key (``trace_id``, ``span_id``) and ``created_at`` cannot change; ``updated_at`` is
    set by the store. Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid")

    parent_span_id: Id | None = stored("parentSpanId", default=None)
    name: Id | None = None
    span_type: Id | None = stored("spanType", default=None, min_length=1)
    is_event: bool | None = stored("isEvent", default=None)
    started_at: Timestamp | None = stored("startedAt", default=None)
    ended_at: Timestamp | None = stored("endedAt", default=None)
    entity_type: Id | None = stored("entityType", default=None)
    entity_id: Id | None = stored("entityId", default=None)
    entity_name: Id | None = stored("entityName", default=None)
    parent_entity_type: Id | None = stored("parentEntityType", default=None)
    parent_entity_id: Id | None = stored("parentEntityId", default=None)
    parent_entity_name: Text | None = stored("parentEntityName", default=None)
    root_entity_type: Id | None = stored("rootEntityType", default=None)
    root_entity_id: Id | None = stored("rootEntityId", default=None)
    root_entity_name: Text | None = stored("rootEntityName", default=None)
    user_id: Id | None = stored("userId", default=None)
    organization_id: Id | None = stored("organizationId", default=None)
    resource_id: Id | None = stored("resourceId", default=None)
    run_id: Id | None = stored("runId", default=None)
    session_id: Id | None = stored("sessionId", default=None)
    thread_id: Id | None = stored("threadId", default=None)
    request_id: Id | None = stored("requestId", default=None)
    environment: Text | None = None
    service_name: Text | None = stored("serviceName", default=None)
    source: Text | None = None
    scope: JsonObject | None = None
    metadata: JsonObject | None = None
    tags: StringList | None = None
    attributes: JsonObject | None = None
    links: JsonArray | None = None
    input: JsonValue = None
    output: JsonValue = None
    error: JsonValue = None
    request_context: JsonObject | None = stored("requestContext", default=None)

    @model_validator(mode="after")
    def _required_stay_set(self) -> SpanUpdate:
        # These columns are NOT NULL: an update may change them, never clear them.
        for attr in ("name", "span_type", "is_event", "started_at"):
            if attr in self.model_fields_set and getattr(self, attr) is None:
                raise ValueError(f"{attr} cannot be cleared (it is required)")
        return self

    def changes(self) -> dict[str, Any]:
        """The given fields (attribute names), explicit Nones included: they clear a field."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class Trace(BaseModel):
    """One trace: its id and spans (oldest first)."""

    trace_id: str
    spans: list[Span]

    @property
    def root(self) -> Span | None:
        """The root span (no parent), or None while it has not been stored."""
        return next((s for s in self.spans if s.parent_span_id is None), None)

    @property
    def status(self) -> TraceStatus:
        """The trace's status, derived from its root span (``running`` without one)."""
        root = self.root
        return root.status if root is not None else "running"


def _integer(value: Any) -> Any:
    # bool is an int to Python; a start time of True is a caller bug, not 1 ns after 1970.
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    return value


class OtelSpan(Record):
    """One OpenTelemetry span (``mastra_traces``).

    ``start_time``/``end_time`` are integer nanoseconds since the Unix epoch and round-trip
    exactly. ``kind`` is OpenTelemetry's ``SpanKind`` value as its SDKs number it: 0 internal,
    1 server, 2 client, 3 producer, 4 consumer (stored as given). ``status`` is
    ``{"code": 0|1|2, "message"?: str}``. ``other`` is JSON text; a dict or list given for it
    is serialized.
    """

    id: Id = Field(min_length=1)
    parent_span_id: Id | None = stored("parentSpanId", default=None)
    name: Text
    trace_id: Id = stored("traceId", min_length=1)
    scope: Text
    kind: Int64 = Field(ge=0, le=4)
    attributes: JsonObject | None = None
    status: JsonObject | None = None
    events: JsonArray | None = None
    links: JsonArray | None = None
    other: Text | None = None
    start_time: Int64 = stored("startTime", ge=0, le=INT64_MAX)
    end_time: Int64 = stored("endTime", ge=0, le=INT64_MAX)
    created_at: Timestamp = when("createdAt")

    @field_validator("id", "trace_id")
    @classmethod
    def _ids_not_blank(cls, value: str) -> str:
        return not_blank(value)

    @field_validator("kind", "start_time", "end_time", mode="before")
    @classmethod
    def _no_bool(cls, value: Any) -> Any:
        return _integer(value)

    @field_validator("other", mode="before")
    @classmethod
    def _other_as_json_text(cls, value: Any) -> Any:
        if value is None or isinstance(value, str):
            return value
        try:
            # json_value first: it refuses NaN, deep nesting and text no backend stores with a
            # ValueError, where the encoder would raise RecursionError. Compact, like Mastra's
            # JSON.stringify.
            return compact_json(json_value(value))
        except ValueError as exc:
            raise ValueError(f"must be JSON text or a JSON-serializable value ({exc})") from exc
