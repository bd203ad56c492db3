"""The in-memory store (``memory://``): the reference semantics, for tests and prototypes."""

from __future__ import annotations

from typing import Any, ClassVar

from composite_store.inmemory.base import InMemoryData, InMemoryDomain
from composite_store.inmemory.datasets import InMemoryDatasets
from composite_store.inmemory.experiments import InMemoryExperiments
from composite_store.inmemory.memory import InMemoryMemory
from composite_store.inmemory.observability import InMemoryObservability
from composite_store.inmemory.scores import InMemoryScores
from composite_store.inmemory.workflow_definitions import InMemoryWorkflowDefinitions
from composite_store.inmemory.workflows import InMemoryWorkflows
from composite_store.store import Store
from composite_store.urls import check_options

__all__ = [
    "InMemoryData",
    "InMemoryDatasets",
    "InMemoryDomain",
    "InMemoryExperiments",
    "InMemoryMemory",
    "InMemoryObservability",
    "InMemoryScores",
    "InMemoryStore",
    "InMemoryWorkflowDefinitions",
    "InMemoryWorkflows",
]


class InMemoryStore(Store):
    """Every domain in process memory; data lives as long as the store object."""

    backend = "memory"
    domain_classes: ClassVar[dict[str, type[InMemoryDomain]]] = {
        "memory": InMemoryMemory,
        "workflows": InMemoryWorkflows,
        "workflow_definitions": InMemoryWorkflowDefinitions,
        "datasets": InMemoryDatasets,
        "experiments": InMemoryExperiments,
        "scores": InMemoryScores,
        "observability": InMemoryObservability,
    }

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        check_options(options, (), "memory://")
        self.data = InMemoryData()
        super().__init__({k: cls(data=self.data) for k, cls in self.domain_classes.items()})
