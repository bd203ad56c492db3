"""``StatementCache``: the compiled statements of one database, keyed by what defines them,
shared by the databases of one layout in the process."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, TypeVarTuple

from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import Executable
from sqlalchemy.util import memoized_property

from composite_store.sql.engine.prepared import (
    Executor,
    Prepared,
    Streamer,
    driver_chunks,
    driver_cursor,
)

__all__ = ["Recent", "StatementCache", "settings_of"]

Variant = TypeVarTuple("Variant")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
#: A cache entry: (what it keeps alive, so that the id in its key stays its own; the statement,
#: or None where a one-row statement has no form for so many rows).
_Entry = tuple[object, Prepared | None]


class Recent(OrderedDict[K, V]):
    """A mapping of at most ``size`` entries: the least recently used goes first."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def used(self, key: K) -> V | None:
        """The value of ``key``, now the most recently used; None if absent."""
        found = self.get(key)
        if found is not None:
            self.move_to_end(key)
        return found

    def keep(self, key: K, value: V) -> V:
        """Store ``value`` under ``key``, dropping the least recently used beyond ``size``."""
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)
        return value

#: Names a statement builder may close over: the domain it belongs to (whose tables and
#: dialect are the cache's own) and the class ``super()`` needs.
_ALLOWED_FREE = frozenset({"self", "__class__"})


def _check_builder(build: Callable[..., Executable]) -> None:
    """Refuse a builder whose statement could depend on more than its key."""
    function: Any = getattr(build, "__func__", build)
    free = sorted(set(function.__code__.co_freevars) - _ALLOWED_FREE)
    if free or function.__defaults__ or function.__kwdefaults__:
        what = f"closes over {', '.join(free)}" if free else "has default arguments"
        raise TypeError(
            f"statement builder {function.__qualname__} {what}: pass everything that shapes "
            "its statement as arguments (they are part of its cache key)"
        )


#: Attributes of SQLAlchemy's dialects left out of ``settings_of`` besides its memoized
#: properties (``_memoized``: type memos, reflection queries, the loaded driver module):
#: caches SQLAlchemy fills by other means (reflection queries, a memoized method, an OID
#: looked up) and objects derived from the dialect's class and other settings (its
#: identifier preparer and type compiler, the driver module's adapter and type map).
_DERIVED = frozenset(
    {
        "_constraint_query",
        "_gen_allowed_isolation_levels",
        "_index_query",
        "_pg_am_btree_oid",
        "_psycopg_adapters_map",
        "dbapi",
        "identifier_preparer",
        "type_compiler",
        "type_compiler_instance",
    }
)


def settings_of(obj: object) -> Hashable:
    """``obj``'s class and instance attributes, as a key: equal for two dialects only when
    everything that could shape what they compile is equal (the server's version, the
    parameter style, a JSON serializer given to ``create_engine``...).

    Values compare by value (numbers, strings, tuples, classes, modules, functions by
    identity; dicts and lists by their items). An object that compares by identity (an
    unknown attribute holding a fresh instance) keeps two dialects apart: unknown state never
    lets two databases share statements, at worst each compiles its own.
    """
    cls = type(obj)
    return (cls, tuple((name, _value_key(value)) for name, value in sorted(vars(obj).items())
                       if name not in _DERIVED and not _memoized(cls, name)))


def _memoized(cls: type, name: str) -> bool:
    """Whether ``name`` is a memoized property of ``cls``: a value SQLAlchemy derives from
    the object's other state on first use (``_bind_typing_render_casts`` from ``bind_typing``),
    so present or not depending on what was compiled before, never a setting of its own."""
    return isinstance(getattr(cls, name, None), memoized_property)


def _value_key(value: object) -> Hashable:
    if isinstance(value, dict):
        return (dict, frozenset((k, _value_key(v)) for k, v in value.items()))
    if isinstance(value, (list, set)):
        return (type(value), tuple(_value_key(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return object()  # unknown and unhashable: equal to nothing
    return value  # hashable, checked


#: Statements compiled in this process, shared by the databases of one layout: by layout (and
#: compiling dialect's settings), then by the database's own key.
#: Layouts whose statements are kept, the most recently used. A statement holds the tables of
#: the database that compiled it (about 1 MB of SQLAlchemy metadata a layout, kept after that
#: store closed), so a process opening a store per tenant, each with a prefix of its own,
#: keeps the statements of its recent tenants only.
_SHARED_LAYOUTS = 8
#: Statements kept per layout, as many as one database keeps.
_SHARED_SIZE = 512
_shared: Recent[Hashable, Recent[Hashable, _Entry]] = Recent(_SHARED_LAYOUTS)
#: Guards ``_shared``: stores on several threads (each its own event loop) miss at once.
_shared_lock = threading.Lock()


class StatementCache:
    """Compiled statements of one database; batch shapes vary, so the cache is bounded.

    ``adapt`` turns the engine's dialect into the one statements are compiled with (a backend
    may prefer another parameter style for its driver); it is called on first use, once the
    engine has connected and its dialect knows the server. ``executor`` runs them; ``streamer``
    runs the reads whose rows are streamed (``Prepared.each``).

    ``layout`` returns what, besides the compiling dialect, shapes this database's statements
    (``SqlDatabase.layout``: its backend's settings, table prefix and schema); it is called
    with ``adapt``. Databases of one layout whose compiling dialects have equal
    ``settings_of`` share their statements: a store opened after another of the same kind
    (a store per request, per tenant, per test) runs its first calls at the speed of its
    later ones, not after compiling each statement (about 1 ms an upsert). The executor and
    streamer of a shared statement are its first database's; a backend's are functions of
    the connection they are given (``SqlDialect.execute_prepared``), kept apart by the
    layout where they are not. Without ``layout`` nothing is shared.
    """

    def __init__(
        self,
        dialect: Dialect,
        size: int = 512,
        *,
        adapt: Callable[[Dialect], Dialect] | None = None,
        executor: Executor = driver_cursor,
        streamer: Streamer = driver_chunks,
        layout: Callable[[], Hashable] | None = None,
    ) -> None:
        self._engine_dialect = dialect
        self._adapt = adapt
        self._layout = layout
        self._dialect: Dialect | None = None
        #: This database's part of the shared cache's keys, once compiled for (None: nothing
        #: shared).
        self._shared_as: Hashable = None
        self._executor = executor
        self._streamer = streamer
        #: (scope, id of the builder's code, variant) -> (that code, its statement); and
        #: ("rows", id of a one-row statement, rows) -> (that statement, its form for so many
        #: rows, or None where it has none).
        self._cache: Recent[Hashable, _Entry] = Recent(size)
        #: Statements of the most frequent calls by their caller's shape, found with one
        #: lookup rather than a builder made and its key derived (half a microsecond of a
        #: point read's few): a one-row upsert's (``SqlDomain.upsert``) and a point read's
        #: (``SqlDomain.select_by``). Bounded by the tables and the column sets, and dropped
        #: with the statements they were derived from.
        self.by_shape: dict[Hashable, Prepared] = {}

    def __len__(self) -> int:
        return len(self._cache)

    def get(
        self,
        build: Callable[[*Variant], Executable],
        *variant: *Variant,
        scope: Hashable = None,
    ) -> Prepared:
        """The statement ``build(*variant)`` compiled, built and compiled on first use.

        Its key is derived from what defines it, not named by the caller: ``build``'s code
        (one per ``def`` in the source, however often the enclosing method runs, so two
        builders never share a key), ``variant`` (hashable values: a count of binds, which
        filters apply, a direction) and ``scope``, which separates callers whose builders
        share code but not behaviour (``SqlDomain`` passes its class). ``build`` may close
        over ``self`` only and has no defaults (checked on first use), so nothing outside the
        key changes the statement it builds.
        """
        code = build.__code__
        # The code by identity: hashing a code object hashes its constants and names on every
        # call. The entry keeps the code alive, so its id cannot be reused while cached.
        key = (scope, id(code), variant)
        found = self._cache.used(key)
        if found is not None:
            return found[1]  # type: ignore[return-value]  # a builder's entry has its statement
        _check_builder(build)
        dialect = self._dialect or self._compiling_dialect()
        shared = self._shared_get(key)
        if shared is not None:
            self._put(key, code, shared[1])
            return shared[1]  # type: ignore[return-value]  # a builder's entry has its statement
        prepared = Prepared(build(*variant), dialect, self._executor, self._streamer)
        self._put(key, code, prepared)
        self._shared_put(key, code, prepared)
        return prepared

    def rows_of(self, one_row: Prepared, rows: int) -> Prepared | None:
        """``one_row.with_rows(rows)`` (a multi-row INSERT derived from its one-row form),
        derived on first use; None where the statement has no such form."""
        key = ("rows", id(one_row), rows)
        found = self._cache.used(key)
        if found is not None:
            return found[1]
        shared = self._shared_get(key)
        if shared is not None:
            self._put(key, one_row, shared[1])
            return shared[1]
        derived = one_row.with_rows(rows)
        self._put(key, one_row, derived)  # the entry keeps one_row alive: its id stays its own
        self._shared_put(key, one_row, derived)
        return derived

    def _compiling_dialect(self) -> Dialect:
        """The dialect statements are compiled with, and this database's shared key; fixed on
        the first statement compiled."""
        engine = self._engine_dialect
        dialect = self._dialect = self._adapt(engine) if self._adapt is not None else engine
        if self._layout is not None:
            self._shared_as = (self._layout(), settings_of(dialect))
        return dialect

    def _shared_get(self, key: Hashable) -> _Entry | None:
        """The shared entry of this database's ``key``."""
        if self._shared_as is None:
            return None
        with _shared_lock:
            entries = _shared.used(self._shared_as)
            return None if entries is None else entries.used(key)

    def _shared_put(self, key: Hashable, keep: object, prepared: Prepared | None) -> None:
        if self._shared_as is None:
            return
        with _shared_lock:
            entries = _shared.used(self._shared_as)
            if entries is None:
                entries = _shared.keep(self._shared_as, Recent(_SHARED_SIZE))
            entries.keep(key, (keep, prepared))

    def _put(self, key: Hashable, keep: object, prepared: Prepared | None) -> None:
        self._cache.keep(key, (keep, prepared))
