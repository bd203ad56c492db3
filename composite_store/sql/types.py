"""Column types of the relational family: JSON as text, and timestamps as Mastra stores them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeGuard

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from composite_store.records.base import (
    NAIVE_EPOCH,
    UTC_EPOCH,
    iso_ms,
    utc_from_wall_clock,
    whole_ms,
)
from composite_store.records.json import checked_json, parse_json
from composite_store.sql import jsonb

__all__ = [
    "IntegerBoolean",
    "IsoTimestamp",
    "JsonText",
    "StoredIsoTimestamp",
    "UtcTimestamp",
    "dumps",
    "format_iso_ms",
    "loads_json",
    "stored_row_column",
    "utc_wall_clock",
]


#: Compact JSON (no spaces, non-ASCII as UTF-8), as Mastra's JSON.stringify writes it, of the
#: values records hold: checked when the record was built (``checked_json``).
dumps = checked_json


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
        value = parse_json(value)
    return _json_in_string(value)


def _json_in_string(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return parse_json(value)
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


def _iso_ms_shaped(value: Any) -> TypeGuard[str]:
    """Whether ``value`` is text spelled as ``iso_ms`` spells a timestamp: 24 ASCII
    characters, ``-``, ``-``, ``T``, ``:``, ``:`` and ``.`` in their places, ``Z`` last, and
    no hour 24 (which a later Python may read as the next day). The digits are left to
    ``datetime.fromisoformat``, which takes only ASCII digits there and checks the ranges."""
    return (
        value.__class__ is str
        and len(value) == 24
        and value[23] == "Z"
        and value[4:20:3] == "--T::."
        and value.isascii()
        and value[11:13] != "24"
    )


def _write_iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        if _iso_ms_shaped(value):
            # Checked (a date that does not exist raises here) and written as it is: this
            # spelling of a valid instant is exactly what formatting its parse gives, at a
            # quarter of the cost (a copy between text stores: one a row; sql.transfer).
            datetime.fromisoformat(value)
            return value
        value = parse_iso(value)
    return format_iso_ms(value)


def _stored_iso(value: Any) -> datetime | str | None:
    """A timestamp of a stored row (``StoredRows``) read from a text column: text spelled as
    ``iso_ms`` spells it as it is, for the destination's bind conversion to check
    (``_write_iso``, ``parse_iso``); any other value as ``_read_iso`` reads it."""
    if _iso_ms_shaped(value):
        return value
    return _read_iso(value)


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


class _Timestamp(TypeDecorator[datetime]):
    """A timestamp type whose two conversions are plain functions (``write``, ``read``): the
    engine gets them as they are, without TypeDecorator's wrapping calls per value (every
    row written or read has a timestamp or two). An engine type with a conversion of its own,
    or a subclass that converts otherwise (its own ``process_*``), keeps the chained form."""

    cache_ok = True
    write: Callable[[Any], Any]
    #: A datetime, or for a stored row its text (``StoredIsoTimestamp``).
    read: Callable[[Any], datetime | str | None]

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return self.write(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return self.read(value)

    def bind_processor(self, dialect: Dialect) -> Any:
        if (
            type(self).process_bind_param is not _Timestamp.process_bind_param
            or self.impl_instance.dialect_impl(dialect).bind_processor(dialect)
        ):
            return super().bind_processor(dialect)
        return self.write

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        if (
            type(self).process_result_value is not _Timestamp.process_result_value
            or self.impl_instance.dialect_impl(dialect).result_processor(dialect, coltype)
        ):
            return super().result_processor(dialect, coltype)
        return self.read


class IsoTimestamp(_Timestamp):
    """A timestamp as TEXT ``YYYY-MM-DDTHH:MM:SS.sssZ`` (SQLite, libSQL)."""

    impl = sa.Text
    cache_ok = True
    write = staticmethod(_write_iso)
    read: Callable[[Any], datetime | str | None] = staticmethod(_read_iso)


class StoredIsoTimestamp(IsoTimestamp):
    """An ``IsoTimestamp`` column read for a stored row (``StoredRows``): its text as it is
    where it is spelled as written (``_stored_iso``). A copy between two text stores then
    neither parses nor formats a timestamp it moves."""

    cache_ok = True
    read = staticmethod(_stored_iso)


def stored_row_column(column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """``column`` (a documented column as the dialect selects it) as a stored row reads it:
    a text timestamp as ``StoredIsoTimestamp``, anything else unchanged."""
    if type(column.type) is IsoTimestamp:
        return sa.type_coerce(column, StoredIsoTimestamp()).label(column.key)
    return column


def utc_wall_clock(value: Any) -> datetime | None:
    """The naive UTC wall clock of a timestamp (a datetime, or ISO 8601 text as ``parse_iso``
    reads it): what ``UtcTimestamp`` binds."""
    if value is None:
        return None
    moment: datetime = parse_iso(value) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        try:
            # Arithmetic: astimezone and replace cost 1.5 us a value (records.base._PAST_MS).
            return NAIVE_EPOCH + (moment - UTC_EPOCH)
        except TypeError:
            pass  # a zone that gives no offset: naive to Python's arithmetic
    return moment.astimezone(UTC).replace(tzinfo=None)


def _read_utc(value: Any) -> datetime | None:
    """An aware UTC datetime of millisecond precision from what a ``UtcTimestamp`` column
    (naive UTC wall clock) or its ``TIMESTAMPTZ`` shadow gives: a datetime, or ISO text."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_iso(value)
    moment: datetime = value
    if moment.tzinfo is None:
        moment = utc_from_wall_clock(moment)
    elif moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # Milliseconds, as the API promises: other writers store microseconds (Mastra's
    # PostgreSQL trigger sets span timestamps to now(), the shadow columns default to it).
    return whole_ms(moment)


class UtcTimestamp(_Timestamp):
    """A naive ``TIMESTAMP`` holding the UTC wall clock (PostgreSQL, MySQL, Oracle)."""

    impl = sa.DateTime
    cache_ok = True
    write = staticmethod(utc_wall_clock)
    read = staticmethod(_read_utc)
