"""The conformance suite on embedded libSQL (the real libSQL engine), one temporary file."""

import asyncio
from collections.abc import Iterator

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
from tests.support.backends import ran, unreachable

BASE_URL = "libsql:///conformance.db"


@pytest.fixture(scope="session")
def store_factory() -> Iterator[Store]:
    try:
        from composite_store_libsql import provision
    except ImportError as exc:
        unreachable("libsql", f"composite-store-libsql is not installed ({exc})")
    name = asyncio.run(provision.create_namespace(BASE_URL))
    ran("libsql", "embedded libSQL engine, temporary file")
    yield open_store(provision.store_url(BASE_URL, name))
    asyncio.run(provision.drop_namespace(BASE_URL, name))


class TestLibsqlMemory(MemorySuite):
    pass


class TestLibsqlWorkflows(WorkflowsSuite):
    pass


class TestLibsqlScores(ScoresSuite):
    pass


class TestLibsqlWorkflowDefinitions(WorkflowDefinitionsSuite):
    pass


class TestLibsqlDatasets(DatasetsSuite):
    pass


class TestLibsqlExperiments(ExperimentsSuite):
    pass


class TestLibsqlObservability(ObservabilitySuite):
    pass


class TestLibsqlSchema(SchemaSuite):
    pass


class TestLibsqlCapabilities(CapabilitiesSuite):
    pass


class TestLibsqlRouter(RouterSuite):
    pass


class TestLibsqlTransfer(TransferSuite):
    pass
