"""``$jsonSchema`` validators derived from the documented schema, and read back.

A field of each documented type accepts the BSON types that type is written as, by this
adapter and by Mastra's JavaScript clients (which send every JavaScript number that is not a
32-bit integer as a double). Non-null columns are ``required`` and refuse ``null``; nullable
ones may be absent or ``null``. Other fields (``_id`` first) are allowed.

The sets are distinct, so ``documented_types`` can read a validator back and say which
documented types a field holds, as the conformance suite's schema checks need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from composite_store.schema import ColumnType, TableSpec

__all__ = ["BSON_TYPES", "documented_types", "json_schema", "read_properties"]

_NUMBERS = ("double", "int", "long", "decimal")

#: The BSON types a field of each documented type accepts.
BSON_TYPES: Mapping[ColumnType, frozenset[str]] = {
    ColumnType.TEXT: frozenset({"string"}),
    ColumnType.JSON: frozenset({"object", "array", "string", "bool", *_NUMBERS}),
    ColumnType.TIMESTAMP: frozenset({"date"}),
    ColumnType.INTEGER: frozenset({"int", "long"}),
    # Nanosecond timestamps: Python writes int64, JavaScript clients a double.
    ColumnType.BIGINT: frozenset({"int", "long", "double"}),
    ColumnType.FLOAT: frozenset(_NUMBERS),
    ColumnType.BOOLEAN: frozenset({"bool"}),
}


def json_schema(spec: TableSpec, prefix: str) -> dict[str, Any]:
    """The ``validator`` of ``spec``'s collection: ``{"$jsonSchema": {...}}``."""
    properties: dict[str, Any] = {}
    for col in spec.columns:
        types = sorted(BSON_TYPES[col.type] | ({"null"} if col.nullable else set()))
        properties[col.name] = {
            "bsonType": types,
            "description": f"{col.type.value}{'' if col.nullable else ', not null'}",
        }
    schema: dict[str, Any] = {
        "bsonType": "object",
        "title": spec.name(prefix),
        "properties": properties,
    }
    required = [c.name for c in spec.columns if not c.nullable]
    if required:
        schema["required"] = required
    return {"$jsonSchema": schema}


def read_properties(validator: Mapping[str, Any] | None) -> dict[str, tuple[frozenset[str], bool]]:
    """Field -> (accepted BSON types, may be absent or null), read from a collection's
    validator as the server reports it; empty when there is no ``$jsonSchema``."""
    schema = (validator or {}).get("$jsonSchema")
    if not isinstance(schema, Mapping):
        return {}
    required = set(schema.get("required") or ())
    found: dict[str, tuple[frozenset[str], bool]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, Mapping):
            continue
        raw = prop.get("bsonType", prop.get("type", ()))
        types = frozenset([raw] if isinstance(raw, str) else raw)
        if not types:
            # No type constraint: any BSON value.
            types = frozenset().union(*BSON_TYPES.values(), {"null"})
        found[str(name)] = (types - {"null"}, "null" in types or name not in required)
    return found


def documented_types(bson_types: frozenset[str]) -> frozenset[ColumnType]:
    """The documented types whose every written form a field accepting ``bson_types`` holds."""
    return frozenset(t for t, accepted in BSON_TYPES.items() if accepted <= bson_types)
