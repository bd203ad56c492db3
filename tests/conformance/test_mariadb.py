"""The conformance suite on MariaDB (the MySQL adapter), in a database provisioned for the
session."""

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
from tests.support.servers import mariadb


@pytest.fixture(scope="session")
def store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(mariadb.session_url(request))


class TestMariadbMemory(MemorySuite):
    pass


class TestMariadbWorkflows(WorkflowsSuite):
    pass


class TestMariadbScores(ScoresSuite):
    pass


class TestMariadbWorkflowDefinitions(WorkflowDefinitionsSuite):
    pass


class TestMariadbDatasets(DatasetsSuite):
    pass


class TestMariadbExperiments(ExperimentsSuite):
    pass


class TestMariadbObservability(ObservabilitySuite):
    pass


class TestMariadbSchema(SchemaSuite):
    pass


class TestMariadbCapabilities(CapabilitiesSuite):
    pass


class TestMariadbRouter(RouterSuite):
    pass


class TestMariadbTransfer(TransferSuite):
    pass
