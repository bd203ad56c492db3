"""The conformance suite on the in-memory store (the reference semantics)."""

import pytest

from backends import ran
from composite_store import open_store
from composite_store.store import Store
from composite_store_conformance import MemorySuite, WorkflowsSuite


@pytest.fixture(scope="session")
def store_factory() -> Store:
    ran("inmemory", "in-process")
    return open_store("memory://")


class TestInMemoryMemory(MemorySuite):
    pass


class TestInMemoryWorkflows(WorkflowsSuite):
    pass
