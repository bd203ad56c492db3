"""``StatementCache``: the compiled statements of one database, keyed by what defines them."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVarTuple

from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import Executable

from composite_store.sql.engine.prepared import (
    Executor,
    Prepared,
    Streamer,
    driver_chunks,
    driver_cursor,
)

__all__ = ["StatementCache"]

Variant = TypeVarTuple("Variant")

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


class StatementCache:
    """Compiled statements of one database; batch shapes vary, so the cache is bounded.

    ``adapt`` turns the engine's dialect into the one statements are compiled with (a backend
    may prefer another parameter style for its driver); it is called on first use, once the
    engine has connected and its dialect knows the server. ``executor`` runs them; ``streamer``
    runs the reads whose rows are streamed (``Prepared.each``).
    """

    def __init__(
        self,
        dialect: Dialect,
        size: int = 512,
        *,
        adapt: Callable[[Dialect], Dialect] | None = None,
        executor: Executor = driver_cursor,
        streamer: Streamer = driver_chunks,
    ) -> None:
        self._engine_dialect = dialect
        self._adapt = adapt
        self._dialect: Dialect | None = None
        self._executor = executor
        self._streamer = streamer
        self._size = size
        #: (scope, id of the builder's code, variant) -> (that code, its statement); and
        #: ("rows", id of a one-row statement, rows) -> (that statement, its form for so many
        #: rows, or None where it has none).
        self._cache: OrderedDict[Hashable, tuple[object, Prepared | None]] = OrderedDict()
        #: A one-row upsert's statement by its shape (``SqlDomain.upsert``):
        #: bounded by the tables and the column sets written to them, and dropped with the
        #: statements they were derived from.
        self.single_row_plans: dict[Hashable, Prepared] = {}

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
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found[1]  # type: ignore[return-value]  # a builder's entry has its statement
        _check_builder(build)
        if self._dialect is None:
            engine = self._engine_dialect
            self._dialect = self._adapt(engine) if self._adapt is not None else engine
        prepared = Prepared(build(*variant), self._dialect, self._executor, self._streamer)
        self._put(key, code, prepared)
        return prepared

    def rows_of(self, one_row: Prepared, rows: int) -> Prepared | None:
        """``one_row.with_rows(rows)`` (a multi-row INSERT derived from its one-row form),
        derived on first use; None where the statement has no such form."""
        key = ("rows", id(one_row), rows)
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found[1]
        derived = one_row.with_rows(rows)
        self._put(key, one_row, derived)  # the entry keeps one_row alive: its id stays its own
        return derived

    def _put(self, key: Hashable, keep: object, prepared: Prepared | None) -> None:
        self._cache[key] = (keep, prepared)
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
