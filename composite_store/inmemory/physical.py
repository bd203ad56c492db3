"""What the in-memory store physically holds: its record models, described as tables.

The in-memory store has no catalog; its "physical schema" is the record model each table
holds (the stored names are the models' aliases, the types and nullability their
annotations) and the fields of each table's dictionary key. Describing that lets the
conformance suite hold the reference implementation to the documented schema like any other.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pydantic
from pydantic import BaseModel

from composite_store.schema import ColumnType
from composite_store.schema.physical import PhysicalColumn, PhysicalIndex, PhysicalTable

__all__ = ["Layout", "describe_layout"]

_NONE = type(None)


@dataclass(frozen=True)
class Layout:
    """How one documented table is held in memory: its record model, its dictionary key and
    the unique keys its domain's code enforces (stored names, in key order)."""

    record: type[BaseModel]
    key: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()


def describe_layout(table: str, layout: Layout) -> PhysicalTable:
    """Describe ``table`` as the record model of ``layout`` holds it."""
    refuses_none = _refusing_none(layout.record)
    columns = []
    for name, info in layout.record.model_fields.items():
        if info.exclude:
            continue
        holds, nullable = _holds(info.annotation)
        columns.append(
            PhysicalColumn(
                name=info.serialization_alias or name,
                type=_type_name(info.annotation),
                nullable=nullable and name not in refuses_none,
                holds=holds,
            )
        )
    return PhysicalTable(
        table=table,
        name=table,
        columns=tuple(columns),
        primary_key=layout.key,
        indexes=tuple(
            PhysicalIndex(name=f"unique({', '.join(key)})", columns=key, unique=True)
            for key in layout.unique
        ),
        # Every read scans and sorts the dictionary: there is nothing to index.
        has_indexes=False,
    )


def _refusing_none(record: type[BaseModel]) -> set[str]:
    """Fields whose validators refuse None although the annotation admits it (``input: Any``
    that must be present): validate None for every field at once and see which ones fail."""
    try:
        record.model_validate(dict.fromkeys(record.model_fields))
    except pydantic.ValidationError as exc:
        return {str(err["loc"][0]) for err in exc.errors() if err["loc"]}
    except Exception:  # noqa: BLE001 - a model validator that needs real data: trust annotations
        return set()
    return set()


def _holds(annotation: Any) -> tuple[frozenset[ColumnType], bool]:
    """(documented types a value of ``annotation`` stands for, whether it may be None)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _holds(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        args = get_args(annotation)
        held: frozenset[ColumnType] = frozenset()
        for arg in args:
            if arg is not _NONE:
                held |= _holds(arg)[0]
        return held, _NONE in args
    if annotation is Any:
        return frozenset({ColumnType.JSON}), True
    if origin is Literal:
        kinds = {type(v) for v in get_args(annotation)}
        return (frozenset({ColumnType.TEXT}) if kinds == {str} else frozenset()), False
    base = origin or annotation
    if base is bool:
        return frozenset({ColumnType.BOOLEAN}), False
    if base is int:
        return frozenset({ColumnType.INTEGER, ColumnType.BIGINT}), False
    if base is float:
        return frozenset({ColumnType.FLOAT}), False
    if base is str:
        return frozenset({ColumnType.TEXT}), False
    if base is datetime:
        return frozenset({ColumnType.TIMESTAMP}), False
    if base in (dict, list):
        return frozenset({ColumnType.JSON}), False
    if isinstance(base, type) and issubclass(base, BaseModel):
        # A model is held parsed: it stands for a JSON column, or for a TEXT column of JSON
        # (message content), which the SQL backends serialise.
        return frozenset({ColumnType.JSON, ColumnType.TEXT}), False
    return frozenset(), False


def _type_name(annotation: Any) -> str:
    """A readable name: ``str | None``, ``dict[str, Any]`` (validators left out)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _type_name(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return " | ".join(_type_name(a) for a in get_args(annotation))
    if annotation is _NONE:
        return "None"
    if origin is None and isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace("typing.", "")
