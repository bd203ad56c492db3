"""A MongoDB server for the tests: ``COMPOSITE_STORE_TEST_MONGODB_URL``, else the ``mongodb``
service of docker/docker-compose.yml (MongoDB 7, a one-node replica set) where a Docker engine
answers, else a throwaway SecantusDB server (PyPI ``secantusdb``, a MongoDB wire-protocol server
on WiredTiger; no mongod is obtainable here) started on a free loopback port for the test session.

SecantusDB runs in its own process, so its Python work does not share the test process's GIL.
By default it presents itself as a one-node replica set (``setName: secantus``): transactions
work and the adapter's ``atomic_batches`` path is the one tested. ``start_throwaway(
standalone=True)`` starts one without the replica-set advertisement, for the
no-transaction path.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys

import pytest
from composite_store_mongodb.provision import create_namespace, drop_namespace, store_url

from composite_store.errors import redact
from tests.support.backends import ran, unreachable
from tests.support.servers import Found, ThrowawayDir, free_port, reachable, wait_until
from tests.support.servers.docker import docker_found

__all__ = ["BACKEND", "STANDALONE", "find", "find_standalone", "session_url", "start_throwaway"]

BACKEND = "mongodb"
#: The no-transaction deployment, reported as its own backend (named like its test module,
#: tests/conformance/test_mongodb_standalone.py, as CI's required-backend list expects).
STANDALONE = "mongodb_standalone"
ENV = "COMPOSITE_STORE_TEST_MONGODB_URL"
#: The replica set names its member localhost:27017, so connect to the published port directly.
DOCKER = "mongodb://{host}:{port}/admin?directConnection=true&serverSelectionTimeoutMS=2000"
#: Seconds a throwaway server gets to answer (it imports a lot of Python first).
STARTUP_SECONDS = 60


async def _probe(url: str) -> None:
    """Works only where the tests can work: connect, and create and drop a database."""
    await drop_namespace(url, await create_namespace(url))


@functools.cache
def find() -> Found | str:
    """The server to test against, or why there is none (looked up once per process)."""
    env = os.environ.get(ENV)
    if env:
        failure = reachable(lambda: _probe(env))
        return Found(env, f"{ENV}={redact(env)}") if failure is None else f"{ENV}: {failure}"
    docker = docker_found("mongodb", DOCKER, _probe)
    if docker is not None:
        return docker
    return start_throwaway()


@functools.cache
def find_standalone() -> Found | str:
    """A standalone server (no replica set, so no transactions): always a throwaway
    SecantusDB, whatever ``COMPOSITE_STORE_TEST_MONGODB_URL`` points at."""
    return start_throwaway(standalone=True)


def start_throwaway(*, standalone: bool = False) -> Found | str:
    """Start a SecantusDB server on a free loopback port; stopped at process exit."""
    try:
        import secantus  # noqa: F401 - only checks that the test dependency is installed
    except ImportError:
        return "secantusdb is not installed (it is in the dev dependency group: uv sync)"
    tmp = ThrowawayDir("composite-store-mongodb-")
    # An explicit (empty) config file turns off SecantusDB's discovery of ./secantusd.toml,
    # ~/.secantus/ and /etc/secantus/, so nothing on the machine changes the server.
    config = tmp.path / "secantusd.toml"
    config.write_text("")
    port = free_port()
    args = [
        sys.executable, "-m", "secantus",
        "--config", str(config),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--storage-path", str(tmp.path / "data"),
        "--cache-size", "256M",
        "--log-level", "WARNING",
    ]
    if standalone:
        args.append("--standalone")
    log = (tmp.path / "server.log").open("wb")
    try:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    except OSError as exc:
        log.close()
        tmp.cleanup()
        return f"could not start secantusdb: {exc}"

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()

    tmp.on_cleanup(stop)
    url = f"mongodb://127.0.0.1:{port}/admin?serverSelectionTimeoutMS=2000"
    failure = wait_until(lambda: _probe(url), STARTUP_SECONDS)
    if failure:
        exited = process.poll()
        tail = (tmp.path / "server.log").read_text(errors="replace").strip().splitlines()[-1:]
        tmp.cleanup()
        state = f"exited {exited}" if exited is not None else "still starting"
        return f"throwaway secantusdb did not answer ({state}): {failure} {tail}"
    kind = "standalone" if standalone else "one-node replica set"
    return Found(url, f"throwaway secantusdb 127.0.0.1:{port} ({kind})")


def session_url(request: pytest.FixtureRequest, *, standalone: bool = False) -> str:
    """A store URL on a fresh database, dropped when the fixture's scope ends; ``standalone``
    asks for a server without transactions. Skips or fails when unreachable."""
    backend, found = (STANDALONE, find_standalone()) if standalone else (BACKEND, find())
    if isinstance(found, str):
        unreachable(backend, found)
    server = found
    name = asyncio.run(create_namespace(server.url))
    request.addfinalizer(lambda: asyncio.run(drop_namespace(server.url, name)))
    ran(backend, server.how)
    return store_url(server.url, name)
