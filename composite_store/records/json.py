"""JSON-compatible field types: values every backend can store in a JSON column as they are.

A value stored in a JSON column must survive ``json.dumps`` on every backend, so records check
it when they are built instead of letting a driver fail halfway through a write: strings,
finite numbers, booleans, ``None``, lists (tuples become lists) and objects with string keys.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, PlainValidator, Strict

try:
    import orjson
except ImportError:  # pragma: no cover - a platform without orjson's wheels
    orjson = None  # type: ignore[assignment]

__all__ = [
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "NOT_COMPACT",
    "NonFiniteNumber",
    "Id",
    "Int64",
    "JsonArray",
    "JsonObject",
    "JsonValue",
    "StringList",
    "Text",
    "check_json",
    "compact_encoder",
    "compact_value",
    "compact_json",
    "checked_json",
    "encodable_text",
    "json_value",
    "marked_non_finite",
    "parse_json",
    "storable_id",
    "storable_text",
]

def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def compact_encoder(default: Callable[[Any], Any] = _not_json) -> Callable[[Any], str]:
    """``JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
    default=default).encode``: the same text and errors, without the per-call set-up.

    ``JSONEncoder.encode`` builds a new C encoder on every call (and ``json.dumps`` with
    options a new ``JSONEncoder`` too): half the time of dumping a small object (a span's
    input, 2.2 -> 1.0 us; a message's content, 6.5 -> 2.3 us). This C encoder is made once,
    without the circular-reference markers, which would have to be a new dict per call (the C
    encoder leaves entries behind when it fails): values reaching it are checked or parsed
    JSON (``json_value`` bounds the nesting, so a cycle is refused before), and a cycle that
    got here anyway raises RecursionError.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - an interpreter without the C accelerator
        encode: Callable[[Any], str] = json.JSONEncoder(
            separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default
        ).encode
        return encode
    chunks = make(
        None, default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )

    def compact(value: Any) -> str:
        return "".join(chunks(value, 0))

    return compact


#: Compact JSON text: no spaces, non-ASCII as UTF-8, NaN refused (Mastra's JSON.stringify).
compact_json: Callable[[Any], str] = compact_encoder()

#: What orjson hands to ``default`` instead of writing itself: subclasses of the JSON types
#: (a ``str`` enum, an ``OrderedDict``), dataclasses and datetimes, which the standard
#: library's encoder writes differently or refuses.
_ORJSON_OPTIONS = (
    0
    if orjson is None
    else orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)


def checked_encoder(
    default: Callable[[Any], Any] = _not_json, fallback: Callable[[Any], str] | None = None
) -> Callable[[Any], str]:
    """An encoder of values that passed the records' check (:func:`json_value` or
    :func:`check_json`) when their record was built: :func:`compact_encoder`'s text for
    them, written by orjson (a 5 KB workflow snapshot: 20 -> 2.1 us; a message's content:
    1.1 -> 0.2 us). Anything orjson refuses (a subclass of a JSON type, a non-string key,
    a lone surrogate, an integer beyond 64 bits, nesting past 254) goes through ``fallback``
    (by default :func:`compact_encoder`'s), which writes it or raises its error.

    The text differs from the standard library's in one place: numbers from 1e-9 to 1e-4
    (orjson writes ``0.00001`` and ``1e-6``, Python ``1e-05`` and ``1e-06``). Both spell
    the same double, which is what every reader (``json.loads``, ``JSON.parse``, JSONB,
    ``json_extract``) takes of them; JavaScript writes a third spelling (``0.000001``).

    Only for checked values: orjson writes NaN as ``null`` and a ``UUID`` or an ``Enum``
    as its value, which the check refuses. A record's fields are checked when it is built
    (``coerce`` takes a record instance as validated); a field changed in place afterwards
    is written as it then is.
    """
    if fallback is None:
        fallback = compact_encoder(default)
    if orjson is None:  # pragma: no cover - a platform without orjson's wheels
        return fallback
    dumps, options, refused, slow = orjson.dumps, _ORJSON_OPTIONS, orjson.JSONEncodeError, fallback

    def encode(value: Any) -> str:
        try:
            return dumps(value, default, options).decode()
        except refused:
            return slow(value)

    return encode


#: Compact JSON text of a checked value (:func:`checked_encoder`): the JSON columns' encoder.
checked_json: Callable[[Any], str] = checked_encoder()

class NonFiniteNumber(float):
    """NaN or an infinity read from stored text (``NaN``, ``Infinity``, ``-Infinity``: not
    JSON, but Python's parser takes them). A float subclass so that :func:`checked_json`,
    which would write a plain NaN as ``null``, hands it to the standard library's encoder,
    which refuses it as it refuses every NaN: a stored row holding one cannot be copied."""

    __slots__ = ()


def marked_non_finite(value: Any) -> Any:
    """``value`` with every NaN and infinity in it a :class:`NonFiniteNumber`: for values
    decoded by something other than :func:`parse_json` (BSON keeps NaN as a plain float),
    so that writing them refuses them as :func:`parse_json`'s are refused, where
    :func:`checked_json` would write ``null`` in their place. ``value`` itself when it holds
    none (nothing is copied); otherwise the objects and arrays on the way to one are new."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else NonFiniteNumber(value)
    if kind is dict:
        return _marked_members(value, value.items(), dict)
    if kind is list:
        return _marked_members(value, enumerate(value), list)
    return value


def _marked_members(
    container: Any, members: Iterable[tuple[Any, Any]], copy: Callable[[Any], Any]
) -> Any:
    """:func:`marked_non_finite` of an object's or array's ``members`` (key or index, value):
    ``container`` itself, or a ``copy`` of it with the members that changed replaced."""
    marked = None
    for at, item in members:
        new = marked_non_finite(item)
        if new is not item:
            if marked is None:
                marked = copy(container)
            marked[at] = new
    return container if marked is None else marked


#: A decoder whose non-finite numbers are :class:`NonFiniteNumber`.
_DECODER = json.JSONDecoder(parse_constant=NonFiniteNumber)
#: Its C scanner: ``(value, end)`` of the JSON value at an index.
_scan_json: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def parse_json(text: str) -> Any:
    """``json.loads(text)``, twice as fast on the compact documents stores hold, with NaN and
    the infinities read as :class:`NonFiniteNumber`.

    ``json.loads`` matches two whitespace regexes around the C scanner; stored JSON has no
    whitespace to skip, so the scanner runs alone. Text it does not consume whole (surrounding
    whitespace, trailing data, an error) goes through the decoder's ``decode`` for its value
    or ``json.loads``'s error.
    """
    try:
        value, end = _scan_json(text, 0)
    except (StopIteration, ValueError):
        return _DECODER.decode(text)
    return value if end == len(text) else _DECODER.decode(text)


#: What :func:`compact_value` returns for text that is not :func:`checked_json`'s own.
NOT_COMPACT: Any = object()


def compact_value(text: str) -> Any:
    """The value of JSON ``text`` when ``text`` is exactly what :func:`checked_json` writes of
    that value, else :data:`NOT_COMPACT`: parsed and written back by orjson, which costs
    about half of :func:`parse_json` alone on a message's content. For a copy's stored rows,
    which are such text nearly always and go on as they are.

    Where it returns a value, :func:`parse_json` reads the same one, so a caller may take it
    for :func:`parse_json`'s: orjson refuses what only Python's parser takes (NaN, the
    infinities, numbers past a double's range, lone surrogates) and nests no deeper than it
    writes; it reads an integer past 64 bits as a float, whose text is not the integer's
    digits; and a number written back as it was spelled is the shortest spelling of its
    double, which a correctly rounded parser reads as that double. Text with spaces, a key
    twice or another spelling of a number is simply not compact (the caller's general path).
    """
    if orjson is None:  # pragma: no cover - a platform without orjson's wheels
        return NOT_COMPACT
    try:
        value = orjson.loads(text)
        written = orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return NOT_COMPACT
    return value if written.decode() == text else NOT_COMPACT


#: How many arrays and objects a stored JSON value may nest, one inside the other (``[[1]]``
#: nests 2). The weakest backend sets it: MariaDB's ``JSON_VALID`` refuses 32 levels. A value
#: nested deeper is a ``ValidationError`` on every backend, before anything is written.
MAX_JSON_DEPTH = 31


_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(value: str) -> str:
    """Return ``value`` if every backend stores it verbatim, else raise ``ValueError``: text
    holds no U+0000 (PostgreSQL's TEXT and JSONB refuse it) and no lone surrogate (not
    encodable as UTF-8, so no driver can send it)."""
    if "\x00" in value:
        raise ValueError("text must not contain U+0000 (NUL)")
    return encodable_text(value)


def encodable_text(value: str) -> str:
    """Return ``value`` if it can be encoded as UTF-8 (no lone surrogate), else raise
    ``ValueError``; NUL is allowed (message content keeps it escaped in its JSON text)."""
    if not value.isascii():
        found = _SURROGATE.search(value)
        if found:
            raise ValueError(
                f"text must not contain a lone surrogate U+{ord(found.group()):04X} "
                "(not encodable as UTF-8)"
            )
    return value


#: The longest identifier, in characters: what a key column holds on every backend (MySQL's
#: and Oracle's ``VARCHAR(255)``; PostgreSQL's B-tree entries are bounded too).
MAX_ID_LENGTH = 255

#: JSON integers are signed 64-bit (BSON's widest; beyond it PostgreSQL and Python keep
#: digits that MongoDB cannot).
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def storable_id(value: str) -> str:
    """Return ``value`` if it is storable text (:func:`storable_text`) of at most
    :data:`MAX_ID_LENGTH` characters, else raise ``ValueError``."""
    if len(value) > MAX_ID_LENGTH:
        raise ValueError(f"ids are at most {MAX_ID_LENGTH} characters, got {len(value)}")
    return storable_text(value)


class _NotPlain(Exception):
    """:func:`_plain` met something it does not take as is (see :func:`json_value`).

    Raised as the class, a new instance each time: one shared instance would keep the
    traceback of its latest raise, and through its frames everything the callers held (a
    workflow update's MongoDB collection, and its client, stayed alive to the interpreter's
    exit)."""


def _plain(value: Any, depth: int) -> Any:
    """:func:`json_value` for values built of the exact JSON types only, without the path
    that only an error message needs, and with the leaves of a container checked in its own
    loop rather than by a call each (a workflow snapshot of 5 KB: 40 -> 20 us). Anything else
    (a refused value, a subclass of str or dict, an enum) raises :class:`_NotPlain`."""
    kind = type(value)
    if kind is dict:
        if depth >= MAX_JSON_DEPTH:
            raise _NotPlain
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str or "\x00" in key or not (key.isascii() or _text_ok(key)):
                raise _NotPlain
            leaf = type(item)
            if leaf is str:
                if "\x00" in item or not (item.isascii() or _text_ok(item)):
                    raise _NotPlain
                out[key] = item
            elif item is None or leaf is bool:
                out[key] = item
            elif leaf is int:
                if not _INT_MIN <= item <= _INT_MAX:
                    raise _NotPlain
                out[key] = item
            else:
                out[key] = _plain(item, depth + 1)
        return out
    if kind is list or kind is tuple:
        if depth >= MAX_JSON_DEPTH:
            raise _NotPlain
        items = []
        for item in value:
            leaf = type(item)
            if leaf is str:
                if "\x00" in item or not (item.isascii() or _text_ok(item)):
                    raise _NotPlain
                items.append(item)
            elif item is None or leaf is bool:
                items.append(item)
            elif leaf is int:
                if not _INT_MIN <= item <= _INT_MAX:
                    raise _NotPlain
                items.append(item)
            else:
                items.append(_plain(item, depth + 1))
        return items
    if kind is str:
        if "\x00" in value or not (value.isascii() or _text_ok(value)):
            raise _NotPlain
        return value
    if value is None or kind is bool:
        return value
    if kind is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise _NotPlain
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain
        return value
    raise _NotPlain


def _text_ok(text: str) -> bool:
    """Whether non-ASCII ``text`` has no lone surrogate (is encodable as UTF-8)."""
    return _SURROGATE.search(text) is None


def json_value(value: Any, _depth: int = 0, _path: str = "$") -> Any:
    """Return ``value`` as plain JSON data (tuples as lists); raise ``ValueError`` otherwise.

    Refused: NaN and infinities, non-string object keys, values that are not JSON data,
    nesting deeper than :data:`MAX_JSON_DEPTH`, and text :func:`storable_text` refuses.
    """
    if _depth == 0:
        # The usual value (exact JSON types, nothing refused) in one pass without paths;
        # anything else is walked again below, which gives the same result or error.
        try:
            return _plain(value, 0)
        except _NotPlain:
            pass
    return _json_value(value, _depth, _path)


def _json_value(value: Any, _depth: int, _path: str) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise ValueError(f"integer at {_path} does not fit in 64 bits (use a string)")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} at {_path} is not valid JSON (NaN and infinity are not)")
        return value
    if isinstance(value, (list, tuple, dict)) and _depth >= MAX_JSON_DEPTH:
        raise ValueError(f"JSON at {_path[:80]}... nests deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, (list, tuple)):
        return [_json_value(v, _depth + 1, f"{_path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object key {key!r} at {_path} is not a string")
            # The key first: a path holding a lone surrogate would make the error message
            # itself unencodable (pydantic raises UnicodeEncodeError building it).
            storable_text(key)
            out[key] = _json_value(v, _depth + 1, f"{_path}.{key}")
        return out
    raise ValueError(
        f"{type(value).__name__} at {_path} is not JSON data "
        "(use dicts, lists, strings, numbers, booleans and None)"
    )


def check_json(value: Any, _depth: int = 0, text: Callable[[str], str] = storable_text) -> None:
    """Raise ``ValueError`` where :func:`json_value` would, without copying ``value``;
    pydantic models inside it (message parts given as models) count as JSON objects.
    ``text`` checks every string and key (:func:`encodable_text` for message content, stored
    as JSON text that escapes NUL)."""
    # Exact dicts and lists, most of any JSON value, go straight to their loops; the members
    # that are plain strings, None or booleans are checked in the loop rather than by a call
    # each. Those calls and the scalar checks were most of the time (10 messages' content:
    # 24 -> 18 us).
    kind = type(value)
    if kind is not dict and kind is not list:
        if isinstance(value, str):
            text(value)
            return
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, int):
            if not _INT_MIN <= value <= _INT_MAX:
                raise ValueError("integer does not fit in 64 bits (use a string)")
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"{value!r} is not valid JSON (NaN and infinity are not)")
            return
    if _depth >= MAX_JSON_DEPTH:
        raise ValueError(f"JSON nests deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, (list, tuple)):
        for v in value:
            if type(v) is str:
                text(v)
            elif v is not None and type(v) is not bool:
                check_json(v, _depth + 1, text)
        return
    if not isinstance(value, dict):
        if not isinstance(value, BaseModel):
            raise ValueError(
                f"{type(value).__name__} is not JSON data "
                "(use dicts, lists, strings, numbers, booleans and None)"
            )
        value = value.model_dump(exclude_none=True)
    for key, v in value.items():
        if not isinstance(key, str):
            raise ValueError(f"object key {key!r} is not a string")
        text(key)
        if type(v) is str:
            text(v)
        elif v is not None and type(v) is not bool:
            check_json(v, _depth + 1, text)


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object (dict), got {type(value).__name__}")
    result: dict[str, Any] = json_value(value)
    return result


def _array(value: Any) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a JSON array (list), got {type(value).__name__}")
    result: list[Any] = json_value(value)
    return result


def _strings(value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of strings, got {type(value).__name__}")
    for item in value:
        if not isinstance(item, str):
            raise ValueError(f"expected a list of strings, found {item!r}")
        storable_text(item)
    return list(value)


def _int64(value: int) -> int:
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError(f"{value} does not fit in a signed 64-bit integer")
    return value


#: Any JSON value (object, array, string, number, boolean or null).
JsonValue = Annotated[Any, PlainValidator(json_value)]
#: A JSON object with string keys.
JsonObject = Annotated[dict[str, Any], PlainValidator(_object)]
#: A JSON array.
JsonArray = Annotated[list[Any], PlainValidator(_array)]
#: A JSON array of storable strings (tags, ids).
StringList = Annotated[list[str], PlainValidator(_strings)]
#: Text every backend stores verbatim (:func:`storable_text`): no U+0000, no lone surrogate.
Text = Annotated[str, Strict(), AfterValidator(storable_text)]
#: An identifier (:func:`storable_id`): storable text of at most ``MAX_ID_LENGTH`` characters.
Id = Annotated[str, Strict(), AfterValidator(storable_id)]
#: An integer column: a real ``int`` (not a bool, a float or a numeric string, which would not
#: round-trip as given) within signed 64 bits, what every backend's integer column holds.
Int64 = Annotated[int, Strict(), AfterValidator(_int64)]
