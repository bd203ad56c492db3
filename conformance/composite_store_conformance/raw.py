"""How each backend family must store documented values, as checks on rows read raw.

DESIGN.md section 9 prescribes the physical form where a database is shared with Mastra
(SQLite/libSQL, PostgreSQL); the in-memory store holds Python values. Any other family is
checked leniently: every value must decode to what was written, whatever its spelling.

The expected spellings are computed here, independently of the library's own encoders, so an
encoder bug cannot agree with itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from composite_store.schema import ColumnType

__all__ = ["FORMS", "LENIENT", "RawForm", "compact_json", "form_for", "iso_ms"]

#: A check of one raw value against the expected Python value: a problem, or None.
Check = Callable[[Any, Any], "str | None"]


def iso_ms(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC (Mastra's timestamp text)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def compact_json(value: Any) -> str:
    """Mastra's ``JSON.stringify``: no spaces, non-ASCII as UTF-8."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _parse(raw: Any) -> tuple[Any, str | None]:
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return raw, None
    try:
        return json.loads(raw), None
    except ValueError:
        return None, f"is not JSON text: {raw[:80]!r}"


def _equal(raw: Any, expected: Any) -> str | None:
    if raw == expected and type(raw) is type(expected):
        return None
    return f"expected {expected!r} ({type(expected).__name__}), got {raw!r} ({type(raw).__name__})"


def _number(raw: Any, expected: Any) -> str | None:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != expected:
        return f"expected the number {expected!r}, got {raw!r} ({type(raw).__name__})"
    return None


# -- timestamps --------------------------------------------------------------------------------


def _iso_text(raw: Any, expected: datetime) -> str | None:
    want = iso_ms(expected)
    if raw != want:
        return f"expected the text {want!r} (YYYY-MM-DDTHH:MM:SS.sssZ, UTC), got {raw!r}"
    return None


def _naive_utc(raw: Any, expected: datetime) -> str | None:
    want = expected.astimezone(UTC).replace(tzinfo=None)
    if not isinstance(raw, datetime) or raw.tzinfo is not None or raw != want:
        return f"expected the naive UTC wall clock {want!r}, got {raw!r}"
    return None


def _aware(raw: Any, expected: datetime) -> str | None:
    if not isinstance(raw, datetime) or raw.utcoffset() is None or raw != expected:
        return f"expected the aware datetime {expected!r}, got {raw!r}"
    return None


def _aware_utc(raw: Any, expected: datetime) -> str | None:
    problem = _aware(raw, expected)
    if problem is None and raw.utcoffset().total_seconds() != 0:
        return f"expected UTC, got the offset {raw.utcoffset()} in {raw!r}"
    return problem


def _any_instant(raw: Any, expected: datetime) -> str | None:
    """A datetime (naive read as UTC), an ISO-8601 string or epoch milliseconds."""
    value: datetime | None = None
    if isinstance(raw, datetime):
        value = raw if raw.tzinfo is not None else raw.replace(tzinfo=UTC)
    elif isinstance(raw, str):
        try:
            value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            value = None
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = datetime.fromtimestamp(raw / 1000, UTC)
    if value is None or abs((value - expected).total_seconds()) >= 0.001:
        return f"expected the instant {iso_ms(expected)}, got {raw!r}"
    return None


# -- JSON --------------------------------------------------------------------------------------


def _json_as_text(raw: Any, expected: Any) -> str | None:
    if not isinstance(raw, str):
        return f"expected JSON text, got {type(raw).__name__} {raw!r}"
    parsed, problem = _parse(raw)
    return problem or _equal(parsed, expected)


def _json_as_object(raw: Any, expected: Any) -> str | None:
    # A JSON string value decodes to a str; anything else arriving as text was double-encoded.
    if isinstance(raw, (str, bytes)) and not (isinstance(expected, str) and raw == expected):
        return f"expected a JSON value written as an object, got the text {raw!r}"
    return _equal(raw, expected)


def _compact_json_text(raw: Any, expected: Any) -> str | None:
    problem = _json_as_text(raw, expected)
    if problem is None and raw != compact_json(json.loads(raw)):
        return f"expected compact JSON text (no spaces, non-ASCII as UTF-8), got {raw!r}"
    return problem


def _any_json(raw: Any, expected: Any) -> str | None:
    parsed, problem = _parse(raw)
    return problem or _equal(parsed, expected)


def _parsed_model(raw: Any, expected: Any) -> str | None:
    # The in-memory store holds message content parsed (a model dump, with None for absent keys).
    if not isinstance(raw, dict):
        return f"expected the parsed JSON object, got {raw!r}"
    return _equal({k: v for k, v in raw.items() if v is not None}, expected)


# -- booleans ----------------------------------------------------------------------------------


def _bool(raw: Any, expected: Any) -> str | None:
    return None if raw is expected else f"expected {expected!r}, got {raw!r}"


def _bool_as_int(raw: Any, expected: Any) -> str | None:
    if raw in (0, 1) and not isinstance(raw, bool) and bool(raw) is expected:
        return None
    return f"expected the integer {int(expected)}, got {raw!r}"


def _any_bool(raw: Any, expected: Any) -> str | None:
    if raw in (0, 1) and bool(raw) is expected:
        return None
    return f"expected {expected!r}, got {raw!r}"


@dataclass(frozen=True)
class RawForm:
    """How one backend family stores each documented type. ``json_text`` is for TEXT columns
    holding JSON (message content); ``shadow`` for variant shadow timestamp columns."""

    timestamp: Check
    json: Check
    json_text: Check
    boolean: Check
    shadow: Check = _aware
    text: Check = _equal
    number: Check = _number

    def check(self, kind: ColumnType, raw: Any, expected: Any, *, json_text: bool) -> str | None:
        """The problem with ``raw`` as the stored form of ``expected``, or None."""
        if expected is None:
            return None if raw is None else f"expected NULL, got {raw!r}"
        if raw is None:
            return f"expected {expected!r}, got NULL"
        if json_text:
            return self.json_text(raw, expected)
        checks: dict[ColumnType, Check] = {
            ColumnType.TIMESTAMP: self.timestamp,
            ColumnType.JSON: self.json,
            ColumnType.BOOLEAN: self.boolean,
            ColumnType.TEXT: self.text,
            ColumnType.INTEGER: self.number,
            ColumnType.BIGINT: self.number,
            ColumnType.FLOAT: self.number,
        }
        return checks[kind](raw, expected)


SQLITE = RawForm(
    timestamp=_iso_text, json=_json_as_text, json_text=_compact_json_text, boolean=_bool_as_int
)
POSTGRES = RawForm(
    timestamp=_naive_utc,
    json=_json_as_object,
    json_text=_compact_json_text,
    boolean=_bool,
    shadow=_aware,
)
MEMORY = RawForm(timestamp=_aware_utc, json=_equal, json_text=_parsed_model, boolean=_bool)


def _bool_as_text(raw: Any, expected: Any) -> str | None:
    want = "true" if expected else "false"
    return None if raw == want else f"expected the text {want!r}, got {raw!r}"


def _number_as_text(raw: Any, expected: Any) -> str | None:
    # Redis hash fields are strings: integers in decimal, floats as their shortest repr.
    want = str(expected) if isinstance(expected, int) else repr(float(expected))
    return None if raw == want else f"expected the text {want!r}, got {raw!r}"


#: Redis hashes (docs/redis.md): every field a string in one pinned spelling.
REDIS = RawForm(
    timestamp=_iso_text,
    json=_compact_json_text,
    json_text=_compact_json_text,
    boolean=_bool_as_text,
    number=_number_as_text,
)
#: MongoDB (docs/mongodb.md): timestamps are BSON dates (read back aware, UTC), JSON columns
#: embedded BSON values of the written type, message content compact JSON text.
MONGODB = RawForm(
    timestamp=_aware_utc, json=_equal, json_text=_compact_json_text, boolean=_bool
)
#: Families DESIGN.md does not pin down: every value must decode to what was written.
LENIENT = RawForm(
    timestamp=_any_instant, json=_any_json, json_text=_any_json, boolean=_any_bool,
    shadow=_any_instant,
)

#: Backend family (``Domain.backend``) -> its prescribed physical form.
FORMS: dict[str, RawForm] = {
    "libsql": SQLITE,
    "memory": MEMORY,
    "mongodb": MONGODB,
    "postgresql": POSTGRES,
    "redis": REDIS,
    "sqlite": SQLITE,
}


def form_for(backend: str) -> RawForm:
    """The physical form prescribed for ``backend``, or the lenient one."""
    return FORMS.get(backend, LENIENT)
