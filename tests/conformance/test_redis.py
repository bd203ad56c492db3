"""The conformance suite on a standalone Redis, under a key prefix provisioned for the session
(``COMPOSITE_STORE_TEST_REDIS_URL``, else the local server, else a throwaway one)."""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import redis


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(redis.session_url(request))


globals().update(suite_classes("Redis"))
