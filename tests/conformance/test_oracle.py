"""The conformance suite on Oracle Database, wherever one can be reached.

No Oracle server runs on this project's machines:
``adapters/oracle/tests/test_oracle_compile.py`` checks every statement the adapter sends instead.
Elsewhere the suite runs against ``COMPOSITE_STORE_TEST_ORACLE_URL``, e.g. the ``oracle``
service of docker/docker-compose.yml (started by the tests where a Docker engine answers)::

    COMPOSITE_STORE_TEST_ORACLE_URL='oracle://composite:composite@127.0.0.1:1521/?service_name=FREEPDB1'

The session works in a throwaway table prefix inside the URL's schema (Oracle schemas are
users, which the tests do not create) and drops its tables at the end.
"""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import oracle


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(oracle.session_url(request))


globals().update(suite_classes("Oracle"))
