"""The Redis key layout, derived from the documented schema: every key this adapter touches.

A documented table ``T`` (``mastra_threads``: prefix plus base name) owns the keys that start
with ``T:``:

- records, one hash each: ``T:{<group>}`` or ``T:{<group>}:<rest>``. The hash tag ``{...}`` is
  the record's group (a message's thread, a run's workflow, a span's trace), so a group's
  records and its group-local indexes share one Redis Cluster slot and one script can update
  them together;
- sorted-set indexes: ``T:<index name>:{<first partition value>}[:<more values>]`` (``{*}``
  for an index without partition), and with a TTL their expiry companions
  ``T:<index name>:ttl:{...}`` (member -> expiry instant, purged before every read);
- ``T:catalog``: the layout written by ``init()``, which ``describe_physical`` reads back.

Values inside braces and partition values are percent-escaped (``% : { }``), so a key names
exactly one record or index whatever the ids contain. The trailing ``<rest>`` of a record key
is the raw id, so a script can build the key from an index member without escaping.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from redis.crc import key_slot

from composite_store.errors import ValidationError
from composite_store.schema import (
    DEFAULT_PREFIX,
    ColumnType,
    TableSpec,
    table,
    validate_prefix,
)

__all__ = [
    "GLOBAL_TAG",
    "Keys",
    "SortedIndex",
    "escape",
    "pack",
    "same_slot",
    "sorted_index",
    "unpack",
]

#: The hash tag of an index without partition (one key for the whole table).
GLOBAL_TAG = "*"
#: Index keys ``Keys.index`` keeps once built (all are dropped when full: a cheap bound).
_INDEX_KEYS_KEPT = 4096
_ESCAPES = {"%": "%25", ":": "%3A", "{": "%7B", "}": "%7D"}


_STRUCTURAL = re.compile("[%:{}]")


def escape(value: str) -> str:
    """Percent-escape the characters that structure a key (``% : { }``)."""
    if _STRUCTURAL.search(value) is None:  # the usual id: nothing to escape
        return value
    return _STRUCTURAL.sub(lambda m: _ESCAPES[m.group()], value)


# Index members pack several values with NUL between them. NUL and \x01 inside a value become
# \x01\x01 and \x01\x02: the code keeps byte order (so equal-score ties still sort by the
# values, as Python compares strings) and NUL stays smaller than every packed byte.
_PACK = str.maketrans({"\x00": "\x01\x01", "\x01": "\x01\x02"})
_UNPACK = re.compile("\x01([\x01\x02])")


def pack(*values: str) -> str:
    """One sorted-set member from several values, ordered as the tuple of the values."""
    for value in values:
        if "\x00" in value or "\x01" in value:
            return "\x00".join(v.translate(_PACK) for v in values)
    return "\x00".join(values)  # the usual values: nothing to code


def unpack(member: str) -> list[str]:
    """The values :func:`pack` joined."""
    return [
        _UNPACK.sub(lambda m: "\x00" if m.group(1) == "\x01" else "\x01", part)
        if "\x01" in part
        else part
        for part in member.split("\x00")
    ]


@dataclass(frozen=True)
class SortedIndex:
    """A sorted-set index of one documented table.

    One set per distinct value of ``partition`` (stored column names), ordered by ``order``
    (score: milliseconds; for nanosecond columns, ``lex``: fixed-width members on score 0).
    ``member`` names the columns packed into each member; ties in the order break by them.
    """

    table: str
    name: str
    partition: tuple[str, ...]
    order: str
    member: tuple[str, ...]
    lex: bool = False

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.partition, self.order)


def sorted_index(
    base: str,
    partition: Sequence[str],
    order: str,
    member: Sequence[str],
    *,
    lex: bool = False,
    derived: Sequence[str] = (),
    kind: str = "",
) -> SortedIndex:
    """Declare an index of documented table ``base``; its name is the documented index's name
    when the schema documents one on the same columns, else ``<columns>_idx``.

    Columns are documented ones, top-level keys of documented JSON columns
    (``snapshot.status``), or names in ``derived``: values the domain computes per record (a
    trace's status, an eval's internal row id). ``kind`` prefixes the name of an index that
    holds only some records (``roots``: root spans), so it never shares a key with another.
    """
    spec = table(base)
    columns = (*partition, order)
    for column in columns + tuple(member):
        if column in derived:
            continue
        name, _, key = column.partition(".")
        if spec.column(name).type is not ColumnType.JSON and key:
            raise AssertionError(f"{base}.{name} is not a JSON column: cannot index {column!r}")
    documented = next((i.suffix for i in spec.indexes if i.column_names == columns), None)
    name = documented or "_".join(c.lower().replace(".", "_").lstrip("_") for c in columns) + "_idx"
    if kind:
        name = f"{kind}_{name}"
    return SortedIndex(base, name, tuple(partition), order, tuple(member), lex)


class Keys:
    """Every key of one store, for one prefix (``mastra_`` by default)."""

    def __init__(self, prefix: str = DEFAULT_PREFIX) -> None:
        if not isinstance(prefix, str):
            raise ValidationError(f"invalid key prefix {prefix!r}: expected a string")
        self.prefix = validate_prefix(prefix)
        self._tables: dict[str, str] = {}
        self._index_keys: dict[tuple[object, ...], str] = {}

    def table(self, base: str) -> str:
        """The physical name of documented table ``base`` (``mastra_threads``)."""
        found = self._tables.get(base)
        if found is None:  # every key names its table: look each up once
            found = self._tables[base] = table(base).name(self.prefix)
        return found

    def spec(self, base: str) -> TableSpec:
        return table(base)

    def record(self, base: str, group: str, rest: str | None = None) -> str:
        """The hash holding one record: ``T:{group}`` or ``T:{group}:rest``."""
        key = f"{self.table(base)}:{{{escape(group)}}}"
        return key if rest is None else f"{key}:{rest}"

    def record_prefix(self, base: str, group: str) -> str:
        """What precedes the raw ``rest`` in the record keys of ``group``."""
        return f"{self.table(base)}:{{{escape(group)}}}:"

    def index(self, index: SortedIndex, values: Sequence[str], *, ttl: bool = False) -> str:
        """The sorted set of ``index`` for partition ``values`` (or its expiry companion)."""
        # A write names the same sets again and again (a trace's spans, a thread's messages,
        # the whole-table sets): built keys are kept, a bounded number of them.
        cache_key = (index.table, index.name, ttl, *values)
        found = self._index_keys.get(cache_key)
        if found is not None:
            return found
        if len(values) != len(index.partition):
            raise AssertionError(f"{index.name}: expected {len(index.partition)} partition values")
        tag = escape(values[0]) if values else GLOBAL_TAG
        rest = "".join(":" + escape(v) for v in values[1:])
        kind = f"{index.name}:ttl" if ttl else index.name
        key = f"{self.table(index.table)}:{kind}:{{{tag}}}{rest}"
        if len(self._index_keys) >= _INDEX_KEYS_KEPT:
            self._index_keys.clear()
        self._index_keys[cache_key] = key
        return key

    def pointer(self, base: str, name: str, value: str) -> str:
        """A lookup key (``T:<name>:{value}``): which group holds the record ``value``."""
        return f"{self.table(base)}:{name}:{{{escape(value)}}}"

    def scratch(self, base: str, tag: str) -> str:
        """A key a script fills and deletes within one call, on the slot of hash tag ``tag``."""
        return f"{self.table(base)}:scratch:{{{escape(tag)}}}"

    def catalog(self, base: str) -> str:
        """The hash where ``init()`` records the layout of documented table ``base``."""
        return f"{self.table(base)}:catalog"

    def pattern(self, base: str) -> str:
        """A SCAN pattern matching every key of table ``base`` (catalog included)."""
        return f"{self.table(base)}:*"


def same_slot(keys: Sequence[str]) -> bool:
    """Whether every key maps to one Redis Cluster slot."""
    return len({key_slot(k.encode()) for k in keys}) <= 1
