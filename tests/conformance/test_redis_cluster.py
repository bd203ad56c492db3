"""The conformance suite on Redis Cluster (three throwaway cluster-mode nodes unless
``COMPOSITE_STORE_TEST_REDIS_CLUSTER_URL`` is set), under a key prefix provisioned for the
session."""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import redis


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(redis.session_url(request, cluster=True))


globals().update(suite_classes("RedisCluster"))
