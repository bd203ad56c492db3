"""The filter arguments of the observability domain: which traces and OpenTelemetry spans a
listing selects."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from composite_store.records.base import Record, stored
from composite_store.records.json import Int64, StringList, Text, json_value
from composite_store.records.observability import TraceStatus
from composite_store.types import DateRange

__all__ = ["TEXT_FILTERS", "TEXT_FILTER_COLUMNS", "OtelSpanFilter", "TraceFilter"]

_FILTER_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _integer(value: Any) -> Any:
    # bool is an int to Python; kind=True is a caller bug.
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    return value


def _json_filter(value: Any, what: str) -> dict[str, Any] | None:
    """Validate a key/value filter on a JSON column: safe keys, scalar values."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} filter must be a dict of key -> value")
    for key, item in value.items():
        if not isinstance(key, str) or not _FILTER_KEY.match(key):
            raise ValueError(f"invalid {what} filter key {key!r}: use letters, digits, '_' and '-'")
        if item is None or not isinstance(item, (str, int, float, bool)):
            raise ValueError(
                f"{what} filter value for {key!r} must be a string, number or boolean, "
                f"got {type(item).__name__}"
            )
    # What no JSON column can hold (NaN, a 65-bit integer, NUL) matches nothing; refusing it
    # keeps a driver from failing on the bound value.
    return dict(json_value(dict(value)))


class TraceFilter(Record):
    """``list_traces`` filters; all given ones must match the trace's root span.

    Text fields compare exactly (no case folding, padding or patterns). ``metadata``,
    ``attributes`` and ``scope`` match key/value pairs of those JSON objects, values by JSON
    type and value (``rules.json_match``; capability ``span_attribute_filters``); ``tags``
    must all be present; ``status`` is the derived trace status; ``has_child_error`` whether
    any span of the trace has an error.
    """

    model_config = ConfigDict(extra="forbid")

    trace_id: Text | None = stored("traceId", default=None)
    span_type: Text | None = stored("spanType", default=None)
    entity_type: Text | None = stored("entityType", default=None)
    entity_id: Text | None = stored("entityId", default=None)
    entity_name: Text | None = stored("entityName", default=None)
    user_id: Text | None = stored("userId", default=None)
    organization_id: Text | None = stored("organizationId", default=None)
    resource_id: Text | None = stored("resourceId", default=None)
    run_id: Text | None = stored("runId", default=None)
    session_id: Text | None = stored("sessionId", default=None)
    thread_id: Text | None = stored("threadId", default=None)
    request_id: Text | None = stored("requestId", default=None)
    environment: Text | None = None
    service_name: Text | None = stored("serviceName", default=None)
    source: Text | None = None
    status: TraceStatus | None = None
    has_child_error: bool | None = stored("hasChildError", default=None)
    started_at: DateRange | None = stored("startedAt", default=None)
    ended_at: DateRange | None = stored("endedAt", default=None)
    metadata: dict[str, Any] | None = None
    attributes: dict[str, Any] | None = None
    scope: dict[str, Any] | None = None
    tags: StringList | None = None

    @field_validator("metadata", "attributes", "scope", mode="before")
    @classmethod
    def _json_keys(cls, value: Any, info: ValidationInfo) -> Any:
        return _json_filter(value, info.field_name or "json")

    def columns(self) -> dict[str, str]:
        """Equality filters on text columns: stored column name -> value."""
        fields = type(self).model_fields
        return {
            fields[name].serialization_alias or name: getattr(self, name)
            for name in TEXT_FILTERS
            if getattr(self, name) is not None
        }

    @property
    def uses_json(self) -> bool:
        """Whether a key/value filter on a JSON column is given (``span_attribute_filters``)."""
        return any(v for v in (self.metadata, self.attributes, self.scope))


#: The filters (``TraceFilter`` attributes) that compare one text column of the root span for
#: equality; ``TEXT_FILTER_COLUMNS`` names their columns, in the same order.
TEXT_FILTERS = (
    "trace_id",
    "span_type",
    "entity_type",
    "entity_id",
    "entity_name",
    "user_id",
    "organization_id",
    "resource_id",
    "run_id",
    "session_id",
    "thread_id",
    "request_id",
    "environment",
    "service_name",
    "source",
)


TEXT_FILTER_COLUMNS = tuple(
    TraceFilter.model_fields[name].serialization_alias or name for name in TEXT_FILTERS
)


class OtelSpanFilter(Record):
    """``list_otel_spans`` filters: exact ``trace_id``, ``parent_span_id``, ``name``, ``scope``
    and ``kind``; ``attributes`` key/value pairs (capability ``span_attribute_filters``);
    ``start_time`` bounds ``startTime`` (inclusive unless marked exclusive)."""

    model_config = ConfigDict(extra="forbid")

    trace_id: Text | None = stored("traceId", default=None)
    parent_span_id: Text | None = stored("parentSpanId", default=None)
    name: Text | None = None
    scope: Text | None = None
    kind: Int64 | None = Field(default=None, ge=0, le=4)
    attributes: dict[str, Any] | None = None
    start_time: DateRange | None = stored("startTime", default=None)

    @field_validator("attributes", mode="before")
    @classmethod
    def _json_keys(cls, value: Any) -> Any:
        return _json_filter(value, "attributes")

    @field_validator("kind", mode="before")
    @classmethod
    def _no_bool(cls, value: Any) -> Any:
        return _integer(value)

    def columns(self) -> dict[str, Any]:
        """Equality filters: stored column name -> value."""
        fields = type(self).model_fields
        return {
            fields[name].serialization_alias or name: getattr(self, name)
            for name in ("trace_id", "parent_span_id", "name", "scope", "kind")
            if getattr(self, name) is not None
        }
