"""The conformance suite on SQLite (the embedded default), one temporary file per session."""

from pathlib import Path

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.backends import ran


@pytest.fixture(scope="session")
def cs_store_factory(tmp_path_factory: pytest.TempPathFactory) -> Store:
    path: Path = tmp_path_factory.mktemp("sqlite") / "conformance.db"
    ran("sqlite", "temporary file")
    return open_store(f"sqlite:///{path}")


globals().update(suite_classes("Sqlite"))
