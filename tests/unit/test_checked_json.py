"""``checked_json`` (orjson, the JSON columns' encoder) writes what ``compact_json`` (the
standard library's C encoder) writes for every value the records' check accepts, numbers
from 1e-9 to 1e-4 excepted (another spelling of the same double); and what orjson does not
take goes to the standard library's encoder, so it gets that encoder's text or error."""

from __future__ import annotations

import enum
import json
import math
import re
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from composite_store.records.json import (
    MAX_JSON_DEPTH,
    NOT_COMPACT,
    NonFiniteNumber,
    checked_encoder,
    checked_json,
    compact_json,
    compact_value,
    json_value,
    marked_non_finite,
    parse_json,
)
from composite_store.records.memory import MessageContent, stored_content_text
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


# -- compact_value: orjson's round trip, and stored content that goes on as it is -------------


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (``1 == 1.0`` and ``0.0 == -0.0`` are not
    the same value here), keys in the same order."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _spellings(value: Any) -> list[str]:
    """Texts of ``value`` as writers spell it: ours, the standard library's compact and
    default forms (spaces, ``\\u`` escapes), indented."""
    return [
        checked_json(value),
        compact_json(value),
        json.dumps(value),
        json.dumps(value, ensure_ascii=False, indent=1),
    ]


#: Text that is not compact, or that orjson reads otherwise than parse_json: numbers past
#: 64 bits or a double's range, NaN, lone surrogates, a key twice, spaces, other spellings
#: of a number, nesting past orjson's writer, trailing data, no JSON at all.
_NOT_COMPACT_TEXTS = [
    '{"n":18446744073709551616}',
    '{"n":-9223372036854775809}',
    '{"n":123456789012345678901234567890}',
    '{"n":1e400}',
    '{"n":-1e400}',
    '{"n":NaN}',
    '{"n":Infinity}',
    '{"t":"\\ud800"}',
    '{"t":"\\udc00x"}',
    '{"a":1,"a":2}',
    '{"a": 1}',
    ' {"a":1}',
    '{"a":1}\n',
    '{"n":1E2}',
    '{"n":1e16}',
    '{"n":1.50}',
    '{"n":-0}',
    '{"t":"\\u00e9"}',
    '{"t":"\\/"}',
    "[" * 300 + "]" * 300,
    '{"a":1} trailing',
    "just a plain string",
    "",
]


@pytest.mark.parametrize("text", _NOT_COMPACT_TEXTS)
def test_compact_value_refuses_text_it_would_not_write_back(text: str) -> None:
    assert compact_value(text) is NOT_COMPACT


@settings(max_examples=400, deadline=None)
@given(values)
def test_compact_value_is_parse_json_s_value_or_nothing(value: Any) -> None:
    for text in _spellings(json_value(value)):
        found = compact_value(text)
        if found is NOT_COMPACT:
            # Refused only where it is not the text the encoder writes of what it holds.
            assert text != checked_json(parse_json(text))
            continue
        assert _same(found, parse_json(text))
        assert checked_json(found) == text
    # Ours is compact, and read back as the value itself.
    assert _same(compact_value(checked_json(json_value(value))), json_value(value))


#: Content the content fields hold: the usual forms and the odd ones other writers leave.
_contents = st.fixed_dictionaries(
    {"format": st.sampled_from([2, 3, "2"]), "parts": st.lists(values, max_size=3)},
    optional={
        "content": st.one_of(st.none(), text),
        "metadata": st.one_of(st.none(), st.dictionaries(text, values, max_size=3)),
        "toolInvocations": st.lists(values, max_size=2),
    },
)


@settings(max_examples=400, deadline=None)
@given(_contents)
def test_stored_content_text_is_what_the_record_writes(content: dict[str, Any]) -> None:
    for stored in _spellings(json_value(content)):
        assert stored_content_text(stored) == MessageContent.from_stored(stored).to_json()


@pytest.mark.parametrize(
    "stored",
    [
        *(f'{{"format":2,"parts":[{t}]}}' for t in _NOT_COMPACT_TEXTS if t.startswith("{")),
        '{"format":2,"parts":[],"content":null}',
        '{"format":2,"parts":[],"metadata":null,"content":"x"}',
        '{"format":2,"parts":[],"extra":1}',
        '{"format":2}',
        '{"parts":[]}',
        '[{"format":2,"parts":[]}]',
        '"a JSON string"',
        "just a plain string",
    ],
)
def test_stored_content_text_of_odd_content_is_what_the_record_writes(stored: str) -> None:
    try:
        expected = MessageContent.from_stored(stored).to_json()
    except ValueError as refused:
        with pytest.raises(type(refused), match=re.escape(str(refused))):
            stored_content_text(stored)
    else:
        assert stored_content_text(stored) == expected
