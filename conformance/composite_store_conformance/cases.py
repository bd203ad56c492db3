"""Edge-case tables shared by the suites: pagination edges, date bounds, include windows,
hostile ids and JSON values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

__all__ = [
    "BASE_TIME",
    "DATE_BOUNDS",
    "HOSTILE_IDS",
    "INCLUDE_WINDOWS",
    "JSON_CONTAINER_LOOKALIKES",
    "JSON_LOOKALIKES",
    "LOOKALIKES",
    "OPERATOR_LIKE",
    "OWNERS",
    "PAGINATION_EDGES",
    "at",
]

#: A fixed instant every suite dates its records from (milliseconds matter, so it has some).
BASE_TIME = datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """``BASE_TIME`` plus ``seconds`` (truncated to whole milliseconds)."""
    return BASE_TIME + timedelta(milliseconds=round(seconds * 1000))


#: (total rows, page, per_page, expected ids by position, expected has_more).
#: Rows are numbered 0..total-1 in the listing's order.
PAGINATION_EDGES: list[tuple[int, int, int | bool, list[int], bool]] = [
    (5, 0, 2, [0, 1], True),
    (5, 1, 2, [2, 3], True),
    (5, 2, 2, [4], False),
    (5, 3, 2, [], False),
    (4, 1, 2, [2, 3], False),
    (5, 0, 5, [0, 1, 2, 3, 4], False),
    (5, 0, 10, [0, 1, 2, 3, 4], False),
    (5, 0, False, [0, 1, 2, 3, 4], False),
    (0, 0, 3, [], False),
    (1, 0, 1, [0], False),
]

#: (start offset s, end offset s, start_exclusive, end_exclusive, expected message indexes)
#: over messages 0..4 created at at(0)..at(4).
DATE_BOUNDS: list[tuple[float | None, float | None, bool, bool, list[int]]] = [
    (1, 3, False, False, [1, 2, 3]),
    (1, 3, True, False, [2, 3]),
    (1, 3, False, True, [1, 2]),
    (1, 3, True, True, [2]),
    (None, 2, False, False, [0, 1, 2]),
    (2, None, False, False, [2, 3, 4]),
    (2, 2, False, False, [2]),
    (2, 2, True, False, []),
    (1.001, 3, False, False, [2, 3]),
    (10, None, False, False, []),
]

#: (target index, previous, next, expected indexes) over messages 0..9 of one thread.
INCLUDE_WINDOWS: list[tuple[int, int, int, list[int]]] = [
    (5, 2, 2, [3, 4, 5, 6, 7]),
    (0, 2, 1, [0, 1]),
    (9, 1, 3, [8, 9]),
    (4, 0, 0, [4]),
    (4, 20, 0, [0, 1, 2, 3, 4]),
    (4, 0, 20, [4, 5, 6, 7, 8, 9]),
]

#: Ids that differ from ``alice`` by one thing each: a comparison that pads, folds case or
#: normalises Unicode takes one of them for her.
LOOKALIKES = ("alice ", "Alice", "ALICE", "alice\t", " alice", "alicé", "alice\u00a0")

#: Ids that a backend would read as a pattern, an operator or a key separator if it let a value
#: reach its query language: SQL ``LIKE`` wildcards, Redis glob and key-structure characters,
#: MongoDB operators and regular expressions, quotes. Each must match only itself.
OPERATOR_LIKE = (
    "%",
    "ali%",
    "_lice",
    "*",
    "ali*",
    "[a]lice",
    "a?ice",
    ".*",
    "^alice$",
    "alice|mallory",
    "$ne",
    '{"$ne": null}',
    "alice' OR '1'='1",
    "alice\\",
    "alice:*",
    "{alice}",
    "alice}:{mallory",
)

#: Every id a scoped read must not take for ``alice`` (the resource the suites' records are of).
HOSTILE_IDS = LOOKALIKES + OPERATOR_LIKE

#: JSON values that a loose comparison takes for one another: a boolean for a number (Python's
#: ``True == 1``, SQLite's ``json_extract``), a string for the number, boolean or object it
#: spells. A key/value filter (thread metadata, span metadata and attributes) matches each
#: only itself. (name, value) pairs; the names are test ids and record ids.
JSON_LOOKALIKES: tuple[tuple[str, object], ...] = (
    ("one", 1),
    ("true", True),
    ("one-text", "1"),
    ("true-text", "true"),
    ("zero", 0),
    ("false", False),
    ("zero-text", "0"),
    ("false-text", "false"),
    ("half", 2.5),
    ("half-text", "2.5"),
)

#: Object and array values (thread metadata only: span filters take scalars) and the strings
#: holding their JSON text, which a comparison of extracted text takes for them.
JSON_CONTAINER_LOOKALIKES: tuple[tuple[str, object], ...] = (
    ("object", {"a": 1}),
    ("object-text", '{"a":1}'),
    ("array", [1]),
    ("array-text", "[1]"),
)

#: The scopes the isolation suites write records of: alice, mallory and every hostile id.
OWNERS = ("alice", "mallory", *HOSTILE_IDS)
