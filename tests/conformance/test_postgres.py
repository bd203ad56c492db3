"""The conformance suite on PostgreSQL, in a schema provisioned for the session."""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import postgres


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(postgres.session_url(request))


globals().update(suite_classes("Postgres"))
