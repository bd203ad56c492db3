"""The conformance suite on Redis Cluster (three throwaway cluster-mode nodes unless
``COMPOSITE_STORE_TEST_REDIS_CLUSTER_URL`` is set), under a key prefix provisioned for the
session."""

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
    return open_store(redis.session_url(request, cluster=True))


class TestRedisClusterMemory(MemorySuite):
    pass


class TestRedisClusterWorkflows(WorkflowsSuite):
    pass


class TestRedisClusterScores(ScoresSuite):
    pass


class TestRedisClusterObservability(ObservabilitySuite):
    known_gaps = redis.KNOWN_GAPS


class TestRedisClusterSchema(SchemaSuite):
    pass


class TestRedisClusterCapabilities(CapabilitiesSuite):
    pass


class TestRedisClusterRouter(RouterSuite):
    pass


class TestRedisClusterTransfer(TransferSuite):
    pass
