"""The conformance suite on the in-memory store (the reference semantics)."""

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.backends import ran


@pytest.fixture(scope="session")
def cs_store_factory() -> Store:
    ran("inmemory", "in-process")
    return open_store("memory://")


globals().update(suite_classes("InMemory"))
