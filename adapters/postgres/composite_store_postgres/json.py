"""JSON on PostgreSQL: ``JSONB`` columns written as objects, and the text PostgreSQL refuses.

PostgreSQL cannot store U+0000 in ``TEXT`` or ``JSONB`` (the ``\\u0000`` escape included), and
UTF-8 cannot encode a lone surrogate. Both are refused here with a ``ValidationError`` while
the statement binds its values, before anything is sent, so a batch holding one is never
half-written (the operation's transaction rolls back).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from composite_store.errors import ValidationError
from composite_store.sql.types import dumps

__all__ = [
    "Jsonb",
    "PgText",
    "check_json_text",
    "check_text",
    "checked_text",
    "fixed_point_floats",
]

#: A raw NUL, or a lone surrogate (a valid pair is one code point in a Python str).
_UNSTORABLE_TEXT = re.compile("[\x00\ud800-\udfff]")
#: The same in compact JSON text: NUL is always escaped as ``\\u0000`` (unless the backslash
#: is itself escaped), a surrogate stays raw because ``dumps`` keeps non-ASCII as is.
_UNSTORABLE_JSON = re.compile(r"[\ud800-\udfff]|(?<!\\)(?:\\\\)*\\u0000")
#: Lone surrogates alone (a plain character class: fast on long text).
_SURROGATE = re.compile("[\ud800-\udfff]")


#: A number in exponent form as ``dumps`` writes it (Python's float repr: a lowercase ``e``
#: and a sign, ``1e+16``, ``1.5e-05``), wherever it stands: a cheap first test (strings may
#: match too). Led by a literal, so the scan is a fast substring search: 2 us on 5 KB, against
#: 23 us for a pattern led by a digit class.
_EXPONENT_HINT = re.compile(r"e[-+][0-9]")
#: JSON string literals (skipped) or numbers in exponent form (rewritten), in one scan.
_STRING_OR_EXPONENT = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?[eE][-+]?[0-9]+')


def fixed_point_floats(text: str) -> str:
    """``text`` (compact JSON as ``dumps`` writes it) with every number in exponent form
    written out in fixed point with a decimal point (``-5.615791332240261e+16`` ->
    ``-56157913322402610.0``).

    JSONB stores numbers as ``numeric``, which forgets the exponent: ``1.5e16`` comes back as
    the integer ``15000000000000000``, a float turned int. With a decimal point ``numeric``
    keeps a scale, reads back with it, and parses to the same float (the digits are the
    float's shortest repr, so the decimal value is unchanged).
    """
    if _EXPONENT_HINT.search(text) is None:
        return text

    def fixed(found: re.Match[str]) -> str:
        token = found.group()
        if token.startswith('"'):
            return token
        plain = format(Decimal(token), "f")
        return plain if "." in plain else plain + ".0"

    return _STRING_OR_EXPONENT.sub(fixed, text)


def _refuse(found: str, where: str) -> ValidationError:
    if found == "\x00" or found.endswith("\\u0000"):
        return ValidationError(
            f"{where} contains the NUL character U+0000, which PostgreSQL cannot store: "
            "remove it (or replace it, e.g. with U+FFFD) before saving"
        )
    return ValidationError(
        f"{where} contains a lone surrogate U+{ord(found):04X}, which is not valid Unicode "
        "and cannot be encoded as UTF-8: decode the source text with errors='replace'"
    )


def check_text(value: str) -> str:
    """Return ``value`` if PostgreSQL can store it as ``TEXT``, else raise ``ValidationError``."""
    # Substring and ASCII tests first: they are an order of magnitude faster than the scan.
    if "\x00" not in value and (value.isascii() or _SURROGATE.search(value) is None):
        return value
    found = _UNSTORABLE_TEXT.search(value)
    if found is not None:
        raise _refuse(found.group(), "a text value")
    return value


def check_json_text(text: str) -> str:
    """Return compact JSON ``text`` if PostgreSQL can store it as ``JSONB``, else raise
    ``ValidationError``."""
    # The lookbehind scan is slow on long text: run it only when a substring test finds a
    # candidate (an escaped backslash before "u0000" is not a NUL).
    if "\\u0000" not in text and (text.isascii() or _SURROGATE.search(text) is None):
        return text
    found = _UNSTORABLE_JSON.search(text)
    if found is not None:
        raise _refuse(found.group(), "a JSON value")
    return text


class PgText(TypeDecorator[str]):
    """``TEXT`` that refuses what PostgreSQL cannot store with a clear ``ValidationError``."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else check_text(value)

    def bind_processor(self, dialect: Dialect) -> Any:
        # The check itself, without TypeDecorator's wrapping calls: a bulk import runs it on
        # every text value of every row (psycopg's TEXT has no conversion to chain).
        if self.impl_instance.dialect_impl(dialect).bind_processor(dialect):
            return super().bind_processor(dialect)
        return checked_text


def checked_text(value: Any) -> str | None:
    """``PgText``'s bind processor: ``check_text`` of a value that is not None."""
    return None if value is None else check_text(value)


class Jsonb(TypeDecorator[Any]):
    """``JSONB`` holding objects as Mastra writes them.

    Values are serialised here once (compact, no NaN, checked) and cast to ``JSONB`` by the
    statement, whatever serializer the engine was configured with. psycopg parses ``JSONB``
    on read; a value that is a JSON string holding JSON text (Mastra writes resource metadata
    that way) is parsed once more. SQL ``NULL`` stands for a missing value.
    """

    impl = postgresql.JSONB
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Any:
        def process(value: Any) -> str | None:
            if value is None:
                return None
            try:
                text = dumps(value)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"value cannot be stored as JSON: {exc}") from None
            return check_json_text(fixed_point_floats(text))

        return process

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        def process(value: Any) -> Any:
            if isinstance(value, str) and value[:1] in ("{", "["):
                try:
                    return json.loads(value)
                except ValueError:
                    return value
            return value

        return process
