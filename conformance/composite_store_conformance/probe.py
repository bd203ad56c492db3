"""An instrumented in-memory store the router suite routes to by URL.

``ProbeStore`` serves the scheme ``conformance-probe://``: it counts the stores opened, keeps a
journal of every domain's ``init`` and ``close`` (with a pause inside ``init``, so overlapping
initializations would interleave in the journal), and its domains describe themselves with
their URL verbatim, credentials included, so the router's redaction is what is tested.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from composite_store.inmemory import InMemoryData, InMemoryMemory, InMemoryWorkflows
from composite_store.inmemory.base import InMemoryDomain
from composite_store.registry import register_adapter
from composite_store.store import Store

__all__ = ["PROBE_SCHEME", "ProbeStore", "register_probe"]

PROBE_SCHEME = "conformance-probe"


class _Probed(InMemoryDomain):
    url: str = ""
    journal: list[tuple[str, str]]

    async def _init(self) -> None:
        self.journal.append(("init-start", self.domain))
        await asyncio.sleep(0.005)
        await super()._init()
        self.journal.append(("init-end", self.domain))

    async def _close(self) -> None:
        self.journal.append(("close", self.domain))

    def describe(self) -> str:
        return f"probe {self.url}"


class _ProbeMemory(_Probed, InMemoryMemory):
    pass


class _ProbeWorkflows(_Probed, InMemoryWorkflows):
    pass


class ProbeStore(Store):
    """The memory and workflows domains in process memory, instrumented."""

    backend = "probe"
    #: Every ProbeStore opened in this process, in order.
    opened: ClassVar[list[ProbeStore]] = []

    def __init__(self, url: str = f"{PROBE_SCHEME}://", **options: Any) -> None:
        self.url = url
        self.options = options
        self.journal: list[tuple[str, str]] = []
        self.closed = False
        data = InMemoryData()
        domains: dict[str, InMemoryDomain] = {}
        for cls in (_ProbeMemory, _ProbeWorkflows):
            domain = cls(data=data)
            domain.url = url
            domain.journal = self.journal
            domains[domain.domain] = domain
        super().__init__(domains)
        ProbeStore.opened.append(self)

    async def _close(self) -> None:
        self.closed = True


def register_probe() -> None:
    """Serve ``conformance-probe://`` URLs with ``ProbeStore`` (idempotent)."""
    register_adapter(PROBE_SCHEME, ProbeStore, clobber=True)
