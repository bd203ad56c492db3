"""The conformance suite on MongoDB (a throwaway SecantusDB server unless
``COMPOSITE_STORE_TEST_MONGODB_URL`` is set), in a database provisioned for the session, with
the ``$jsonSchema`` validators on."""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import mongodb


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    # The provisioned URL turns the $jsonSchema validators on (the schema checks read them).
    return open_store(mongodb.session_url(request))


globals().update(suite_classes("Mongo"))
