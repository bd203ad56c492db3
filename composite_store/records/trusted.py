"""Records built from trusted values (rows read back from a store) without validating them.

Every backend writes through validated records, so what it reads back need not be validated
again (DESIGN.md section 8); and every read of a list builds one record per row, which makes
this the hot path of reads. What ``model_construct`` does, minus its generality: for each
model a builder is generated once (as ``dataclasses`` generates ``__init__``) that fills the
missing defaults field by field and sets the instance's four slots directly.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from functools import cache, lru_cache, partial
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = [
    "RowReader",
    "TupleReader",
    "column_view",
    "field_sources",
    "from_row",
    "replaced",
    "row_reader",
    "stored_view",
    "trusted",
    "tuple_reader",
]

R = TypeVar("R", bound=BaseModel)

#: A function building one record from one stored row.
RowReader = Callable[[Mapping[Any, Any]], R]
#: A function building one record from one driver row (values by position).
TupleReader = Callable[[Sequence[Any]], R]

# pydantic's BaseModel keeps an instance in four slots; their descriptors set them past
# BaseModel.__setattr__ (as model_construct does), and cheaper than object.__setattr__.
_SLOTS = {
    name: BaseModel.__dict__[name].__set__
    for name in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
}


def _default_of(model: type[BaseModel], name: str) -> tuple[Any, Callable[[], Any] | None]:
    """How a missing field is filled: (default, None), or (None, factory) where the default
    must be made fresh each time."""
    info = model.model_fields[name]
    if info.default_factory is not None:
        if getattr(info, "default_factory_takes_data", False):
            raise TypeError(f"{model.__name__}.{name}: a default factory taking data")
        factory: Callable[[], Any] = info.default_factory  # type: ignore[assignment]
        return None, factory
    if info.default is PydanticUndefined:
        return None, None  # a required field a trusted row lacks reads as missing
    if isinstance(info.default, (list, dict, set)):
        return None, partial(copy.deepcopy, info.default)
    return info.default, None


def _compile(model: type[BaseModel], name: str, lines: list[str], env: dict[str, Any]) -> Any:
    """Compile ``lines`` (one function ``name``) with the slot setters and ``env`` in scope."""
    namespace: dict[str, Any] = {
        "new": model.__new__,
        "model": model,
        "set_dict": _SLOTS["__dict__"],
        "set_fields_set": _SLOTS["__pydantic_fields_set__"],
        "set_extra": _SLOTS["__pydantic_extra__"],
        "set_private": _SLOTS["__pydantic_private__"],
        **env,
    }
    source = "\n".join(lines)
    exec(compile(source, f"<{name} {model.__qualname__}>", "exec"), namespace)
    return namespace[name]


def _allows_extra(model: type[BaseModel]) -> bool:
    return model.model_config.get("extra") == "allow"


def _slot_lines(model: type[BaseModel], fields_set: str, extra: str) -> list[str]:
    """The body's end: a new instance of ``model`` holding ``values``."""
    return [
        "    obj = new(model)",
        "    set_dict(obj, values)",
        f"    set_fields_set(obj, {fields_set})",
        f"    set_extra(obj, {extra if _allows_extra(model) else 'None'})",
        "    set_private(obj, None)",
        "    return obj",
    ]


def _whole_record_lines(
    model: type[BaseModel],
    sources: tuple[tuple[str, str], ...],
    env: dict[str, Any],
    *,
    shared: bool = False,
) -> list[str]:
    """The body's end for a row holding every field: all of them are in the fields set.

    ``shared``: that set is one per model, shared by every record built there (the readers
    of bulk reads, :func:`tuple_reader`). A set of 7 names costs more memory than the
    record's values (45 MiB over a read of 100k messages), and a set holding every field
    never changes: pydantic only adds an assigned field's name to it, which it holds
    already, and copies it for a copy (``model_copy``, ``copy``; :func:`replaced` too).
    """
    if shared:
        env["all_fields"] = _all_fields(model)
        return _slot_lines(model, "all_fields", "{}")
    fields = ", ".join(repr(attr) for attr, _ in sources)
    return _slot_lines(model, f"{{{fields}}}" if sources else "set()", "{}")


@cache
def _all_fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


@cache
def _builder(model: type[R]) -> Callable[[dict[str, Any], dict[str, Any] | None], R]:
    """``build(values, extra)``: ``model`` from ``values`` by field name, defaults filled."""
    lines = ["def build(values, extra):", "    fields_set = set(values)"]
    env: dict[str, Any] = {}
    for i, name in enumerate(model.model_fields):
        default, factory = _default_of(model, name)
        if factory is not None:
            env[f"factory_{i}"] = factory
            fill = f"factory_{i}()"
        else:
            env[f"default_{i}"] = default
            fill = f"default_{i}"
        lines.append(f"    if {name!r} not in values:")
        lines.append(f"        values[{name!r}] = {fill}")
    lines += _slot_lines(model, "fields_set", "extra or {}")
    build: Callable[[dict[str, Any], dict[str, Any] | None], R] = _compile(
        model, "build", lines, env
    )
    return build


def trusted(model: type[R], values: dict[str, Any], extra: dict[str, Any] | None = None) -> R:
    """Build ``model`` from values that are already valid (read back from a store).

    ``values`` holds field names only (extra fields go in ``extra``); missing fields take
    their defaults (a required one reads as None), and ``values`` becomes the instance's
    ``__dict__``. The fields set are those ``values`` held.
    """
    record: R = _builder(model)(values, extra)
    return record


@cache
def field_sources(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(attribute, stored name) pairs of a record model's fields."""
    return tuple(
        (name, info.serialization_alias or name) for name, info in model.model_fields.items()
    )


def from_row(model: type[R], row: Mapping[Any, Any], **overrides: Any) -> R:
    """Build a record from a stored row (documented names) without re-validating it.

    A row holding every stored name of ``model`` (the usual case: a whole row of its table)
    and no ``overrides`` goes through :func:`row_reader`'s builder; other rows fill what
    they lack with the fields' defaults.
    """
    if not overrides:
        record: R = row_reader(model)(row)
        return record
    return _from_partial_row(model, row, overrides)


def _from_partial_row(model: type[R], row: Mapping[Any, Any], overrides: dict[str, Any]) -> R:
    values = {attr: row[src] for attr, src in field_sources(model) if src in row}
    values.update(overrides)
    return trusted(model, values)


@cache
def row_reader(
    model: type[R], *, absent_is_none: bool = False, **convert: Callable[[Any], Any]
) -> RowReader[R]:
    """A function building ``model`` from a trusted stored row, ``convert`` applied to the
    named attributes' stored values (``content=MessageContent.from_stored``).

    The builder reads each stored name into one dict display (about half the cost of a
    comprehension over the fields). A row lacking a stored name (a document written before
    a field existed, a projection) takes the general path and the fields' defaults; with
    ``absent_is_none`` (stores that leave null fields out, Redis hashes) an absent name
    reads as None instead.
    """
    sources = field_sources(model)
    unknown = set(convert) - {attr for attr, _ in sources}
    if unknown:
        raise TypeError(f"{model.__name__} has no field(s) {sorted(unknown)}")
    env: dict[str, Any] = {f"convert_{attr}": fn for attr, fn in convert.items()}

    def value(attr: str, src: str) -> str:
        if not absent_is_none:
            fetched = f"row[{src!r}]"
            return f"convert_{attr}({fetched})" if attr in convert else fetched
        if attr not in convert:
            return f"row.get({src!r})"
        return f"(None if (v := row.get({src!r})) is None else convert_{attr}(v))"

    def partial_row(row: Mapping[Any, Any]) -> R:
        converted = {
            attr: convert[attr](row[src])
            for attr, src in sources
            if attr in convert and src in row
        }
        return _from_partial_row(model, row, converted)

    values = "{" + ", ".join(f"{attr!r}: {value(attr, src)}" for attr, src in sources) + "}"
    if absent_is_none:
        lines = ["def read(row):", f"    values = {values}"]
    else:
        lines = [
            "def read(row):",
            "    try:",
            f"        values = {values}",
            "    except KeyError:",
            "        return partial_row(row)",
        ]
        env["partial_row"] = partial_row
    lines += _whole_record_lines(model, sources, env)
    read: RowReader[R] = _compile(model, "read", lines, env)
    return read


@cache
def tuple_reader(
    model: type[R],
    columns: tuple[str, ...],
    convert: tuple[tuple[str, Callable[[Any], Any]], ...] = (),
) -> TupleReader[R]:
    """A function building ``model`` from a driver row holding ``columns`` (stored names) in
    that order, each ``convert`` pair (stored name, function) applied to its column's value.

    The row dict :func:`row_reader` reads is skipped: values go from the driver's tuple into
    the record's ``__dict__`` by position. Every field's stored name must be a column. The
    records share one fields set (every field; it never changes, see
    ``_whole_record_lines``): these readers serve reads of many rows.
    """
    position = {name: i for i, name in enumerate(columns)}
    sources = field_sources(model)
    missing = [src for _, src in sources if src not in position]
    if missing:
        raise TypeError(f"{model.__name__}: the row has no column(s) {missing}")
    by_column = dict(convert)
    env: dict[str, Any] = {}
    items = []
    for attr, src in sources:
        fetched = f"row[{position[src]}]"
        if src in by_column:
            env[f"convert_{attr}"] = by_column[src]
            fetched = f"convert_{attr}({fetched})"
        items.append(f"{attr!r}: {fetched}")
    lines = ["def read(row):", "    values = {" + ", ".join(items) + "}"]
    lines += _whole_record_lines(model, sources, env, shared=True)
    read: TupleReader[R] = _compile(model, "read", lines, env)
    return read


def replaced(record: R, **changes: Any) -> R:
    """``record.model_copy(update=changes)`` for changes of fields by attribute name, at half
    the cost: a shallow copy with the changed values and them added to the fields set."""
    clone: R = record.__class__.__new__(record.__class__)
    _SLOTS["__dict__"](clone, {**record.__dict__, **changes})
    _SLOTS["__pydantic_fields_set__"](clone, record.__pydantic_fields_set__ | changes.keys())
    extra = record.__pydantic_extra__
    _SLOTS["__pydantic_extra__"](clone, None if extra is None else dict(extra))
    private = record.__pydantic_private__
    _SLOTS["__pydantic_private__"](clone, None if private is None else dict(private))
    return clone


def column_view(
    model: type[BaseModel], sources: Sequence[tuple[str, str]]
) -> Callable[[BaseModel], dict[str, Any]]:
    """A function giving a ``model`` record's values by column: for each (column, stored
    name) of ``sources``, the value of the field stored under that name, or None where the
    model has none. ``{c: stored_view(r).get(s) for c, s in sources}``, generated once in
    the process for each model and sources (a span is 42 columns: one dict instead of two;
    generating it costs 0.1-0.2 ms, which a new store's first write would otherwise pay)."""
    return _column_view(model, tuple(sources))


@lru_cache(maxsize=1024)
def _column_view(
    model: type[BaseModel], sources: tuple[tuple[str, str], ...]
) -> Callable[[BaseModel], dict[str, Any]]:
    attr_of = {src: attr for attr, src in field_sources(model)}
    items = ", ".join(
        f"{column!r}: " + (f"values[{attr_of[src]!r}]" if src in attr_of else "None")
        for column, src in sources
    )
    lines = [
        "def column_view(record):",
        "    values = record.__dict__",
        f"    return {{{items}}}",
    ]
    view: Callable[[BaseModel], dict[str, Any]] = _compile(model, "column_view", lines, {})
    return view


@cache
def _viewer(model: type[BaseModel]) -> Callable[[BaseModel], dict[str, Any]]:
    return column_view(model, [(src, src) for _, src in field_sources(model)])


def stored_view(record: BaseModel) -> dict[str, Any]:
    """The record's field values under their stored names, as they are in the record: what
    ``model_dump(by_alias=True)`` gives without copying nested values or dumping nested
    models. For encoders that only read the values; extra fields are left out."""
    return _viewer(record.__class__)(record)
