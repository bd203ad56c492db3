"""The PostgreSQL adapter's own tests: the server they run against."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.backends import unreachable
from tests.support.servers import postgres


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The test server's URL (``postgresql+psycopg://`` or ``postgresql://``)."""
    found = postgres.find()
    if isinstance(found, str):
        unreachable(postgres.BACKEND, found)
    yield found.url


@pytest.fixture(scope="module")
def plain_url(url: str) -> str:
    """The test server's URL as libpq takes it (``postgresql://``)."""
    return url.replace("postgresql+psycopg://", "postgresql://")
