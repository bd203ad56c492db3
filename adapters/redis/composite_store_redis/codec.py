"""How documented column values are written into Redis hash fields and read back.

A record is one hash whose fields are the documented column names; a null column is an absent
field. Each logical type has one string encoding (the catalog names it): text as is, JSON as
compact JSON text, timestamps as ``YYYY-MM-DDTHH:MM:SS.sssZ`` (what Mastra's clients write),
integers in decimal, floats as their shortest round-tripping repr, booleans ``true``/``false``.
Sorted-set scores of timestamps are integer milliseconds since the epoch, exact in a double.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel

from composite_store.records.trusted import row_reader
from composite_store.schema import ColumnType, TableSpec
from composite_store.types import DateRange
from composite_store_redis.keys import pack

__all__ = [
    "ENCODINGS",
    "HOLDS",
    "decode_record",
    "decode_value",
    "dump_json",
    "encode_record",
    "encode_value",
    "from_stored",
    "iso",
    "millis",
    "nanos_member",
    "nanos_of_member",
    "score_range",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

#: Logical type -> the name of its string encoding (recorded in the catalog).
ENCODINGS: dict[ColumnType, str] = {
    ColumnType.TEXT: "string",
    ColumnType.JSON: "string:json",
    ColumnType.TIMESTAMP: "string:iso8601-ms-utc",
    ColumnType.INTEGER: "string:integer",
    ColumnType.BIGINT: "string:integer",
    ColumnType.FLOAT: "string:float",
    ColumnType.BOOLEAN: "string:boolean",
}
#: Encoding name -> the documented types a field of that encoding can hold.
HOLDS: dict[str, frozenset[ColumnType]] = {
    "string": frozenset({ColumnType.TEXT}),
    "string:json": frozenset({ColumnType.JSON}),
    "string:iso8601-ms-utc": frozenset({ColumnType.TIMESTAMP}),
    "string:integer": frozenset({ColumnType.INTEGER, ColumnType.BIGINT}),
    "string:float": frozenset({ColumnType.FLOAT}),
    "string:boolean": frozenset({ColumnType.BOOLEAN}),
}


def dump_json(value: Any) -> str:
    """Compact JSON (no spaces, non-ASCII as UTF-8, no NaN), as Mastra writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def iso(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def millis(value: datetime) -> int:
    """Integer milliseconds since the epoch (a sorted-set score; exact in a double)."""
    return (value - _EPOCH) // _MS


def nanos_member(nanos: int, *rest: str) -> str:
    """A lexicographic member ordered by ``nanos`` (20 digits, zero-padded), then ``rest``."""
    return pack(f"{nanos:020d}", *rest)


def nanos_of_member(member: str) -> int:
    return int(member[:20])


def score_range(rng: DateRange | None) -> tuple[str, str]:
    """ZRANGE BYSCORE bounds (milliseconds) of a date range; ``(`` marks an exclusive bound."""
    if rng is None:
        return "-inf", "+inf"
    low = (
        "-inf" if rng.start is None else f"{'(' if rng.start_exclusive else ''}{millis(rng.start)}"
    )
    high = "+inf" if rng.end is None else f"{'(' if rng.end_exclusive else ''}{millis(rng.end)}"
    return low, high


def encode_value(kind: ColumnType, value: Any) -> str:
    """The field string of a non-null value of documented type ``kind``."""
    if kind is ColumnType.TEXT:
        return value if isinstance(value, str) else dump_json(value)
    if kind is ColumnType.JSON:
        return dump_json(
            value.model_dump(exclude_none=True) if isinstance(value, BaseModel) else value
        )
    if kind is ColumnType.TIMESTAMP:
        return iso(value)
    if kind is ColumnType.BOOLEAN:
        return "true" if value else "false"
    if kind is ColumnType.FLOAT:
        return repr(float(value))
    return str(int(value))


def decode_value(kind: ColumnType, raw: str) -> Any:
    """The Python value of a field string of documented type ``kind``."""
    if kind is ColumnType.TEXT:
        return raw
    if kind is ColumnType.JSON:
        return json.loads(raw)
    if kind is ColumnType.TIMESTAMP:
        return datetime.fromisoformat(raw)
    if kind is ColumnType.BOOLEAN:
        return raw == "true"
    if kind is ColumnType.FLOAT:
        return float(raw)
    return int(raw)


def encode_record(spec: TableSpec, stored: Mapping[str, Any]) -> dict[str, str]:
    """The hash fields of a record given under its stored names; null columns are left out."""
    return {
        name: encode_value(kind, value)
        for name, kind in spec.column_types
        if (value := stored.get(name)) is not None
    }


def decode_record(spec: TableSpec, fields: Mapping[str, str]) -> dict[str, Any]:
    """Stored name -> Python value for the documented fields present in ``fields``."""
    out: dict[str, Any] = {}
    for c in spec.columns:
        raw = fields.get(c.name)
        if raw is not None:
            out[c.name] = decode_value(c.type, raw)
    return out


M = TypeVar("M", bound=BaseModel)


def from_stored(model: type[M], values: Mapping[str, Any]) -> M:
    """Build a record from trusted decoded values without validating them again; columns
    absent from the hash (null) are None."""
    record: M = row_reader(model, absent_is_none=True)(values)
    return record
