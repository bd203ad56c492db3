"""A blocking facade over the async API, for scripts and notebooks.

One background event loop (a daemon thread) runs every store opened here, so a store stays
bound to one loop as the async API requires. The facade works from plain code and from inside a
running event loop alike (a Jupyter cell, an async framework's sync callback): the caller's
thread waits while the private loop runs the call. Inside a coroutine, prefer the async API,
which does not block the caller's loop.

    from composite_store.sync import open_store
    with open_store("sqlite:///agent.db") as store:
        store.memory.save_thread(thread={"id": "t1", "resource_id": "u1"})

Each domain is typed by its blocking protocol (``composite_store.sync_types``): ``store.memory``
is a ``SyncMemory`` whose ``get_thread_by_id`` returns ``Thread | None``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from composite_store import registry
from composite_store.composite import CompositeStore, DomainSource
from composite_store.errors import CompositeStoreError
from composite_store.store import Store

if TYPE_CHECKING:
    from composite_store.sync_types import (
        SyncDatasets,
        SyncExperiments,
        SyncMemory,
        SyncObservability,
        SyncScores,
        SyncWorkflowDefinitions,
        SyncWorkflows,
    )

__all__ = ["SyncStore", "composite", "open_store", "run"]

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(
                target=_loop.run_forever, name="composite-store-sync", daemon=True
            )
            _thread.start()
        return _loop


def run(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` on the facade's private loop and wait for its result.

    Callable from any thread, also one whose event loop is running (Jupyter): that loop waits
    for the call like any blocking call. Only the private loop itself cannot wait for itself.
    """
    if threading.current_thread() is _thread:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise CompositeStoreError(
            "composite_store.sync was called from its own loop (a callback of a store it "
            "runs), which would wait for itself forever; use the async API there"
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

    # Typed views of the domains (``composite_store.sync_types``); other attributes go through
    # the proxy untyped.
    @property
    def memory(self) -> SyncMemory:
        """Threads, messages and resources."""
        return cast("SyncMemory", _SyncProxy(self.store.memory))

    @property
    def workflows(self) -> SyncWorkflows:
        """Workflow run snapshots."""
        return cast("SyncWorkflows", _SyncProxy(self.store.workflows))

    @property
    def workflow_definitions(self) -> SyncWorkflowDefinitions:
        """Workflow definitions and their numbered versions (beta)."""
        return cast("SyncWorkflowDefinitions", _SyncProxy(self.store.workflow_definitions))

    @property
    def scores(self) -> SyncScores:
        """Scorer results and eval results."""
        return cast("SyncScores", _SyncProxy(self.store.scores))

    @property
    def observability(self) -> SyncObservability:
        """AI spans and traces, and OpenTelemetry spans."""
        return cast("SyncObservability", _SyncProxy(self.store.observability))

    @property
    def datasets(self) -> SyncDatasets:
        """Datasets, their versioned items and their version log."""
        return cast("SyncDatasets", _SyncProxy(self.store.datasets))

    @property
    def experiments(self) -> SyncExperiments:
        """Experiments and their per-item results."""
        return cast("SyncExperiments", _SyncProxy(self.store.experiments))

    def ping(self) -> dict[str, bool]:
        """Whether each domain's backend answers (``Store.ping``)."""
        return run(self.store.ping())

    def describe(self) -> dict[str, str]:
        """The routing table, credentials redacted (``Store.describe``)."""
        return self.store.describe()

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
