"""Oracle statements SQLAlchemy has no construct for: ``MERGE`` upserts and SQL/JSON conditions.

Each is a small SQLAlchemy element compiled by ``@compiles`` for the ``oracle`` dialect only,
so every value stays a bound parameter and statements are cached like any other. The one
thing that travels into the SQL text is a JSON path naming a top-level key, because Oracle
accepts only literal paths; keys are validated (letters, digits, ``_``, ``-``) before that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement, ColumnElement
from sqlalchemy.sql.expression import Executable
from sqlalchemy.sql.visitors import InternalTraversal

from composite_store.errors import ValidationError

__all__ = [
    "JsonArrayContains",
    "JsonEqual",
    "JsonSerialize",
    "JsonValue",
    "Merge",
    "key_path",
    "merge",
]

_SAFE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def key_path(key: str) -> str:
    """The SQL/JSON path of top-level ``key``, as a SQL string literal: ``'$."key"'``.

    Oracle refuses bind variables as paths (ORA-40454), so the key is checked again here,
    whatever the caller validated: nothing but letters, digits, ``_`` and ``-`` reaches SQL.
    """
    if not isinstance(key, str) or not _SAFE_KEY.fullmatch(key):
        raise ValidationError(
            f"invalid JSON key {key!r}: use letters, digits, '_' and '-' only"
        )
    return f"'$.\"{key}\"'"


# -- MERGE ---------------------------------------------------------------------------------------


class Merge(Executable, ClauseElement):
    """``MERGE INTO table USING (source) ON (key) WHEN MATCHED THEN UPDATE ... WHEN NOT MATCHED
    THEN INSERT ...``: Oracle's upsert.

    ``source`` is a SELECT (one row per ``UNION ALL`` branch, ``FROM DUAL``) whose columns are
    labelled with the target's column names. Rows whose ``key`` exists get the ``update``
    columns replaced (with no ``update`` columns they are left alone); other rows are inserted
    with every ``columns`` value.
    """

    inherit_cache = True
    _traverse_internals = [
        ("table", InternalTraversal.dp_clauseelement),
        ("source", InternalTraversal.dp_clauseelement),
        ("key", InternalTraversal.dp_string_list),
        ("update", InternalTraversal.dp_string_list),
        ("columns", InternalTraversal.dp_string_list),
    ]

    def __init__(
        self,
        table: sa.Table,
        source: sa.Select[Any] | sa.CompoundSelect[Any],
        key: Sequence[str],
        update: Sequence[str],
        columns: Sequence[str],
    ) -> None:
        self.table = table
        self.source = source
        self.key = list(key)
        # A column of the ON clause cannot be updated (ORA-38104).
        self.update = [c for c in update if c not in self.key]
        self.columns = list(columns)


@compiles(Merge, "oracle")
def _compile_merge(element: Merge, compiler: SQLCompiler, **kw: Any) -> str:
    quote = compiler.preparer.quote
    target = compiler.preparer.format_table(element.table)
    source = compiler.process(element.source, **kw)
    on = " AND ".join(f"tgt.{quote(c)} = src.{quote(c)}" for c in element.key)
    sql = f"MERGE INTO {target} tgt USING ({source}) src ON ({on})"
    if element.update:
        sets = ", ".join(f"tgt.{quote(c)} = src.{quote(c)}" for c in element.update)
        sql += f" WHEN MATCHED THEN UPDATE SET {sets}"
    names = ", ".join(quote(c) for c in element.columns)
    values = ", ".join(f"src.{quote(c)}" for c in element.columns)
    return f"{sql} WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})"


def merge(
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    key: Sequence[str],
    update: Sequence[str],
    *,
    lob_columns: frozenset[str],
    cast_columns: frozenset[str],
) -> Merge:
    """A :class:`Merge` of ``rows`` into ``table``.

    A row value is either a bind parameter (prepared statements bind values later) or a
    plain value, bound here with the column's type. Every ``UNION ALL`` branch must give each
    column the same type, whatever the driver makes of the values (a NULL binds as a
    ``VARCHAR2``, a long string as a temporary LOB), so values of ``lob_columns`` are wrapped
    in ``TO_CLOB`` and values of ``cast_columns`` in ``CAST(... AS <column type>)``.
    """
    if not rows:
        raise ValueError("merge() needs at least one row")
    columns = list(rows[0])
    branches = []
    for row in rows:
        exprs: list[ColumnElement[Any]] = []
        for name in columns:
            column = table.c[name]
            value = row[name]
            bound: ColumnElement[Any] = (
                value if isinstance(value, ColumnElement) else sa.literal(value, column.type)
            )
            if name in lob_columns:
                bound = sa.func.to_clob(bound, type_=column.type)
            elif name in cast_columns:
                bound = sa.cast(bound, column.type)
            exprs.append(bound.label(name))
        branches.append(sa.select(*exprs))
    source = branches[0] if len(branches) == 1 else sa.union_all(*branches)
    return Merge(table, source, key, update, columns)


# -- SQL/JSON --------------------------------------------------------------------------------


class JsonValue(sa.sql.functions.GenericFunction[str]):
    """``JSON_VALUE(doc, '$."key"')``: the scalar at top-level ``key`` as text (NULL when it
    is missing or not a scalar)."""

    type = sa.String()
    inherit_cache = True
    name = "json_value"

    def __init__(self, document: ColumnElement[Any], key: str) -> None:
        super().__init__(document, sa.literal_column(key_path(key)))


class JsonEqual(sa.sql.functions.GenericFunction[bool]):
    """Whether top-level ``key`` of ``doc`` equals the JSON value whose text is bound in
    ``value_json``, compared as JSON (``1`` is not ``"1"``, ``2`` is ``2.0``).

    ``JSON_EQUAL(JSON_QUERY(doc, '$."key"' WITH WRAPPER), '[' || :value || ']')``: the
    wrapper makes scalars, objects and arrays all comparable; a missing key gives NULL, which
    matches nothing.
    """

    type = sa.Boolean()
    inherit_cache = True
    name = "json_equal"
    # A condition, not a value: SQLAlchemy must not compare it with 1 where the server has
    # no BOOLEAN (Oracle before 23ai), and negates it with NOT.
    _is_implicitly_boolean = True

    def __init__(self, document: ColumnElement[Any], key: str, value_json: Any) -> None:
        # The value's text is bound as a plain VARCHAR2: JSON_EQUAL parses it.
        value = sa.type_coerce(value_json, sa.String())
        super().__init__(document, sa.literal_column(key_path(key)), value)


@compiles(JsonEqual, "oracle")
def _compile_json_equal(element: JsonEqual, compiler: SQLCompiler, **kw: Any) -> str:
    document, path, value = (compiler.process(c, **kw) for c in element.clauses)
    return f"JSON_EQUAL(JSON_QUERY({document}, {path} WITH WRAPPER), '[' || {value} || ']')"


class JsonArrayContains(sa.sql.functions.GenericFunction[bool]):
    """Whether the JSON array ``doc`` holds the string bound in ``value``:
    ``JSON_EXISTS(doc, '$[*]?(@ == $v)' PASSING :value AS "v")``."""

    type = sa.Boolean()
    inherit_cache = True
    name = "json_array_contains"
    _is_implicitly_boolean = True  # a condition (see JsonEqual)

    def __init__(self, document: ColumnElement[Any], value: Any) -> None:
        bound = value if isinstance(value, ColumnElement) else sa.literal(value, sa.String())
        super().__init__(document, bound)


@compiles(JsonArrayContains, "oracle")
def _compile_json_array_contains(
    element: JsonArrayContains, compiler: SQLCompiler, **kw: Any
) -> str:
    document, value = (compiler.process(c, **kw) for c in element.clauses)
    return f"JSON_EXISTS({document}, '$[*]?(@ == $v)' PASSING {value} AS \"v\")"


class JsonSerialize(sa.sql.functions.GenericFunction[str]):
    """``JSON_SERIALIZE(doc RETURNING CLOB)``: a native ``JSON`` value as text."""

    inherit_cache = True
    name = "json_serialize"


@compiles(JsonSerialize, "oracle")
def _compile_json_serialize(element: JsonSerialize, compiler: SQLCompiler, **kw: Any) -> str:
    (document,) = (compiler.process(c, **kw) for c in element.clauses)
    return f"JSON_SERIALIZE({document} RETURNING CLOB)"

