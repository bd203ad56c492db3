"""Column types of the relational family: JSON as text, and timestamps as Mastra stores them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from composite_store.records.base import iso_ms
from composite_store.records.json import compact_json
from composite_store.sql import jsonb

__all__ = [
    "IntegerBoolean",
    "IsoTimestamp",
    "JsonText",
    "UtcTimestamp",
    "dumps",
    "format_iso_ms",
    "loads_json",
    "utc_wall_clock",
]


#: Compact JSON: no spaces, non-ASCII as UTF-8, NaN refused (Mastra's JSON.stringify).
dumps = compact_json


def loads_json(value: Any) -> Any:
    """Decode a stored JSON value; a JSON string that itself holds JSON text is parsed once more
    (Mastra writes some metadata that way). A BLOB is SQLite's binary JSONB as @mastra/libsql
    writes it (decoded here, for engines whose ``json()`` predates JSONB), else UTF-8 JSON."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = bytes(value)
        try:
            return _json_in_string(jsonb.decode(blob))
        except jsonb.JsonbError:
            value = blob.decode("utf-8")  # JSON text stored as a BLOB
    if isinstance(value, str):
        value = json.loads(value)
    return _json_in_string(value)


def _json_in_string(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


#: ``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC: the only spelling that sorts right against Mastra's.
format_iso_ms = iso_ms


def parse_iso(value: str) -> datetime:
    # Python 3.11's fromisoformat reads the "Z" as UTC itself, and astimezone returns the
    # value unchanged when it is in UTC already: the stored spelling costs one parse.
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _read_iso(value: Any) -> datetime | None:
    if value.__class__ is str:
        return parse_iso(value)
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return parse_iso(str(value))


def _write_iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_iso(value)
    return format_iso_ms(value)


class JsonText(TypeDecorator[Any]):
    """JSON stored as compact TEXT (SQLite, libSQL)."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else dumps(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else loads_json(value)


class IntegerBoolean(TypeDecorator[bool]):
    """A boolean as INTEGER 0/1, declared ``INTEGER`` as Mastra declares it (SQLite, libSQL)."""

    impl = sa.Integer
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else int(bool(value))

    def process_result_value(self, value: Any, dialect: Dialect) -> bool | None:
        return None if value is None else bool(value)


class IsoTimestamp(TypeDecorator[datetime]):
    """A timestamp as TEXT ``YYYY-MM-DDTHH:MM:SS.sssZ`` (SQLite, libSQL)."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return _write_iso(value)

    def bind_processor(self, dialect: Dialect) -> Any:
        # As result_processor: the conversion itself, without TypeDecorator's wrapping calls
        # per value (every written message, span, run has a timestamp or two). A subclass
        # that converts otherwise (its own process_bind_param) keeps the wrapped form.
        if (
            type(self).process_bind_param is not IsoTimestamp.process_bind_param
            or self.impl_instance.dialect_impl(dialect).bind_processor(dialect)
        ):
            return super().bind_processor(dialect)
        return _write_iso

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return _read_iso(value)

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        # The conversion itself, without TypeDecorator's two wrapping calls per value: every
        # row of a read has one or two timestamps. (An engine type with its own conversion
        # keeps the chained form.)
        if self.impl_instance.dialect_impl(dialect).result_processor(dialect, coltype):
            return super().result_processor(dialect, coltype)
        return _read_iso


def utc_wall_clock(value: Any) -> datetime | None:
    """The naive UTC wall clock of a timestamp (a datetime, or ISO 8601 text as ``parse_iso``
    reads it): what ``UtcTimestamp`` binds."""
    if value is None:
        return None
    moment: datetime = parse_iso(value) if isinstance(value, str) else value
    return moment.astimezone(UTC).replace(tzinfo=None)


class UtcTimestamp(TypeDecorator[datetime]):
    """A naive ``TIMESTAMP`` holding the UTC wall clock (PostgreSQL, MySQL, Oracle)."""

    impl = sa.DateTime
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        return utc_wall_clock(value)

    def bind_processor(self, dialect: Dialect) -> Any:
        # The conversion itself, without TypeDecorator's wrapping calls (bulk imports), where
        # the engine type adds no conversion of its own.
        if self.impl_instance.dialect_impl(dialect).bind_processor(dialect):
            return super().bind_processor(dialect)
        return utc_wall_clock

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return _read_utc(value)

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        # As IsoTimestamp's: the conversion itself, without TypeDecorator's wrapping calls
        # (every row read has a timestamp or two), where the engine type converts nothing.
        if (
            type(self).process_result_value is not UtcTimestamp.process_result_value
            or self.impl_instance.dialect_impl(dialect).result_processor(dialect, coltype)
        ):
            return super().result_processor(dialect, coltype)
        return _read_utc


def _read_utc(value: Any) -> datetime | None:
    """An aware UTC datetime of millisecond precision from what a ``UtcTimestamp`` column
    (naive UTC wall clock) or its ``TIMESTAMPTZ`` shadow gives: a datetime, or ISO text."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_iso(value)
    moment: datetime = value
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    # Milliseconds, as the API promises: other writers store microseconds (Mastra's
    # PostgreSQL trigger sets span timestamps to now(), the shadow columns default to it).
    extra = moment.microsecond % 1000
    return moment.replace(microsecond=moment.microsecond - extra) if extra else moment
