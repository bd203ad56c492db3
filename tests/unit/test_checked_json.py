"""``checked_json`` (orjson, the JSON columns' encoder) writes what ``compact_json`` (the
standard library's C encoder) writes for every value the records' check accepts, numbers
from 1e-9 to 1e-4 excepted (another spelling of the same double); and what orjson does not
take goes to the standard library's encoder, so it gets that encoder's text or error."""

from __future__ import annotations

import enum
import json
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from composite_store.records.json import (
    MAX_JSON_DEPTH,
    NonFiniteNumber,
    checked_encoder,
    checked_json,
    compact_json,
    json_value,
    marked_non_finite,
    parse_json,
)
from composite_store.records.memory import MessageContent
from composite_store.sql.types import loads_json

#: Text the check takes: anything but NUL and lone surrogates.
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=8)
#: Values the check takes: every kind of leaf, text with escapes and non-ASCII, 64-bit ints.
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
    st.sampled_from(["\x01\x1f\x7f", '"\\/', "\u2028\u2029", "é€😀", "\ufeff"]),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(text, inner, max_size=4),
    ),
    max_leaves=30,
)

@settings(max_examples=400, deadline=None)
@given(values)
def test_checked_values_get_the_standard_librarys_text(value: Any) -> None:
    checked = json_value(value)
    ours, theirs = checked_json(checked), compact_json(checked)
    if not any(1e-9 <= abs(x) < 1e-4 for x in _floats(checked)):
        assert ours == theirs
    else:
        assert json.loads(ours) == json.loads(theirs)


def _floats(value: Any) -> list[float]:
    if type(value) is float:
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _floats(v)]
    if isinstance(value, list):
        return [x for v in value for x in _floats(v)]
    return []


@pytest.mark.parametrize("exponent", range(-12, 20))
def test_every_exponent_reads_back_as_the_same_double(exponent: int) -> None:
    for mantissa in (1.0, 1.5, 2.2250738585072014, 9.999999999999998):
        number = mantissa * 10.0**exponent
        for value in (number, -number, [number], {"x": number}):
            assert json.loads(checked_json(value)) == value
            if not 1e-9 <= abs(number) < 1e-4:
                assert checked_json(value) == compact_json(value)


class Status(enum.StrEnum):
    DONE = "done"


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        {"k": Status.DONE},  # a str subclass: the standard library writes its text
        [Level.HIGH],  # an int subclass: its number
        OrderedDict(b=1, a=2),  # a dict subclass
        {1: "int key", None: "null key", 2.5: "float key"},  # keys the stdlib turns to text
        {"big": 2**64 + 1},  # beyond what orjson writes
        "\ud800",  # a lone surrogate (the drivers refuse it later)
        json.loads("[" * 300 + "]" * 300),  # past orjson's nesting limit
    ],
    ids=["str-enum", "int-enum", "ordered-dict", "non-str-keys", "big-int", "surrogate", "deep"],
)
def test_what_orjson_does_not_take_gets_the_standard_librarys_text(value: Any) -> None:
    assert checked_json(value) == compact_json(value)


@pytest.mark.parametrize(
    ("value", "error"),
    [({"x": object()}, TypeError), ({"when": __import__("datetime").date(2026, 1, 1)}, TypeError)],
)
def test_what_neither_takes_raises_the_standard_librarys_error(
    value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error) as ours:
        checked_json(value)
    with pytest.raises(error) as theirs:
        compact_json(value)
    assert str(ours.value) == str(theirs.value)


def test_the_fallback_is_the_one_given() -> None:
    calls: list[Any] = []

    def fallback(value: Any) -> str:
        calls.append(value)
        return "fallback"

    encode = checked_encoder(fallback=fallback)
    assert encode({"a": [1, "b"]}) == '{"a":[1,"b"]}'
    assert calls == []
    assert encode({1: 2}) == "fallback"
    assert calls == [{1: 2}]


def test_message_content_with_a_model_part_and_a_cycle() -> None:
    # A model kept in content (an extra key's value) is dumped through the default; a cycle
    # (possible only by changing a built content in place) is still refused as the
    # standard library refuses it.
    from pydantic import BaseModel

    class Part(BaseModel):
        type: str = "text"
        text: str

    content = MessageContent(format=2, parts=[], reasoning=Part(text="hi\x00"))
    assert json.loads(content.to_json())["reasoning"] == {"type": "text", "text": "hi\x00"}
    looped: list[Any] = []
    looped.append(looped)
    content.parts.append(looped)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Circular reference"):
        content.to_json()


def test_depth_the_check_allows_is_written_by_orjson() -> None:
    value: Any = 1
    for _ in range(MAX_JSON_DEPTH):
        value = [value]
    assert checked_json(json_value(value)) == compact_json(value) == "[" * 31 + "1" + "]" * 31


@pytest.mark.parametrize("text", ['{"n":NaN}', "[1,-Infinity]", ' {"deep":[Infinity]} '])
@pytest.mark.parametrize("parse", [parse_json, loads_json], ids=["parse_json", "loads_json"])
def test_a_stored_nan_is_read_as_a_number_the_encoder_refuses(text: str, parse: Any) -> None:
    # orjson would write a plain NaN as null: a row holding one must not copy as null.
    value = parse(text)
    assert json.dumps(value) == json.dumps(json.loads(text))
    with pytest.raises(ValueError, match="Out of range float values"):
        checked_json(value)
    assert isinstance(NonFiniteNumber("nan"), float)


@pytest.mark.parametrize(
    "decoded",
    [
        float("nan"),
        {"n": float("nan")},
        {"keep": {"a": 1.5}, "deep": [1, {"x": [float("-inf")]}]},
        [None, float("inf"), "NaN"],
    ],
)
def test_a_decoded_nan_is_marked_so_the_encoder_refuses_it(decoded: Any) -> None:
    # BSON decodes NaN as a plain float, which orjson would write as null.
    marked = marked_non_finite(decoded)
    assert json.dumps(marked) == json.dumps(decoded)  # the same value, NaN for NaN
    with pytest.raises(ValueError, match="Out of range float values"):
        checked_json(marked)


def test_marking_copies_only_the_way_to_a_nan() -> None:
    decoded = {"keep": {"a": 1.5}, "deep": [1, {"x": [float("-inf")]}]}
    marked = marked_non_finite(decoded)
    # What holds no NaN is kept as it is; the way to one is new, the input untouched.
    assert marked["keep"] is decoded["keep"] and marked is not decoded
    assert type(marked["deep"][1]["x"][0]) is NonFiniteNumber
    assert type(decoded["deep"][1]["x"][0]) is float


@given(values)
@settings(max_examples=200, deadline=None)
def test_a_value_without_nan_is_not_copied(value: Any) -> None:
    assert marked_non_finite(value) is value
