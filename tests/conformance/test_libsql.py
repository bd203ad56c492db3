"""The conformance suite on embedded libSQL (the real libSQL engine), one temporary file."""

import asyncio
from collections.abc import Iterator

import pytest
from composite_store_conformance import suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.backends import ran, unreachable

BASE_URL = "libsql:///conformance.db"


@pytest.fixture(scope="session")
def cs_store_factory() -> Iterator[Store]:
    try:
        from composite_store_libsql import provision
    except ImportError as exc:
        unreachable("libsql", f"composite-store-libsql is not installed ({exc})")
    name = asyncio.run(provision.create_namespace(BASE_URL))
    ran("libsql", "embedded libSQL engine, temporary file")
    yield open_store(provision.store_url(BASE_URL, name))
    asyncio.run(provision.drop_namespace(BASE_URL, name))


globals().update(suite_classes("Libsql"))
