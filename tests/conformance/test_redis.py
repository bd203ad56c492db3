"""The conformance suite on a standalone Redis, under a key prefix provisioned for the session
(``COMPOSITE_STORE_TEST_REDIS_URL``, else the local server, else a throwaway one)."""

import pytest
from composite_store_conformance import (
    CapabilitiesSuite,
    MemorySuite,
    ObservabilitySuite,
    RouterSuite,
    SchemaSuite,
    ScoresSuite,
    TransferSuite,
    WorkflowsSuite,
)

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import redis


@pytest.fixture(scope="session")
def store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(redis.session_url(request))


class TestRedisMemory(MemorySuite):
    pass


class TestRedisWorkflows(WorkflowsSuite):
    pass


class TestRedisScores(ScoresSuite):
    pass


class TestRedisObservability(ObservabilitySuite):
    known_gaps = redis.KNOWN_GAPS


class TestRedisSchema(SchemaSuite):
    pass


class TestRedisCapabilities(CapabilitiesSuite):
    pass


class TestRedisRouter(RouterSuite):
    pass


class TestRedisTransfer(TransferSuite):
    pass
