"""The conformance suite on PostgreSQL, in a schema provisioned for the session."""

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
from tests.support.servers import postgres


@pytest.fixture(scope="session")
def store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(postgres.session_url(request))


class TestPostgresMemory(MemorySuite):
    pass


class TestPostgresWorkflows(WorkflowsSuite):
    pass


class TestPostgresScores(ScoresSuite):
    pass


class TestPostgresWorkflowDefinitions(WorkflowDefinitionsSuite):
    pass


class TestPostgresDatasets(DatasetsSuite):
    pass


class TestPostgresExperiments(ExperimentsSuite):
    pass


class TestPostgresObservability(ObservabilitySuite):
    pass


class TestPostgresSchema(SchemaSuite):
    pass


class TestPostgresCapabilities(CapabilitiesSuite):
    pass


class TestPostgresRouter(RouterSuite):
    pass


class TestPostgresTransfer(TransferSuite):
    pass
