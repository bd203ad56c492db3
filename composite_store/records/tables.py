"""Which record each documented table holds, and a record's stored row (its key and columns).

Each documented table (``composite_store.schema.TABLES``) holds exactly one record model whose
stored names are the table's columns. The one column whose stored form differs from the
record's value is ``mastra_messages.content``: the record holds the parsed format-2 content,
the column its compact JSON text. Export and import (``Transferable.export_records`` /
``import_records``) and ``composite_store.admin.copy`` work on these rows and keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Any

from composite_store.errors import ValidationError
from composite_store.records.base import Record
from composite_store.records.datasets import Dataset, DatasetItem, DatasetVersion
from composite_store.records.experiments import Experiment, ExperimentResult
from composite_store.records.memory import (
    Message,
    Resource,
    Thread,
    message_from_row,
)
from composite_store.records.observability import OtelSpan, Span
from composite_store.records.scores import EvalRecord, Score
from composite_store.records.trusted import from_row
from composite_store.records.workflow_definitions import (
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store.records.workflows import WorkflowRun
from composite_store.schema import TABLES, table

__all__ = ["RECORDS", "Key", "key_of", "record_from_row", "record_type", "row_of"]

#: A record's key: the values of its table's ``key_columns``, in order.
Key = tuple[Any, ...]

#: Documented table (base name) -> the record model it holds.
RECORDS: Mapping[str, type[Record]] = MappingProxyType(
    {
        "threads": Thread,
        "messages": Message,
        "resources": Resource,
        "workflow_snapshot": WorkflowRun,
        "workflow_definitions": WorkflowDefinition,
        "workflow_definition_versions": WorkflowDefinitionVersion,
        "scorers": Score,
        "evals": EvalRecord,
        "ai_spans": Span,
        "traces": OtelSpan,
        "datasets": Dataset,
        "dataset_items": DatasetItem,
        "dataset_versions": DatasetVersion,
        "experiments": Experiment,
        "experiment_results": ExperimentResult,
    }
)
if set(RECORDS) != {t.base_name for t in TABLES}:  # pragma: no cover - a schema edit
    raise AssertionError("records.tables.RECORDS must name every documented table")


def record_type(table_name: str) -> type[Record]:
    """The record model documented table ``table_name`` holds."""
    try:
        return RECORDS[table_name]
    except KeyError:
        raise ValidationError(
            f"unknown table {table_name!r}; known: {', '.join(RECORDS)}"
        ) from None


def row_of(table_name: str, record: Record) -> dict[str, Any]:
    """The stored row of ``record``: column name -> value (datetimes stay datetimes, JSON
    columns stay Python values; message content becomes its JSON text)."""
    if isinstance(record, Message):
        return record.stored_row()
    return record.stored()


def record_from_row(table_name: str, row: Mapping[Any, Any]) -> Record:
    """The record of a trusted stored row (as :func:`row_of` gives it, or as a backend reads
    it back), built without validating it again; absent columns take the model's default."""
    model = record_type(table_name)
    if model is Message and "content" in row:
        return message_from_row(row)
    return from_row(model, row)


def key_of(table_name: str, record: Record) -> Key:
    """The key of ``record`` in its table (the values of ``TableSpec.key_columns``); ``()``
    for a table without a key (Mastra's evals)."""
    names = _key_attributes(table_name)
    return tuple(getattr(record, name) for name in names)


@cache
def _key_attributes(table_name: str) -> tuple[str, ...]:
    fields = record_type(table_name).model_fields
    by_stored = {info.serialization_alias or name: name for name, info in fields.items()}
    return tuple(by_stored[c] for c in table(table_name).key_columns)
