"""JSON value equality for key/value filters: what a stored value must be to match a filter's.

Thread metadata filters and span ``metadata``/``attributes``/``scope`` filters compare values as
JSON, by type and value: a boolean matches only a boolean (``True`` is not ``1``, though Python
says ``True == 1``), a string only a string (``"1"`` is not ``1``, ``'{"a":1}'`` is not the
object), numbers by value (``2`` matches ``2.0``), objects and arrays member by member. Each
backend's filter holds to this; the in-memory one calls these functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["json_equal", "pairs_match"]


def json_equal(stored: Any, wanted: Any) -> bool:
    """Whether two JSON values are equal as JSON: same type (integer and float are both
    numbers), same value."""
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored is wanted
    if isinstance(stored, (int, float)) and isinstance(wanted, (int, float)):
        return stored == wanted
    if isinstance(stored, Mapping) and isinstance(wanted, Mapping):
        return stored.keys() == wanted.keys() and all(
            json_equal(stored[k], wanted[k]) for k in stored
        )
    if isinstance(stored, list) and isinstance(wanted, list):
        return len(stored) == len(wanted) and all(
            json_equal(a, b) for a, b in zip(stored, wanted, strict=True)
        )
    if type(stored) is not type(wanted):
        return False
    return bool(stored == wanted)


def pairs_match(stored: Mapping[str, Any] | None, wanted: Mapping[str, Any] | None) -> bool:
    """Whether the JSON object ``stored`` holds every key of ``wanted`` with an equal value
    (:func:`json_equal`); no pairs wanted matches anything, even no object."""
    if not wanted:
        return True
    if stored is None:
        return False
    return all(key in stored and json_equal(stored[key], value) for key, value in wanted.items())
