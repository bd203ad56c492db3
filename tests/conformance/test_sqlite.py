"""The conformance suite on SQLite (the embedded default), one temporary file per session."""

from pathlib import Path

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
def store_factory(tmp_path_factory: pytest.TempPathFactory) -> Store:
    path: Path = tmp_path_factory.mktemp("sqlite") / "conformance.db"
    ran("sqlite", "temporary file")
    return open_store(f"sqlite:///{path}")


class TestSqliteMemory(MemorySuite):
    pass


class TestSqliteWorkflows(WorkflowsSuite):
    pass


class TestSqliteScores(ScoresSuite):
    pass


class TestSqliteWorkflowDefinitions(WorkflowDefinitionsSuite):
    pass


class TestSqliteDatasets(DatasetsSuite):
    pass


class TestSqliteExperiments(ExperimentsSuite):
    pass


class TestSqliteObservability(ObservabilitySuite):
    pass


class TestSqliteSchema(SchemaSuite):
    pass


class TestSqliteCapabilities(CapabilitiesSuite):
    pass


class TestSqliteRouter(RouterSuite):
    pass


class TestSqliteTransfer(TransferSuite):
    pass
