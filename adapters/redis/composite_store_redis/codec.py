"""How documented column values are written into Redis hash fields and read back.

A record is one hash whose fields are the documented column names; a null column is an absent
field. Each logical type has one string encoding (the catalog names it): text as is, JSON as
compact JSON text, timestamps as ``YYYY-MM-DDTHH:MM:SS.sssZ`` (what Mastra's clients write),
integers in decimal, floats as their shortest round-tripping repr, booleans ``true``/``false``.
Sorted-set scores of timestamps are integer milliseconds since the epoch, exact in a double.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel

from composite_store.records.base import iso_ms
from composite_store.records.json import checked_json, parse_json
from composite_store.records.trusted import row_reader
from composite_store.schema import ColumnType, TableSpec
from composite_store.types import DateRange
from composite_store_redis.keys import pack

__all__ = [
    "ENCODINGS",
    "HOLDS",
    "decode_record",
    "dump_json",
    "encode_record",
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


#: Compact JSON (no spaces, non-ASCII as UTF-8), as Mastra writes it, of the values records
#: hold: checked when the record was built (``checked_json``).
dump_json = checked_json


#: ``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC, as the relational stores spell it.
iso = iso_ms


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


def _text(value: Any) -> str:
    return value if isinstance(value, str) else dump_json(value)


def _json(value: Any) -> str:
    return dump_json(value.model_dump(exclude_none=True) if isinstance(value, BaseModel) else value)


def _boolean(value: Any) -> str:
    return "true" if value else "false"


def _float(value: Any) -> str:
    return repr(float(value))


def _integer(value: Any) -> str:
    return str(int(value))


#: How a non-null value of each documented type becomes a field string.
_ENCODERS: dict[ColumnType, Callable[[Any], str]] = {
    ColumnType.TEXT: _text,
    ColumnType.JSON: _json,
    ColumnType.TIMESTAMP: iso,
    ColumnType.BOOLEAN: _boolean,
    ColumnType.FLOAT: _float,
    ColumnType.INTEGER: _integer,
    ColumnType.BIGINT: _integer,
}
#: How a field string becomes the Python value of each documented type (text: itself).
_DECODERS: dict[ColumnType, Callable[[str], Any] | None] = {
    ColumnType.TEXT: None,
    ColumnType.JSON: parse_json,
    ColumnType.TIMESTAMP: datetime.fromisoformat,
    ColumnType.BOOLEAN: lambda raw: raw == "true",
    ColumnType.FLOAT: float,
    ColumnType.INTEGER: int,
    ColumnType.BIGINT: int,
}


_Decoders = tuple[tuple[str, Callable[[str], Any] | None], ...]
#: Per table: (spec, the encoder of each column by name, each column's decoder in order).
#: Keyed by base name, not by the spec: a frozen dataclass hashes every field on each lookup.
_CODECS: dict[str, tuple[TableSpec, dict[str, Callable[[Any], str]], _Decoders]] = {}


def _codec(spec: TableSpec) -> tuple[TableSpec, dict[str, Callable[[Any], str]], _Decoders]:
    found = _CODECS.get(spec.base_name)
    if found is None or found[0] is not spec:
        found = _CODECS[spec.base_name] = (
            spec,
            {name: _ENCODERS[kind] for name, kind in spec.column_types},
            tuple((name, _DECODERS[kind]) for name, kind in spec.column_types),
        )
    return found


def encode_record(spec: TableSpec, stored: Mapping[str, Any]) -> dict[str, str]:
    """The hash fields of a record given under its stored names; null columns are left out,
    and so are names that are no column."""
    encoders = _codec(spec)[1]
    return {
        name: encode(value)
        for name, value in stored.items()
        if value is not None and (encode := encoders.get(name)) is not None
    }


def decode_record(spec: TableSpec, fields: Mapping[str, str]) -> dict[str, Any]:
    """Stored name -> Python value for the documented fields present in ``fields``."""
    out: dict[str, Any] = {}
    for name, decode in _codec(spec)[2]:
        raw = fields.get(name)
        if raw is not None:
            out[name] = raw if decode is None else decode(raw)
    return out


M = TypeVar("M", bound=BaseModel)


def from_stored(model: type[M], values: Mapping[str, Any]) -> M:
    """Build a record from trusted decoded values without validating them again; columns
    absent from the hash (null) are None."""
    record: M = row_reader(model, absent_is_none=True)(values)
    return record
