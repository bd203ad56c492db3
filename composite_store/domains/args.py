"""Argument checks the domain contracts share: ids, lists, counts, pagination, "not given"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from composite_store.errors import ValidationError
from composite_store.records.base import coerce
from composite_store.records.json import json_value, storable_id, storable_text
from composite_store.rules.paging import Window, window_from
from composite_store.types import Pagination, PerPage

__all__ = [
    "UNSET",
    "given",
    "json_object",
    "optional_id",
    "optional_int",
    "optional_text",
    "page_window",
    "require_id",
    "require_ids",
    "require_list",
]

#: The largest integer argument: a signed 64-bit column holds it on every backend.
INT64_MAX: Final = 2**63 - 1


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


#: "Not given": distinct from ``None`` (for ``expected_working_memory``, None expects no
#: working memory; for an update, None clears a field).
UNSET: Final[Any] = _Unset()


def require_id(value: Any, what: str) -> str:
    """Return ``value`` if it is a non-blank string, else raise ``ValidationError``."""
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-empty string, got {_short(value)}")
    try:
        return storable_id(value)
    except ValueError as exc:
        raise ValidationError(f"{what}: {exc}") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({type(value).__name__})"


def _storable(value: str, what: str) -> str:
    try:
        return storable_text(value)
    except ValueError as exc:
        raise ValidationError(f"{what}: {exc}") from None


def optional_id(value: Any, what: str) -> str | None:
    """Return ``value`` if it is None or a non-blank string, else raise ``ValidationError``."""
    return None if value is None else require_id(value, what)


def optional_text(value: Any, what: str) -> str | None:
    """Return ``value`` if it is None or a string (blank allowed), else raise: a dict such as
    ``{"$ne": None}`` never reaches a backend's query language."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, got {type(value).__name__}")
    return _storable(value, what)


def json_object(value: Any, what: str) -> dict[str, Any]:
    """Return ``value`` as a plain JSON object (``records.json.json_value``), else raise
    ``ValidationError``: NaN, infinities, non-string keys, values that are not JSON data and
    nesting deeper than ``MAX_JSON_DEPTH`` never reach a write."""
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        result: dict[str, Any] = json_value(dict(value))
    except ValueError as exc:
        raise ValidationError(f"invalid {what}: {exc}") from None
    return result


def require_list(value: Any, what: str) -> list[Any]:
    """Return ``value`` as a list if it is a sequence (not a string or a dict)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ValidationError(f"{what} must be a list, got {type(value).__name__}")
    return list(value)


def require_ids(value: Any, what: str) -> list[str]:
    """Return ``value`` as a list of non-blank ids (duplicates kept, order kept)."""
    return [require_id(v, f"{what}[{i}]") for i, v in enumerate(require_list(value, what))]


def optional_int(value: Any, what: str, *, minimum: int = 0) -> int | None:
    """Return ``value`` if it is None or an integer >= ``minimum``, else raise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"{what} must be an integer, got {value!r}")
    if value < minimum:
        raise ValidationError(f"{what} must be >= {minimum}, got {value}")
    if value > INT64_MAX:  # what every backend's integer column and bound value holds
        raise ValidationError(f"{what} must be at most {INT64_MAX} (64 bits), got {value}")
    return value


def given(**fields: Any) -> dict[str, Any]:
    """The keyword arguments the caller actually passed (those not left at ``UNSET``)."""
    return {name: value for name, value in fields.items() if value is not UNSET}


def page_window(
    pagination: Pagination | Mapping[str, Any] | None, *, default: PerPage
) -> Window:
    """Validate an optional ``Pagination`` (or dict in any spelling) into the rows to fetch."""
    if pagination is not None and not isinstance(pagination, (Pagination, Mapping)):
        raise ValidationError(
            f"pagination must be a Pagination or a dict, got {type(pagination).__name__}"
        )
    if isinstance(pagination, Mapping):
        pagination = coerce(Pagination, pagination, what="pagination")
    return window_from(pagination, default=default)
