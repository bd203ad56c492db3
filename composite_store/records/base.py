"""The record base class, timestamp rules and field-alias helpers every record uses."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Self, TypeVar

import pydantic
from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from composite_store.errors import ValidationError

__all__ = [
    "NAIVE_EPOCH",
    "UTC_EPOCH",
    "Record",
    "StampedRecord",
    "Timestamp",
    "coerce",
    "iso_ms",
    "not_blank",
    "now_utc",
    "stored",
    "to_utc_ms",
    "utc_from_wall_clock",
    "uuid4_str",
    "whole_ms",
]

#: ``timedelta(microseconds=i)`` for every ``i`` below 1,000: :func:`whole_ms` subtracts the one
#: of a value's microseconds past its millisecond. Arithmetic rather than ``datetime.replace``,
#: which parses its keyword arguments on every call: 1.1-1.3 us a call on Python 3.11 here,
#: against 0.1 us for a subtraction, and every timestamp written or read goes through one.
_PAST_MS = tuple(timedelta(microseconds=i) for i in range(1000))
#: The Unix epoch in UTC, and as a naive wall clock: ``naive + (aware - UTC_EPOCH)`` is the
#: UTC wall clock of ``aware``, ``UTC_EPOCH + (naive - NAIVE_EPOCH)`` the UTC instant of a
#: naive UTC wall clock (same speed argument as ``_PAST_MS``).
UTC_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH = datetime(1970, 1, 1)


def whole_ms(value: datetime) -> datetime:
    """``value`` without its microseconds past the millisecond (its zone unchanged)."""
    extra = value.microsecond % 1000
    return value - _PAST_MS[extra] if extra else value


def utc_from_wall_clock(wall: datetime) -> datetime:
    """The aware UTC datetime of a naive UTC wall clock (``wall.replace(tzinfo=UTC)``)."""
    return UTC_EPOCH + (wall - NAIVE_EPOCH)


def to_utc_ms(value: datetime) -> datetime:
    """Return ``value`` in UTC truncated to milliseconds; a naive datetime is refused."""
    if value.tzinfo is UTC:  # the usual value (every record read back): no conversion
        return whole_ms(value)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            "naive datetime: pass a timezone-aware datetime (e.g. datetime.now(UTC)) "
            "or an ISO string with an offset"
        )
    return whole_ms(value.astimezone(UTC))


#: The last UTC value :func:`iso_ms` formatted and its text. A record's ``createdAt`` and
#: ``updatedAt`` are most often the same instant (a new record's stamps, a caller's one
#: ``now``), so the second of them is a comparison. Only UTC values: two datetimes of one
#: other zone compare by wall clock, ignoring ``fold``, so equal ones can be two instants of
#: a DST change; UTC has no folds.
_last_iso: tuple[datetime, str] = (datetime(1970, 1, 1, tzinfo=UTC), "1970-01-01T00:00:00.000Z")


def iso_ms(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC, as JavaScript's ``toISOString`` writes it (years
    zero-padded to four digits): the text form stores keep timestamps in, which sorts as the
    instants do and as Mastra's own."""
    global _last_iso
    if value.tzinfo is not UTC:
        return _iso_text(value.astimezone(UTC))
    last = _last_iso
    if value == last[0]:
        return last[1]
    text = _iso_text(value)
    _last_iso = (value, text)
    return text


#: ``iso_ms``'s spelling of a UTC datetime's fields (years padded to four digits, as
#: JavaScript pads them and glibc's ``strftime`` does not).
_ISO_MS = "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ"


def _iso_text(moment: datetime) -> str:
    # The fields through %-formatting: 0.75 us a value on Python 3.11 here, against 1.2 us for
    # an aware datetime's isoformat (its offset is formatted, then sliced off) and 1.9 for
    # strftime. Every timestamp a text store writes goes through here (a copy: one a row).
    return _ISO_MS % (
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond // 1000,
    )


def not_blank(value: str) -> str:
    """A field validator: refuse an id that is empty or only whitespace."""
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def now_utc() -> datetime:
    """The current time as a UTC datetime of millisecond precision."""
    return whole_ms(datetime.now(UTC))


def uuid4_str() -> str:
    return str(uuid.uuid4())


def _datetime_or_text(value: Any) -> Any:
    # Pydantic would take a number as Unix seconds: a caller's bug (milliseconds? a count?)
    # stored as some instant of 1970, not the input round-tripping.
    if not isinstance(value, (datetime, str)):
        raise ValueError(
            f"expected a timezone-aware datetime or an ISO string, got {type(value).__name__}"
        )
    return value


#: An aware UTC datetime truncated to milliseconds; accepts aware datetimes and ISO strings.
Timestamp = Annotated[datetime, BeforeValidator(_datetime_or_text), AfterValidator(to_utc_ms)]


def stored(name: str, *also: str, **kwargs: Any) -> Any:
    """A field stored as ``name`` that also validates from ``also`` (Mastra's API spellings).

    The Python attribute name always validates too (``validate_by_name``); ``kwargs`` go to
    ``Field`` (``default``, ``default_factory``).
    """
    return Field(
        validation_alias=AliasChoices(name, *also) if also else name,
        serialization_alias=name,
        **kwargs,
    )


class Record(BaseModel):
    """Base of every stored record: snake_case attributes, stored names as aliases."""

    model_config = ConfigDict(
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=False,
        extra="ignore",
        arbitrary_types_allowed=False,
    )

    def stored(self) -> dict[str, Any]:
        """The record as stored: documented names, Python values (datetimes stay datetimes)."""
        return self.model_dump(by_alias=True)


class StampedRecord(Record):
    """A record whose ``created_at`` and ``updated_at`` both default to now.

    Each default is its own clock read, so a new record given neither gets one instant for
    both here (two reads can straddle a millisecond). Kept off ``Record`` itself: a model
    validator is a Python call on every validation, which records without both stamps
    (messages, spans: the bulk of writes) need not pay.
    """

    @model_validator(mode="after")
    def _one_now_for_both_stamps(self) -> Self:
        given = self.model_fields_set
        if "created_at" not in given and "updated_at" not in given:
            self.__dict__["updated_at"] = self.__dict__["created_at"]
        return self


R = TypeVar("R", bound=BaseModel)


def coerce(model: type[R], value: R | Mapping[str, Any], *, what: str | None = None) -> R:
    """Return ``value`` as a validated ``model``: a model instance or a dict in any spelling.

    A model instance was validated when it was built and is returned as it is.
    Pydantic's errors are re-raised as our ``ValidationError`` naming the argument.
    """
    try:
        if isinstance(value, model):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(by_alias=True)
        if not isinstance(value, Mapping):
            raise ValidationError(
                f"{what or model.__name__}: expected a {model.__name__} or a dict, "
                f"got {type(value).__name__}"
            )
        return model.model_validate(dict(value))
    except pydantic.ValidationError as exc:
        raise ValidationError(f"invalid {what or model.__name__}: {_describe(exc)}") from exc


def when(name: str, *also: str) -> Any:
    """A timestamp field stored as ``name``; omitted means now."""
    return stored(name, *also, default_factory=now_utc)


def _describe(exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def validation_error(exc: pydantic.ValidationError, what: str) -> ValidationError:
    """Turn a pydantic error into ours, naming ``what`` was being validated."""
    return ValidationError(f"invalid {what}: {_describe(exc)}")
