"""A blocking facade over the async API, for scripts and notebooks.

One background event loop (a daemon thread) runs every store opened here, so a store stays
bound to one loop as the async API requires. Calling it from inside a running event loop would
block that loop, so it raises and names the fix.

    from composite_store.sync import open_store
    with open_store("sqlite:///agent.db") as store:
        store.memory.save_thread(thread={"id": "t1", "resource_id": "u1"})
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Self, TypeVar

from composite_store import registry
from composite_store.composite import CompositeStore, DomainSource
from composite_store.errors import CompositeStoreError
from composite_store.store import Store

__all__ = ["SyncStore", "composite", "open_store", "run"]

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(
                target=_loop.run_forever, name="composite-store-sync", daemon=True
            ).start()
        return _loop


def run(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` on the background loop and wait for its result."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise CompositeStoreError(
            "composite_store.sync was called from inside a running event loop, which it would "
            "block; use the async API there (await store.memory....)"
        )

    async def wrapped() -> T:
        return await awaitable

    return asyncio.run_coroutine_threadsafe(wrapped(), _background_loop()).result()


class _SyncProxy:
    """Blocking view of an async object: coroutine methods become plain calls."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.iscoroutinefunction(value):
            method: Callable[..., Awaitable[Any]] = value

            @functools.wraps(method)
            def call(*args: Any, **kwargs: Any) -> Any:
                return run(method(*args, **kwargs))

            return call
        if hasattr(value, "domain") and hasattr(value, "capabilities"):
            return _SyncProxy(value)
        return value

    def __repr__(self) -> str:
        return f"<sync {self._target!r}>"


class SyncStore(_SyncProxy):
    """A store whose methods block; a context manager that initializes and closes it."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.store = store

    def __enter__(self) -> Self:
        run(self.store.init())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run(self.store.close())


def open_store(url: str, **options: Any) -> SyncStore:
    """Open a store by URL for blocking use (see ``composite_store.open_store``)."""
    return SyncStore(registry.open_store(url, **options))


def composite(
    default: Store | str | None = None,
    domains: Mapping[str, DomainSource] | None = None,
    **options: Any,
) -> SyncStore:
    """Build a ``CompositeStore`` for blocking use."""
    return SyncStore(CompositeStore(default, domains, **options))
