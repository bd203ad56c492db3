"""The record base class, timestamp rules and field-alias helpers every record uses."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache, partial
from typing import Annotated, Any, Self, TypeVar

import pydantic
from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticUndefined

from composite_store.errors import ValidationError

__all__ = ["Record", "Timestamp", "coerce", "now_utc", "stored", "to_utc_ms", "uuid4_str"]


def to_utc_ms(value: datetime) -> datetime:
    """Return ``value`` in UTC truncated to milliseconds; a naive datetime is refused."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            "naive datetime: pass a timezone-aware datetime (e.g. datetime.now(UTC)) "
            "or an ISO string with an offset"
        )
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


def now_utc() -> datetime:
    """The current time as a UTC datetime of millisecond precision."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond - now.microsecond % 1000)


def uuid4_str() -> str:
    return str(uuid.uuid4())


#: An aware UTC datetime truncated to milliseconds; accepts aware datetimes and ISO strings.
Timestamp = Annotated[datetime, AfterValidator(to_utc_ms)]


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

    @model_validator(mode="after")
    def _one_now_for_both_stamps(self) -> Self:
        # created_at and updated_at both default to now, each from its own clock read: a new
        # record given neither gets one instant for both (two reads can straddle a ms).
        given = self.model_fields_set
        if (
            "created_at" not in given
            and "updated_at" not in given
            and _stamped_now(type(self))
        ):
            self.__dict__["updated_at"] = self.__dict__["created_at"]
        return self

    def stored(self) -> dict[str, Any]:
        """The record as stored: documented names, Python values (datetimes stay datetimes)."""
        return self.model_dump(by_alias=True)


@cache
def _stamped_now(model: type[BaseModel]) -> bool:
    """Whether ``model`` has ``created_at`` and ``updated_at`` fields that default to now."""
    fields = model.model_fields
    return all(
        name in fields and fields[name].default_factory is now_utc
        for name in ("created_at", "updated_at")
    )


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


@cache
def _defaults(
    model: type[BaseModel],
) -> tuple[tuple[tuple[str, Any, Callable[[], Any] | None], ...], bool]:
    """How ``trusted`` fills each field of ``model`` when a row lacks it: (name, default,
    factory) -- a factory where the default must be made fresh each time -- and whether the
    model keeps extra fields."""
    fields: list[tuple[str, Any, Callable[[], Any] | None]] = []
    for name, info in model.model_fields.items():
        default: Any = info.default
        factory: Callable[[], Any] | None = None
        if info.default_factory is not None:
            if getattr(info, "default_factory_takes_data", False):
                raise TypeError(f"{model.__name__}.{name}: a default factory taking data")
            factory = info.default_factory  # type: ignore[assignment]
        elif default is PydanticUndefined:
            default = None  # a required field a trusted row lacks reads as missing
        elif isinstance(default, (list, dict, set)):
            factory = partial(copy.deepcopy, default)
        fields.append((name, default, factory))
    return tuple(fields), model.model_config.get("extra") == "allow"


def trusted(model: type[R], values: dict[str, Any], extra: dict[str, Any] | None = None) -> R:
    """Build ``model`` from values that are already valid (read back from a store).

    What ``model_construct`` does, minus its generality: records read from a trusted row need
    not be validated again (DESIGN.md section 8), and this is on every read's hot path.
    ``values`` holds field names only (extra fields go in ``extra``); missing fields take
    their defaults, and ``values`` becomes the instance's ``__dict__``.
    """
    obj = model.__new__(model)
    fields_set = set(values)
    fields, allow_extra = _defaults(model)
    if len(values) != len(fields):
        for name, default, factory in fields:
            if name not in values:
                values[name] = default if factory is None else factory()
    _set(obj, "__dict__", values)
    _set(obj, "__pydantic_fields_set__", fields_set)
    _set(obj, "__pydantic_extra__", (extra or {}) if allow_extra else None)
    _set(obj, "__pydantic_private__", None)
    return obj


#: Sets an attribute past pydantic's ``__setattr__`` (as ``model_construct`` does).
_set = object.__setattr__


@cache
def _field_sources(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(attribute, stored name) pairs of a record model."""
    return tuple(
        (name, info.serialization_alias or name) for name, info in model.model_fields.items()
    )


def from_row(model: type[R], row: Mapping[Any, Any], **overrides: Any) -> R:
    """Build a record from a stored row (documented names) without re-validating it.

    For rows read back from a store, which every backend wrote through validated records.
    """
    values = {attr: row[src] for attr, src in _field_sources(model) if src in row}
    values.update(overrides)
    return trusted(model, values)


def validation_error(exc: pydantic.ValidationError, what: str) -> ValidationError:
    """Turn a pydantic error into ours, naming ``what`` was being validated."""
    return ValidationError(f"invalid {what}: {_describe(exc)}")
