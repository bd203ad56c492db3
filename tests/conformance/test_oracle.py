"""The conformance suite on Oracle Database, wherever ``COMPOSITE_STORE_TEST_ORACLE_URL`` names one.

No Oracle server runs on this project's machines: ``tests/test_oracle_compile.py`` checks every
statement the adapter sends instead. Elsewhere, point the variable at a database, e.g. the
``oracle`` service of ``docker/docker-compose.yml``::

    COMPOSITE_STORE_TEST_ORACLE_URL='oracle://composite:composite@127.0.0.1:1521/?service_name=FREEPDB1'

The session provisions a throwaway table prefix in the URL's schema (Oracle schemas are users,
which the tests do not create) and drops its tables at the end.
"""

import asyncio
import os
from collections.abc import Iterator

import pytest
from backends import ran, unreachable
from composite_store_conformance import (
    CapabilitiesSuite,
    DatasetsSuite,
    ExperimentsSuite,
    MemorySuite,
    ObservabilitySuite,
    RouterSuite,
    SchemaSuite,
    ScoresSuite,
    WorkflowDefinitionsSuite,
    WorkflowsSuite,
)

from composite_store import open_store
from composite_store.errors import CompositeStoreError, redact
from composite_store.store import Store

ENV = "COMPOSITE_STORE_TEST_ORACLE_URL"


@pytest.fixture(scope="session")
def store_factory() -> Iterator[Store]:
    url = os.environ.get(ENV)
    if not url:
        unreachable("oracle", f"no Oracle server here; set {ENV}")
    try:
        from composite_store_oracle import provision
    except ImportError as exc:
        unreachable("oracle", f"composite-store-oracle is not installed ({exc})")
    try:
        prefix = asyncio.run(provision.create_namespace(url))
    except CompositeStoreError as exc:
        unreachable("oracle", f"{ENV}={redact(url)}: {exc}")
    ran("oracle", f"{ENV}={redact(url)}")
    yield open_store(provision.store_url(url, prefix))
    asyncio.run(provision.drop_namespace(url, prefix))


class TestOracleMemory(MemorySuite):
    pass


class TestOracleWorkflows(WorkflowsSuite):
    pass


class TestOracleScores(ScoresSuite):
    pass


class TestOracleWorkflowDefinitions(WorkflowDefinitionsSuite):
    pass


class TestOracleDatasets(DatasetsSuite):
    pass


class TestOracleExperiments(ExperimentsSuite):
    pass


class TestOracleObservability(ObservabilitySuite):
    pass


class TestOracleSchema(SchemaSuite):
    pass


class TestOracleCapabilities(CapabilitiesSuite):
    pass


class TestOracleRouter(RouterSuite):
    pass
