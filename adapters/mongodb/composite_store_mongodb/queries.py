"""Query fragments the domains share: range conditions, key/value matches in JSON fields."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from composite_store.types import DateRange

__all__ = ["dated", "json_pairs", "range_condition"]

_MS = timedelta(milliseconds=1)
B = TypeVar("B", datetime, int)


def range_condition(
    start: B | None,
    end: B | None,
    *,
    start_exclusive: bool = False,
    end_exclusive: bool = False,
) -> dict[str, Any]:
    """The condition on a BSON date (or integer) field between ``start`` and ``end``; empty
    when both are None.

    BSON dates are whole milliseconds (and the records truncate bounds to milliseconds), so an
    inclusive bound is written as the exclusive one a step further out (``>= t`` is
    ``> t - 1ms``, ``>= n`` is ``> n - 1``): the same documents, in the form every server's
    index bounds handle alike. (SecantusDB, the test server, drops an inclusive range end on a
    middle key of a compound index.)
    """
    cond: dict[str, Any] = {}
    if start is not None:
        cond["$gt"] = start if start_exclusive else start - _step(start)
    if end is not None:
        cond["$lt"] = end if end_exclusive else end + _step(end)
    return cond


def _step(value: datetime | int) -> Any:
    return _MS if isinstance(value, datetime) else 1


def dated(rng: DateRange | None) -> dict[str, Any]:
    """The condition of a ``DateRange`` (empty when there is none)."""
    if rng is None:
        return {}
    return range_condition(
        rng.start, rng.end, start_exclusive=rng.start_exclusive, end_exclusive=rng.end_exclusive
    )


def json_pairs(field: str, pairs: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Conditions that JSON object ``field`` holds each key/value pair of ``pairs`` exactly.

    Written as ``$expr`` comparisons: a plain ``{"field.key": value}`` would also match an
    array containing the value. Keys are validated by the contracts (letters, digits, ``_``,
    ``-``), so they are safe in a field path.
    """
    return [
        {"$expr": {"$eq": [f"${field}.{key}", {"$literal": value}]}}
        for key, value in (pairs or {}).items()
    ]
