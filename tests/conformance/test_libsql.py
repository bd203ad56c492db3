"""The conformance suite on embedded libSQL (the real libSQL engine), one temporary file."""

from collections.abc import Iterator

import pytest
from backends import ran, unreachable
from composite_store_conformance import MemorySuite, WorkflowsSuite

from composite_store import open_store
from composite_store.store import Store


@pytest.fixture(scope="session")
def store_factory() -> Iterator[Store]:
    try:
        from composite_store_libsql import provision
    except ImportError as exc:
        unreachable("libsql", f"composite-store-libsql is not installed ({exc})")
    url = provision.create()
    ran("libsql", "embedded libSQL engine, temporary file")
    yield open_store(url)
    provision.drop(url)


class TestLibsqlMemory(MemorySuite):
    pass


class TestLibsqlWorkflows(WorkflowsSuite):
    pass
