"""An Oracle server for the tests: ``COMPOSITE_STORE_TEST_ORACLE_URL``, else the ``oracle``
service of docker/docker-compose.yml where a Docker engine answers. No machine of this
project runs an Oracle server, and none can be started here: without one the Oracle tests are
skipped (``adapters/oracle/tests/test_oracle_compile.py`` checks the adapter's statements
instead)."""

from __future__ import annotations

import asyncio
import functools

import pytest
from composite_store_oracle.provision import create_namespace, drop_namespace, store_url

from tests.support.backends import ran, unreachable
from tests.support.servers import Found, discover
from tests.support.servers.docker import docker_found

__all__ = ["BACKEND", "find", "session_url"]

BACKEND = "oracle"
ENV = "COMPOSITE_STORE_TEST_ORACLE_URL"
DOCKER = "oracle://composite:composite@{host}:{port}/?service_name=FREEPDB1"


async def _probe(url: str) -> None:
    """Works only where the tests can work: connect, and check the schema (its namespace is a
    table prefix, so there is nothing to create; see composite_store_oracle.provision)."""
    await drop_namespace(url, await create_namespace(url))


@functools.cache
def find() -> Found | str:
    """The server to test against, or why there is none (looked up once per process)."""
    found = discover(
        env=ENV, service="oracle", docker_template=DOCKER, probe=_probe, docker=docker_found
    )
    return found if isinstance(found, Found) else found.replace("no server", "no Oracle server")


def session_url(request: pytest.FixtureRequest) -> str:
    """A store URL with a fresh table prefix, its tables dropped when the session ends. Skips
    or fails when unreachable."""
    found = find()
    if isinstance(found, str):
        unreachable(BACKEND, found)
    name = asyncio.run(create_namespace(found.url))
    request.addfinalizer(lambda: asyncio.run(drop_namespace(found.url, name)))
    ran(BACKEND, found.how)
    return store_url(found.url, name)
