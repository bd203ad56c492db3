"""The conformance suite on the in-memory store (the reference semantics)."""

import pytest
from composite_store_conformance import (
    CapabilitiesSuite,
    DatasetsSuite,
    ExperimentsSuite,
    MemorySuite,
    ObservabilitySuite,
    RouterSuite,
    SchemaSuite,
    ScoresSuite,
    TransferSuite,
    WorkflowDefinitionsSuite,
    WorkflowsSuite,
)

from composite_store import open_store
from composite_store.store import Store
from tests.support.backends import ran


@pytest.fixture(scope="session")
def store_factory() -> Store:
    ran("inmemory", "in-process")
    return open_store("memory://")


class TestInMemoryMemory(MemorySuite):
    pass


class TestInMemoryWorkflows(WorkflowsSuite):
    pass


class TestInMemoryScores(ScoresSuite):
    pass


class TestInMemoryWorkflowDefinitions(WorkflowDefinitionsSuite):
    pass


class TestInMemoryDatasets(DatasetsSuite):
    pass


class TestInMemoryExperiments(ExperimentsSuite):
    pass


class TestInMemoryObservability(ObservabilitySuite):
    pass


class TestInMemorySchema(SchemaSuite):
    pass


class TestInMemoryCapabilities(CapabilitiesSuite):
    pass


class TestInMemoryRouter(RouterSuite):
    pass


class TestInMemoryTransfer(TransferSuite):
    pass
