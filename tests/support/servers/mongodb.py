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
import contextlib
import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from composite_store_mongodb.connection import parse_url
from composite_store_mongodb.provision import create_namespace, drop_namespace, store_url
from pymongo import MongoClient
from pymongo.database import Database

from composite_store.errors import redact
from tests.support.backends import ran, unreachable
from tests.support.servers import Found, ThrowawayDir, free_port, reachable, wait_until
from tests.support.servers.docker import docker_found

__all__ = [
    "BACKEND",
    "STANDALONE",
    "SecantusNode",
    "driver_database",
    "find",
    "find_standalone",
    "session_url",
    "start_throwaway",
]

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


class SecantusNode:
    """One SecantusDB server on 127.0.0.1:``port``, its WiredTiger files in a folder of ``tmp``.

    ``extra`` arguments go to the server (``--standalone``, ``--sync-on-commit``). ``stop`` is
    a clean shutdown (SIGTERM: a final checkpoint), ``kill`` is ``kill -9``; ``start`` again
    reopens the same files, so what the journal kept is there (tests/reliability restarts
    servers under load).
    """

    def __init__(self, tmp: ThrowawayDir, port: int, *extra: str) -> None:
        self.port, self.extra = port, extra
        self.workdir = tmp.path / str(port)
        self.workdir.mkdir()
        # An explicit (empty) config file turns off SecantusDB's discovery of ./secantusd.toml,
        # ~/.secantus/ and /etc/secantus/, so nothing on the machine changes the server.
        self.config = self.workdir / "secantusd.toml"
        self.config.write_text("")
        self.url = f"mongodb://127.0.0.1:{port}/admin?serverSelectionTimeoutMS=2000"
        self._process: subprocess.Popen[bytes] | None = None
        tmp.on_cleanup(self.stop)

    def start(self) -> str | None:
        """Start the server (without waiting); None, or why it could not start."""
        options = {
            "--config": str(self.config),
            "--host": "127.0.0.1",
            "--port": str(self.port),
            "--storage-path": str(self.workdir / "data"),
            "--cache-size": "256M",
            "--log-level": "WARNING",
        }
        flags = [part for option in options.items() for part in option]
        args = [sys.executable, "-m", "secantus", *flags, *self.extra]
        # SECANTUS_TEST_FAST_STORAGE=1 (SecantusDB's own test switch) would drop the per-commit
        # fsync of --sync-on-commit; a server that tests rely on to keep data must not inherit it.
        env = {k: v for k, v in os.environ.items() if k != "SECANTUS_TEST_FAST_STORAGE"}
        try:
            with open(self.workdir / "server.log", "ab") as log:
                self._process = subprocess.Popen(
                    args, stdout=log, stderr=subprocess.STDOUT, env=env
                )
        except OSError as exc:
            return f"could not start secantusdb: {exc}"
        return None

    def start_and_wait(self, seconds: float = STARTUP_SECONDS) -> str | None:
        """Start the server and wait until it answers; None, or why it did not."""
        failure = self.start() or wait_until(lambda: _probe(self.url), seconds)
        if failure and self._process is not None:
            exited = self._process.poll()
            log = (self.workdir / "server.log").read_text(errors="replace")
            tail = log.strip().splitlines()[-1:]
            state = f"exited {exited}" if exited is not None else "still starting"
            return f"throwaway secantusdb did not answer ({state}): {failure} {tail}"
        return failure

    def stop(self) -> None:
        """A clean shutdown (SIGTERM), killed if it takes more than 20 s."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None

    def kill(self) -> None:
        """``kill -9``: no shutdown, no final checkpoint."""
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=10)
            self._process = None


def start_throwaway(*, standalone: bool = False) -> Found | str:
    """Start a SecantusDB server on a free loopback port; stopped at process exit."""
    try:
        import secantus  # noqa: F401 - only checks that the test dependency is installed
    except ImportError:
        return "secantusdb is not installed (it is in the dev dependency group: uv sync)"
    tmp = ThrowawayDir("composite-store-mongodb-")
    port = free_port()
    node = SecantusNode(tmp, port, *(["--standalone"] if standalone else []))
    failure = node.start_and_wait()
    if failure:
        tmp.cleanup()
        return failure
    kind = "standalone" if standalone else "one-node replica set"
    return Found(node.url, f"throwaway secantusdb 127.0.0.1:{port} ({kind})")


@contextlib.contextmanager
def driver_database(url: str) -> Iterator[Database[dict[str, Any]]]:
    """The database of the store URL ``url`` through pymongo itself (timestamps tz-aware), for
    looking at or writing documents behind the store's back; the client closed after."""
    driver_url, _, _ = parse_url(url)  # without the store's own options (validator=...)
    client: MongoClient[dict[str, Any]] = MongoClient(driver_url, tz_aware=True)
    try:
        yield client.get_default_database()
    finally:
        client.close()


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
