"""The domain base class: lifecycle, event-loop binding and capabilities.

The optional hooks of the admin tools (copy, migrate, inspect) are mixins in
``composite_store.domains.hooks``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import ClassVar

from composite_store.errors import CompositeStoreError, redact

__all__ = [
    "Capabilities",
    "Domain",
]


@dataclass(frozen=True)
class Capabilities:
    """What a domain implementation guarantees; every flag defaults to off (conservative)."""

    atomic_batches: bool = False
    """A ``save_messages`` (or any batch) call is all or nothing."""

    concurrent_updates: bool = False
    """Workflow step/state updates are atomic read-modify-writes under concurrent writers."""

    compare_and_set: bool = False
    """``expected_working_memory`` writes only if the stored value still equals it."""

    transactions: bool = False
    """Multi-record operations run in one transaction."""

    sort_threads: bool = False
    """``list_threads`` orders by ``createdAt`` or ``updatedAt``, either direction."""

    metadata_filters: bool = False
    """``list_threads(filter={"metadata": ...})`` is served (by an index or a bounded query)."""

    list_scores_by_span: bool = False
    """``list_scores_by_span`` is served from an index."""

    span_attribute_filters: bool = False
    """``list_traces`` filters on span attributes and metadata."""

    reasons: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Why a flag is off, by flag name (shown by the conformance suite and ``check``). A flag a
    domain's rules depend on may be off only with a reason."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.reasons) - set(self.names()))
        if unknown:
            raise ValueError(
                f"reasons given for unknown capabilities {unknown}; known: {list(self.names())}"
            )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every capability flag, in declaration order."""
        return tuple(f.name for f in fields(cls) if f.name != "reasons")

    def enabled(self) -> tuple[str, ...]:
        """Names of the capabilities that are on."""
        return tuple(name for name in self.names() if getattr(self, name))

    def reason(self, name: str) -> str | None:
        """Why flag ``name`` is off (None when it is on or no reason was given)."""
        if getattr(self, name):
            return None
        return self.reasons.get(name) or None


class Domain(ABC):
    """One storage domain served by one backend.

    Public methods are the contract; subclasses implement the abstract hooks (``_init``,
    ``_clear`` and the domain's own). ``init()`` binds the domain to the running event loop;
    every later call must come from that loop.
    """

    #: The domain key (``memory``, ``workflows``, ...).
    domain: ClassVar[str]
    #: The backend family (``sqlite``, ``postgresql``, ``memory``, ...).
    backend: ClassVar[str] = "unknown"
    capabilities: ClassVar[Capabilities] = Capabilities()
    #: The most values one statement or command of this domain carries, by kind (``ids`` in
    #: one ``IN`` list, ``rows`` in one upsert): longer calls are split in chunks. Declared so
    #: that the conformance suite sizes its batches past every chunk boundary.
    batch_limits: ClassVar[Mapping[str, int]] = {}

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = False
        #: Ready through ``attach()`` only: a later ``init()`` still creates and checks.
        self._attached = False

    # -- lifecycle -----------------------------------------------------------------------------

    async def init(self) -> None:
        """Create what the domain needs (tables, indexes); idempotent, safe to call twice."""
        if self._ready:
            self._check()
            if not self._attached:
                return
        self._loop = asyncio.get_running_loop()
        await self._init()
        self._ready, self._attached = True, False
        try:
            await self._settle()
        except BaseException:
            self._ready = False
            raise

    async def attach(self) -> None:
        """Bind to the running event loop and connect, creating nothing.

        For tools that must see a database as it is (``composite-store inspect``): every
        method then works on the tables that exist, and nothing is created, checked or
        recorded. Use ``init()`` to serve an application.
        """
        if self._ready:
            self._check()
            return
        self._loop = asyncio.get_running_loop()
        await self._open()
        self._ready, self._attached = True, True

    async def close(self) -> None:
        """Release what this domain opened itself; resources passed in stay open."""
        await self._close()
        self._ready = self._attached = False
        self._loop = None

    async def dangerously_clear_all(self) -> None:
        """Delete every record of this domain (tables stay). For tests and resets."""
        self._check()
        await self._clear()

    async def ping(self) -> bool:
        """Return whether the backend answers."""
        return await self.unreachable_reason() is None

    async def unreachable_reason(self) -> str | None:
        """None when the backend answers, else why it does not (the error, redacted): a
        refused connection, an unknown user, a missing database."""
        try:
            await self._ping()
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            return redact(str(exc)) or type(exc).__name__
        return None

    def describe(self) -> str:
        """A one-line description of the backend serving this domain, credentials redacted."""
        return self.backend

    # -- hooks -----------------------------------------------------------------------------------

    @abstractmethod
    async def _init(self) -> None:
        """Create tables/indexes; called once per ``init()``."""

    @abstractmethod
    async def _clear(self) -> None:
        """Delete every record of the domain."""

    async def _open(self) -> None:  # noqa: B027 - optional hook
        """Connect without creating anything (``attach``); the default has nothing to open."""

    async def _close(self) -> None:  # noqa: B027 - optional hook
        """Release owned resources."""

    async def _ping(self) -> None:  # noqa: B027 - optional hook
        """Raise if the backend does not answer."""

    async def _settle(self) -> None:  # noqa: B027 - optional hook
        """Check or record the schema version once the tables exist; never alters a current
        database (``Migratable`` does, through ``composite_store.domains.hooks.settle``)."""

    # -- helpers ---------------------------------------------------------------------------------

    def _check(self) -> None:
        """Refuse calls before ``init()`` and from an event loop other than ``init()``'s."""
        if not self._ready:
            raise CompositeStoreError(
                f"{type(self).__name__} is not initialized: call `await store.init()` "
                "or use `async with store:` first"
            )
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not self._loop:
            raise CompositeStoreError(
                f"{type(self).__name__} is bound to the event loop that ran init(); "
                "it was called from another loop. Open one store per event loop "
                "(or use composite_store.sync from synchronous code)."
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"
