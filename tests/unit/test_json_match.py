"""``rules.json_match``: JSON equality of filter values, by type and value, without a backend."""

from __future__ import annotations

from typing import Any

import pytest

from composite_store.rules.json_match import json_equal, pairs_match


@pytest.mark.parametrize(
    ("stored", "wanted"),
    [
        (1, 1),
        (2.0, 2),
        (2, 2.0),
        (True, True),
        (False, False),
        ("1", "1"),
        (None, None),
        ({"a": 1, "b": [1, "x"]}, {"b": [1.0, "x"], "a": 1}),
        ([{"a": True}], [{"a": True}]),
    ],
)
def test_equal_json_values(stored: Any, wanted: Any) -> None:
    assert json_equal(stored, wanted)


@pytest.mark.parametrize(
    ("stored", "wanted"),
    [
        (True, 1),  # Python's True == 1
        (1, True),
        (False, 0),
        (0.0, False),
        ("1", 1),
        (1, "1"),
        ("true", True),
        ({"a": 1}, '{"a":1}'),
        ([1], "[1]"),
        ([1], [True]),
        ({"a": 1}, {"a": True}),
        ({"a": 1}, {"a": 1, "b": 2}),
        ([1, 2], [1]),
        (None, 0),
        (None, ""),
        ("a", "A"),
    ],
)
def test_values_of_another_json_type_or_value_differ(stored: Any, wanted: Any) -> None:
    assert not json_equal(stored, wanted)


def test_pairs_match_needs_every_pair() -> None:
    assert pairs_match({"k": 1, "j": "x"}, {"k": 1.0})
    assert pairs_match({"k": 1, "j": "x"}, {"k": 1, "j": "x"})
    assert not pairs_match({"k": 1, "j": "x"}, {"k": 1, "j": "y"})
    assert not pairs_match({"k": True}, {"k": 1})
    assert not pairs_match({}, {"k": None})
    assert not pairs_match(None, {"k": 1})
    assert pairs_match(None, None) and pairs_match(None, {})
