"""``StatementCache``: the compiled statements of one database, bounded."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from sqlalchemy.engine import Dialect
from sqlalchemy.sql.expression import Executable

from composite_store.sql.engine.prepared import Executor, Prepared, driver_cursor

__all__ = ["StatementCache"]


class StatementCache:
    """Compiled statements of one database, by key; batch shapes vary, so the cache is bounded.

    ``adapt`` turns the engine's dialect into the one statements are compiled with (a backend
    may prefer another parameter style for its driver); it is called on first use, once the
    engine has connected and its dialect knows the server. ``executor`` runs them.
    """

    def __init__(
        self,
        dialect: Dialect,
        size: int = 512,
        *,
        adapt: Callable[[Dialect], Dialect] | None = None,
        executor: Executor = driver_cursor,
    ) -> None:
        self._engine_dialect = dialect
        self._adapt = adapt
        self._dialect: Dialect | None = None
        self._executor = executor
        self._size = size
        self._cache: OrderedDict[Hashable, Prepared] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], Executable]) -> Prepared:
        """The compiled statement for ``key``, building and compiling it on first use."""
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        if self._dialect is None:
            engine = self._engine_dialect
            self._dialect = self._adapt(engine) if self._adapt is not None else engine
        prepared = Prepared(build(), self._dialect, self._executor)
        self._cache[key] = prepared
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return prepared
