"""The conformance suite on a standalone MongoDB server (a throwaway SecantusDB started without
its replica-set advertisement): no transactions, so ``atomic_batches`` and ``transactions``
are off, and every multi-document write takes its no-transaction path.

The schema and router suites do not depend on the deployment and run in test_mongodb.py only.
"""

import pytest
from composite_store_conformance import RouterSuite, SchemaSuite, suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import mongodb


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(mongodb.session_url(request, standalone=True))


globals().update(suite_classes("MongoStandalone", without=(SchemaSuite, RouterSuite)))
