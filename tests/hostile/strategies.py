"""Hypothesis strategies of hostile input and the JSON comparison the properties share
(test_properties.py, test_properties_domains.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from composite_store.records.json import MAX_JSON_DEPTH, storable_id
from composite_store.rules.paging import MAX_PAGE

SPECIAL = [
    "",
    " ",
    "alice",
    "alice ",
    " alice",
    "Alice",
    "alice\t",
    "alice\u00a0",
    "alicé",
    "$where",
    "$ne",
    "$gt",
    "$",
    "a.b",
    ".",
    "..",
    "{",
    "}",
    "{}",
    "[",
    "*",
    "%",
    "_",
    "?",
    "\\",
    "'",
    '"',
    "`",
    ";",
    "--",
    "' OR '1'='1",
    "${x}",
    "__proto__",
    "constructor",
    "NaN",
    "Infinity",
    "null",
    "true",
    "1e309",
    "\x00",
    "a\x00b",
    "\ud800",
    "a\udfffb",
    "\ufeff",
    "\u200b",
    "ß",
    "\u017f",
    "\u0130",
    "🙂",
    "e\u0301",
    "\n",
    "\r\n",
    "x" * 256,
    "é" * 255,
]
BIG = ["x" * 1_000_000, "é" * 500_000]

#: Short text, the special cases, the special cases glued to text; rarely 1 MB.
texts = st.one_of(
    st.text(max_size=20),
    st.sampled_from(SPECIAL),
    st.builds(lambda a, b: a + b, st.sampled_from(SPECIAL), st.text(max_size=4)),
    st.sampled_from(SPECIAL),
)
texts_or_big = st.one_of(texts, texts, texts, st.sampled_from(BIG))
keys = st.one_of(st.sampled_from(SPECIAL), st.text(max_size=8))


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
deep = st.sampled_from([MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, 10_000]).map(nested)
json_objects = st.one_of(
    st.dictionaries(keys, json_values, max_size=5),
    st.builds(lambda v: {"deep": v}, deep),
)
#: Anything at all where an argument of another type is expected.
anything = st.one_of(
    scalars,
    st.binary(max_size=4),
    st.lists(scalars, max_size=3),
    st.dictionaries(keys, scalars, max_size=3),
    st.sampled_from([{"$ne": None}, {"$gt": ""}, {"$where": "1"}, ["a"], (), set(), object()]),
    st.integers(min_value=MAX_PAGE - 1, max_value=2**64),
    st.integers(min_value=-(2**64), max_value=1),
)
ids = st.one_of(texts, texts, anything)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"  # JSON has one number type (and MongoDB hands back Int64)
    if isinstance(value, (list, tuple)):
        return "array"  # a tuple given is stored as the JSON array it is
    return type(value).__name__


def same_json(a: Any, b: Any) -> bool:
    """JSON equality that tells 1 from True the way ``==`` does not."""
    if _kind(a) != _kind(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        # PostgreSQL's JSONB keeps numbers as numerics: 7.205759403792258e+16 comes back as
        # the integer 72057594037922580, the same double.
        return float(a) == float(b)
    return bool(a == b)


def valid_id(value: Any) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    try:
        storable_id(value)
    except ValueError:
        return False
    return True


def decoded_again(*values: Any) -> bool:
    """Whether one of ``values`` is a top-level string of JSON object or array text, which the
    relational and PostgreSQL readers decode once more for Mastra's double-encoded metadata:
    SqlStore.known_gaps (``test_json_looking_strings_in_json_columns_stay_strings``)."""
    for value in values:
        if isinstance(value, str) and value[:1] in ("{", "["):
            try:
                json.loads(value)
            except ValueError:
                continue
            return True
    return False


def storable(*values: Any) -> bool:
    """Whether docs/input.md lets every backend store each of ``values``: text without NUL or
    lone surrogates, finite numbers, integers within 64 bits, JSON nested at most 31 levels.
    Written apart from composite_store.records.json, so the properties do not grade the code
    by itself."""
    return all(_storable(v, 0) for v in values)


def _storable(value: Any, depth: int) -> bool:
    if isinstance(value, str):
        return "\x00" not in value and not any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, (list, tuple)):
        return depth < 31 and all(_storable(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return depth < 31 and all(
            isinstance(k, str) and _storable(k, 0) and _storable(v, depth + 1)
            for k, v in value.items()
        )
    return False


def rows(good: dict[str, Any], bad: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Rows of ``good`` values with at most one field drawn from ``bad`` instead: a write
    with one hostile field among valid ones, so the hostile value is what decides."""

    def patch(base: dict[str, Any], choice: tuple[str, Any] | None) -> dict[str, Any]:
        return base if choice is None else {**base, choice[0]: choice[1]}

    choices = [st.tuples(st.just(name), strategy) for name, strategy in bad.items()]
    return st.builds(patch, st.fixed_dictionaries(good), st.one_of(st.none(), *choices))


#: Text every backend stores: no NUL, no lone surrogate (category Cs); the special cases
#: that are storable; rarely 1 MB. Built, not filtered, so hypothesis discards nothing.
_safe_text = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20
)
_safe_special = [s for s in SPECIAL if storable(s)]
good_ids = st.one_of(
    _safe_text.filter(str.strip), st.sampled_from([s for s in _safe_special if valid_id(s)])
)
good_texts = st.one_of(_safe_text, st.sampled_from(_safe_special), st.sampled_from(BIG))
_good_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    _safe_text,
    st.sampled_from(_safe_special),
)
_good_keys = st.one_of(st.sampled_from(_safe_special), _safe_text)
_good_values = st.recursive(
    _good_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_good_keys, inner, max_size=4)
    ),
    max_leaves=12,
)
#: Storable JSON values but None (a required payload), up to the deepest allowed.
good_json = st.one_of(
    _good_values.filter(lambda v: v is not None),
    st.sampled_from([MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1]).map(nested),
)
good_objects = st.one_of(
    st.none(),
    st.dictionaries(_good_keys, _good_values, max_size=5),
    st.builds(lambda v: {"deep": v}, st.just(nested(MAX_JSON_DEPTH - 1))),
)
good_lists = st.one_of(
    st.none(), st.lists(st.one_of(_safe_text, st.sampled_from(_safe_special)), max_size=3)
)
