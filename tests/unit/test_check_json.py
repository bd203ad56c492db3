"""``check_json`` (the check without a copy, run on every message's content) refuses exactly
what ``json_value`` (the copying check, with its own plain-types fast path) refuses: both
have a loop for exact dicts and lists of plain members, and a general walk for the rest
(subclasses of str and dict, models, hostile leaves), which must agree."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from composite_store.records.json import (
    MAX_JSON_DEPTH,
    check_json,
    encodable_text,
    json_value,
)


class Name(str):
    """A str subclass: a key or a value the exact-type loops hand to the general walk."""


class Mapping(dict[str, Any]):
    """A dict subclass, likewise."""


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(["\x00", "a\ud800b", "é", "\udfff"]),
    st.builds(Name, st.text(max_size=3)),
    st.sampled_from([object(), b"bytes", 1j]),
)
keys = st.one_of(
    st.text(max_size=4),
    st.sampled_from(["\x00", "k\ud800"]),
    st.builds(Name, st.text(max_size=3)),
    st.sampled_from([1, None, 2.5, True]),
)


def _nested(depth: int) -> Any:
    """Lists and dicts by turns, ``depth`` levels deep."""
    value: Any = 1
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4),
        st.dictionaries(st.text(max_size=3), inner, max_size=3).map(Mapping),
    ),
    max_leaves=12,
) | st.sampled_from([MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1]).map(_nested)


def _refused(check: Any, value: Any) -> str | None:
    try:
        check(value)
    except ValueError as exc:
        return str(exc)
    return None


@settings(max_examples=600, deadline=None)
@given(values)
def test_check_json_refuses_what_json_value_refuses(value: Any) -> None:
    assert (_refused(check_json, value) is None) == (_refused(json_value, value) is None)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"a": {"b": [1, {"c": math.nan}]}}, "NaN"),
        ({"a": [1, 2**64]}, "64 bits"),
        ({"a": {"n": 2**63}}, "64 bits"),
        ({"a": [-(2**63) - 1]}, "64 bits"),
        ({"a": {1: "x"}}, "object key 1"),
        ({"a": ["ok", "x\ud800"]}, "lone surrogate"),
        ({"a": {"k\udc00": 1}}, "lone surrogate"),
        ({"a": [b"bytes"]}, "bytes.* is not JSON data"),
        (_nested(MAX_JSON_DEPTH + 1), "nests deeper"),
    ],
)
@pytest.mark.parametrize("check", [check_json, json_value], ids=["check_json", "json_value"])
def test_a_refused_member_deep_in_plain_containers_is_named(
    value: Any, reason: str, check: Any
) -> None:
    with pytest.raises(ValueError, match=reason):
        check(value)


def test_message_text_keeps_nul_and_str_subclass_keys_pass() -> None:
    check_json({"text": "a\x00b", Name("k"): [Name("v"), "w"]}, text=encodable_text)
    with pytest.raises(ValueError, match="U\\+0000"):
        check_json({"text": "a\x00b"})


@pytest.mark.parametrize(
    "value", [{"n": math.nan}, [Name("x")], {"k": "a\x00"}, Mapping(a=1), {"deep": [[[{1: 2}]]]}]
)
def test_a_value_off_the_fast_path_leaves_nothing_of_its_caller_alive(value: Any) -> None:
    """A value the fast path hands to the general walk leaves no frame behind: what the
    caller held is freed with it (a shared exception instance kept the traceback of its
    latest raise, and through it every caller's frame and locals)."""
    import gc
    import weakref

    class Held:
        """Something only the caller's frame refers to."""

    def caller() -> weakref.ref[Held]:
        held = Held()
        with contextlib.suppress(ValueError):
            json_value(value)
        return weakref.ref(held)

    ref = caller()
    gc.collect()
    assert ref() is None
