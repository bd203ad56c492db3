"""The conformance suite on MariaDB (the MySQL adapter), in a database provisioned for the
session."""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import mariadb


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(mariadb.session_url(request))


globals().update(suite_classes("Mariadb"))
