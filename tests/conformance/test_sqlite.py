"""The conformance suite on SQLite (the embedded default), one temporary file per session."""

from pathlib import Path

import pytest

from backends import ran
from composite_store import open_store
from composite_store.store import Store
from composite_store_conformance import MemorySuite, WorkflowsSuite


@pytest.fixture(scope="session")
def store_factory(tmp_path_factory: pytest.TempPathFactory) -> Store:
    path: Path = tmp_path_factory.mktemp("sqlite") / "conformance.db"
    ran("sqlite", "temporary file")
    return open_store(f"sqlite:///{path}")


class TestSqliteMemory(MemorySuite):
    pass


class TestSqliteWorkflows(WorkflowsSuite):
    pass
