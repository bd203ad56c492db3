"""Decode SQLite's binary JSONB (https://sqlite.org/jsonb.html) without SQLite.

@mastra/libsql writes JSON columns through ``jsonb(?)``; the stdlib ``sqlite3`` here links
SQLite 3.40, whose ``json()`` predates JSONB (3.45), so the SQLite adapter decodes the blobs
itself. The format: every element is a header and a payload. The header's first byte holds
the element type in its low four bits and, in its high four bits, the payload size (0-11) or
how many following big-endian bytes hold it (12: 1, 13: 2, 14: 4, 15: 8). Scalars carry their
JSON (or JSON5) text as payload; arrays and objects carry their elements (an object
alternates labels and values).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["JsonbError", "decode", "looks_like_jsonb"]

NULL, TRUE, FALSE, INT, INT5, FLOAT, FLOAT5 = range(7)
TEXT, TEXTJ, TEXT5, TEXTRAW, ARRAY, OBJECT = range(7, 13)
_SIZE_BYTES = {12: 1, 13: 2, 14: 4, 15: 8}
#: JSON5 escapes that JSON lacks, as TEXT5 payloads may hold them.
_JSON5_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|'|v|0(?![0-9])|\r\n|[\n\r\u2028\u2029])")


#: JSON strings as JSONB payloads hold them (raw control characters are tolerated).
_LENIENT = json.JSONDecoder(strict=False).decode


class JsonbError(ValueError):
    """The blob is not well-formed JSONB."""


def _header(blob: bytes, at: int) -> tuple[int, int, int]:
    """(type, payload start, payload size) of the element at ``at``."""
    first = blob[at]
    kind, size = first & 0x0F, first >> 4
    start = at + 1
    if size >= 12:
        width = _SIZE_BYTES[size]
        if start + width > len(blob):
            raise JsonbError(f"truncated header at byte {at}")
        size = int.from_bytes(blob[start : start + width], "big")
        start += width
    if kind > OBJECT:
        raise JsonbError(f"reserved element type {kind} at byte {at}")
    if start + size > len(blob):
        raise JsonbError(f"element at byte {at} runs past the end")
    return kind, start, size


def _json5_text(payload: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] == "x":
            return chr(int(escape[1:], 16))
        return {"'": "'", "v": "\v", "0": "\0"}.get(escape, "")  # line continuations vanish

    text: str = _LENIENT(f'"{_JSON5_ESCAPE.sub(lambda m: _escape(replace(m)), payload)}"')
    return text


def _escape(text: str) -> str:
    return json.dumps(text)[1:-1]


def _number5(payload: str) -> int | float:
    text = payload.strip()
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body.lower().startswith("0x"):
        return sign * int(body[2:], 16)
    if body in ("Infinity", "inf"):
        return sign * math.inf
    if body == "NaN":
        return math.nan
    return sign * float(body)


def _element(blob: bytes, at: int) -> tuple[Any, int]:
    """The value of the element at ``at`` and the offset just past it."""
    kind, start, size = _header(blob, at)
    end = start + size
    if kind in (NULL, TRUE, FALSE):
        if size:
            raise JsonbError(f"{('null', 'true', 'false')[kind]} at byte {at} has a payload")
        return (None, True, False)[kind], end
    if kind in (ARRAY, OBJECT):
        items = []
        pos = start
        while pos < end:
            item, pos = _element(blob, pos)
            items.append(item)
        if pos != end:
            raise JsonbError(f"container at byte {at} overruns its size")
        if kind == ARRAY:
            return items, end
        if len(items) % 2:
            raise JsonbError(f"object at byte {at} has a label without a value")
        labels = items[0::2]
        if not all(isinstance(label, str) for label in labels):
            raise JsonbError(f"object at byte {at} has a label that is not text")
        return dict(zip(labels, items[1::2], strict=True)), end
    try:
        payload = blob[start:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonbError(f"text at byte {at} is not UTF-8") from exc
    try:
        if kind in (TEXT, TEXTRAW):
            return payload, end
        if kind == TEXTJ:
            return _LENIENT(f'"{payload}"'), end
        if kind == TEXT5:
            return _json5_text(payload), end
        if kind == INT:
            return int(payload), end
        if kind == FLOAT:
            return float(payload), end
        return _number5(payload), end  # INT5, FLOAT5
    except ValueError as exc:
        raise JsonbError(f"bad payload {payload!r} at byte {at}") from exc


def decode(blob: bytes) -> Any:
    """The JSON value of a whole JSONB blob; :class:`JsonbError` if it is not one."""
    if not blob:
        raise JsonbError("empty blob")
    value, end = _element(blob, 0)
    if end != len(blob):
        raise JsonbError(f"{len(blob) - end} byte(s) after the value")
    return value


def looks_like_jsonb(blob: bytes) -> bool:
    """Whether ``blob`` is well-formed JSONB (else it may be UTF-8 JSON text: ``{"a":1}``
    reads as an ARRAY header whose size does not fit, ``"s"`` as a FALSE with a payload)."""
    try:
        decode(blob)
    except JsonbError:
        return False
    return True
