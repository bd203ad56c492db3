"""Records to documents and back: documented field names, BSON dates, full shape.

A document holds every documented field of its table, ``null`` where the record has none, so
documents have one shape whatever wrote them last. Timestamps travel as BSON dates
(milliseconds, as the API promises); JSON fields as embedded BSON values; message content as
compact JSON text, as the documented ``content`` column is text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from composite_store.records.base import Record
from composite_store.records.tables import row_of
from composite_store.records.trusted import from_row
from composite_store.schema import TableSpec

__all__ = ["NO_ID", "document", "from_document", "literal", "literals"]

M = TypeVar("M", bound=BaseModel)

#: Projection leaving out the server's own ``_id``.
NO_ID: Mapping[str, Any] = {"_id": False}


def document(spec: TableSpec, record: Record, **overrides: Any) -> dict[str, Any]:
    """The document of ``record`` in ``spec``'s collection (every documented field; a
    message's content as its JSON text)."""
    stored = row_of(spec.base_name, record)
    stored.update(overrides)
    return {name: stored.get(name) for name in spec.column_names}


def from_document(model: type[M], doc: Mapping[str, Any], **overrides: Any) -> M:
    """Build a record from a stored document without re-validating it."""
    return from_row(model, doc, **overrides)


def literal(value: Any) -> dict[str, Any]:
    """``value`` as an aggregation literal: strings starting with ``$`` and objects with odd
    keys stay data inside update pipelines."""
    return {"$literal": value}


def literals(values: Mapping[str, Any]) -> dict[str, Any]:
    """A pipeline ``$set`` stage body setting each field to its literal value."""
    return {k: v if isinstance(v, datetime) else literal(v) for k, v in values.items()}
