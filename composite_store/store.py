"""``Store``: the domains one backend serves, with one lifecycle and one connection pool."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

from composite_store.domains.base import Domain
from composite_store.errors import DomainNotConfiguredError, ValidationError
from composite_store.schema import DOMAINS, domain_key
from composite_store.schema.migrations import one_opening

if TYPE_CHECKING:
    from composite_store.domains.datasets import DatasetsDomain
    from composite_store.domains.experiments import ExperimentsDomain
    from composite_store.domains.memory import MemoryDomain
    from composite_store.domains.observability import ObservabilityDomain
    from composite_store.domains.scores import ScoresDomain
    from composite_store.domains.workflow_definitions import WorkflowDefinitionsDomain
    from composite_store.domains.workflows import WorkflowsDomain

__all__ = ["Store"]

class Store:
    """The domains served by one backend.

    A store opened from a URL owns its connections and closes them in ``close()``. Use it as an
    async context manager, or call ``await store.init()`` and ``await store.close()``.
    """

    #: The scheme family, for ``describe()``.
    backend: str = "unknown"
    #: Conformance tests this backend is known to fail, by test name, with the reason. The
    #: conformance plugin reads them from the store under test and turns each into a strict
    #: xfail, so a gap that closes shows up as an unexpected pass. Adapters declare them on the
    #: store class, beside the code that has the gap.
    known_gaps: Mapping[str, str] = {}

    @classmethod
    def option_names(cls) -> frozenset[str]:
        """The keyword options ``open_store(url, **options)`` passes to this store class.

        The constructor refuses any other with a ``ConfigurationError`` naming the closest;
        ``CompositeStore`` gives each store only the options it takes.
        """
        return frozenset()

    def __init__(self, domains: Mapping[str, Domain], *, description: str | None = None) -> None:
        domains = {domain_key(k): v for k, v in domains.items()}
        for key, dom in domains.items():
            if key not in DOMAINS:
                raise ValidationError(f"unknown domain {key!r}; known: {', '.join(DOMAINS)}")
            if dom.domain != key:
                raise ValidationError(f"{type(dom).__name__} serves {dom.domain!r}, not {key!r}")
        self._domains: dict[str, Domain] = {k: domains[k] for k in DOMAINS if k in domains}
        self._description = description

    # -- domains -----------------------------------------------------------------------------------

    def get(self, name: str) -> Domain | None:
        """Return the domain ``name`` (ours or Mastra's spelling: ``workflowDefinitions``), or
        None when this store does not offer it."""
        name = domain_key(name)
        if name not in DOMAINS:
            raise ValidationError(f"unknown domain {name!r}; known: {', '.join(DOMAINS)}")
        return self._domains.get(name)

    @property
    def domains(self) -> Mapping[str, Domain]:
        """The domains this store offers, by key."""
        return dict(self._domains)

    def _require(self, name: str) -> Domain:
        # On every operation's path (store.memory.list_messages...): a dict lookup. The domain
        # under a key is of that key's type, checked when the store was built.
        found = self._domains.get(name)
        if found is None:
            raise DomainNotConfiguredError(
                f"domain {name!r} is not configured: {self._missing_hint(name)}"
            )
        return found

    def _missing_hint(self, name: str) -> str:
        return f"the {self.backend} store does not offer it"

    @property
    def memory(self) -> MemoryDomain:
        """Threads, messages and resources."""
        return cast("MemoryDomain", self._require("memory"))

    @property
    def workflows(self) -> WorkflowsDomain:
        """Workflow run snapshots."""
        return cast("WorkflowsDomain", self._require("workflows"))

    @property
    def scores(self) -> ScoresDomain:
        """Scorer results and eval results."""
        return cast("ScoresDomain", self._require("scores"))

    @property
    def observability(self) -> ObservabilityDomain:
        """AI spans and traces, and OpenTelemetry spans."""
        return cast("ObservabilityDomain", self._require("observability"))

    @property
    def workflow_definitions(self) -> WorkflowDefinitionsDomain:
        """Workflow definitions and their numbered versions (beta)."""
        return cast("WorkflowDefinitionsDomain", self._require("workflow_definitions"))

    @property
    def datasets(self) -> DatasetsDomain:
        """Datasets, their versioned items and their version log."""
        return cast("DatasetsDomain", self._require("datasets"))

    @property
    def experiments(self) -> ExperimentsDomain:
        """Experiments and their per-item results."""
        return cast("ExperimentsDomain", self._require("experiments"))

    def __getattr__(self, name: str) -> Any:
        # Domains whose contracts live in their own modules (scores, observability, ...).
        if name in DOMAINS:
            found = self.get(name)
            if found is None:
                raise DomainNotConfiguredError(
                    f"domain {name!r} is not configured: {self._missing_hint(name)}"
                )
            return found
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- lifecycle ---------------------------------------------------------------------------------

    async def init(self) -> None:
        """Initialize every domain, one after the other (DDL is never run concurrently)."""
        with one_opening():
            for dom in self._distinct():
                await dom.init()

    async def close(self) -> None:
        """Close every domain, then what the store itself opened."""
        for dom in self._distinct():
            await dom.close()
        await self._close()

    async def _close(self) -> None:
        """Release the store's own resources (a shared pool); overridden by backends."""

    async def ping(self) -> dict[str, bool]:
        """Report, per domain, whether its backend answers."""
        return {key: await dom.ping() for key, dom in self._domains.items()}

    def describe(self) -> dict[str, str]:
        """The routing table: domain -> backend description, credentials redacted."""
        return {key: dom.describe() for key, dom in self._domains.items()}

    def _distinct(self) -> list[Domain]:
        seen: dict[int, Domain] = {}
        for dom in self._domains.values():
            seen.setdefault(id(dom), dom)
        return list(seen.values())

    async def __aenter__(self) -> Self:
        await self.init()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        routes = ", ".join(f"{k}={v}" for k, v in self.describe().items())
        return f"<{type(self).__name__} {routes}>"
