"""JSON Schema checks of datasets and items (``composite_store.rules.item_schemas``) and the
JSON value types of records (``composite_store.records.json``)."""

from __future__ import annotations

import enum
import functools
import math
from typing import Any

import pytest

from composite_store.errors import ValidationError
from composite_store.records.base import coerce
from composite_store.records.datasets import Dataset, DatasetItemInput
from composite_store.records.json import json_value
from composite_store.rules.item_schemas import ItemValidator, check_schema

PROMPT = {
    "type": "object",
    "properties": {"prompt": {"type": "string"}},
    "required": ["prompt"],
}


def validator(input_schema: Any = None, truth: Any = None) -> ItemValidator:
    return ItemValidator.for_dataset(
        Dataset(id="d", name="d", input_schema=input_schema, ground_truth_schema=truth)
    )


def test_valid_schemas_pass_and_none_is_no_schema() -> None:
    check_schema(PROMPT, what="input_schema")
    check_schema(None, what="input_schema")
    check_schema({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"},
                 what="ground_truth_schema")


def test_an_invalid_schema_is_rejected_with_its_location() -> None:
    with pytest.raises(ValidationError, match=r"input_schema is not a valid JSON Schema.*\$\.type"):
        check_schema({"type": "nope"}, what="input_schema")


def test_conforming_items_pass() -> None:
    v = validator(PROMPT, {"type": "string"})
    assert v.active
    v.check({"prompt": "hi"}, "answer", where="items[0]")
    v.check({"prompt": "hi"}, None, where="items[0]")  # an absent ground truth is not checked


def test_a_failing_input_names_the_item_field_and_path() -> None:
    v = validator(PROMPT)
    with pytest.raises(ValidationError, match=r"items\[1\]\.input does not match the input_schema "
                       r"of dataset 'd': 'prompt' is a required property \(at \$\)"):
        v.check_all([("items[0]", {"prompt": "a"}, None), ("items[1]", {"other": 1}, None)])
    with pytest.raises(ValidationError, match=r"1 is not of type 'string' \(at \$\.prompt\)"):
        v.check({"prompt": 1}, None, where="item")


def test_a_failing_ground_truth_is_reported() -> None:
    v = validator(truth={"type": "number"})
    with pytest.raises(ValidationError, match=r"item\.ground_truth does not match the "
                       "ground_truth_schema"):
        v.check("anything", "not a number", where="item")


def test_no_schema_accepts_anything() -> None:
    v = validator()
    assert not v.active
    v.check(["any", 1], {"x": None}, where="item")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": (1, 2)}, {"a": [1, 2]}),
        ([None, True, 1, 1.5, "s"], [None, True, 1, 1.5, "s"]),
        ("plain", "plain"),
    ],
)
def test_json_values_are_normalised(value: Any, expected: Any) -> None:
    assert json_value(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"a": {1, 2}}, r"set at \$\.a is not JSON data"),
        ({1: "x"}, r"object key 1 at \$ is not a string"),
        ([math.nan], r"nan at \$\[0\] is not valid JSON"),
        (b"bytes", "bytes at"),
    ],
)
def test_non_json_values_are_refused(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        json_value(value)


class _Name(str):
    """A str subclass: not an exact JSON type, so the one-pass walk hands it on."""


class _Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # Refused leaves inside containers, each where the one-pass walk checks leaves itself.
        ({"a": ["ok", "bad\x00"]}, "U\\+0000"),
        ({"a": {"b\x00": 1}}, "U\\+0000"),
        ({"k": "\ud800"}, "lone surrogate U\\+D800"),
        (["\udfff"], "lone surrogate U\\+DFFF"),
        ({"\ud800": 1}, "lone surrogate"),
        ({"a": [1, {"b": math.inf}]}, r"inf at \$\.a\[1\]\.b is not valid JSON"),
        ({"a": 2**63}, r"integer at \$\.a does not fit in 64 bits"),
        ({"a": [[-(2**63) - 1]]}, r"integer at \$\.a\[0\]\[0\] does not fit"),
        (functools.reduce(lambda inner, _: [inner], range(31), [1]), "nests deeper than 31"),
    ],
)
def test_refused_values_deep_inside_are_refused_with_their_path(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        json_value(value)


def test_values_beyond_the_exact_json_types_keep_their_normalisation() -> None:
    # Subclasses (str keys and values, IntEnum) pass as before, and tuples become lists
    # wherever they are, non-ASCII text included.
    value = {_Name("k"): _Name("v"), "n": _Level.LOW, "t": ("é", (1, None))}
    assert json_value(value) == {"k": "v", "n": 1, "t": ["é", [1, None]]}
    assert json_value(functools.reduce(lambda inner, _: [inner], range(30), [1]))  # depth 31


def test_records_refuse_non_json_payloads_as_our_validation_error() -> None:
    with pytest.raises(ValidationError, match="not JSON data"):
        coerce(DatasetItemInput, {"input": {"when": object()}}, what="item")
    with pytest.raises(ValidationError, match="input is required"):
        coerce(DatasetItemInput, {"input": None}, what="item")
