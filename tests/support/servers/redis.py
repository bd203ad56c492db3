"""Redis servers for the tests, standalone and cluster.

Standalone: ``COMPOSITE_STORE_TEST_REDIS_URL``, else the ``redis`` service of
docker/docker-compose.yml where a Docker engine answers, else the local server (127.0.0.1:6379,
logical database 9 so other users of database 0 are never touched), else a throwaway
``redis-server`` on a free loopback port. Cluster: ``COMPOSITE_STORE_TEST_REDIS_CLUSTER_URL``,
else the ``redis-cluster`` compose service where Docker answers, else three
throwaway cluster-mode nodes (no replicas) joined with ``redis-cli --cluster create``. Each test
session works under a fresh key prefix, dropped at the end; throwaway servers stop at exit.
"""

from __future__ import annotations

import asyncio
import functools
import os
import random
import shutil
import socket
import subprocess

import pytest
from composite_store_redis.provision import create_namespace, drop_namespace, store_url

from composite_store.errors import redact
from tests.support.backends import ran, unreachable
from tests.support.servers import Found, ThrowawayDir, discover, reachable, run_checked, wait_until
from tests.support.servers.docker import docker_found

__all__ = ["CLUSTER", "STANDALONE", "find", "find_cluster", "session_url"]

STANDALONE = "redis"
CLUSTER = "redis_cluster"
ENV = "COMPOSITE_STORE_TEST_REDIS_URL"
CLUSTER_ENV = "COMPOSITE_STORE_TEST_REDIS_CLUSTER_URL"
LOCAL = "redis://127.0.0.1:6379/9?socket_connect_timeout=3"
DOCKER = "redis://{host}:{port}/0?socket_connect_timeout=3"
#: The first of three nodes; the others are found through the cluster itself.
DOCKER_CLUSTER = "redis+cluster://{host}:{port}"
_NODES = 3

async def _probe(url: str) -> None:
    """Works only where the tests can work: connect, reserve a prefix and drop it."""
    await drop_namespace(url, await create_namespace(url))


def _binary(name: str) -> str | None:
    return shutil.which(name) or next(
        (p for p in (f"/usr/bin/{name}", f"/usr/local/bin/{name}") if os.path.exists(p)), None
    )


class RedisNode:
    """One ``redis-server`` on 127.0.0.1:``port``, in its own folder of ``tmp``.

    By default it keeps nothing on disk; ``extra`` arguments change that (``--appendonly yes``).
    ``kill`` is ``kill -9``; ``start`` again reuses the folder, so an append-only file written
    before the kill is loaded (tests/reliability restarts servers under load).
    """

    def __init__(self, tmp: ThrowawayDir, port: int, *extra: str) -> None:
        self.port, self.extra = port, extra
        self.workdir = tmp.path / str(port)
        self.workdir.mkdir()
        self.url = f"redis://127.0.0.1:{port}/0"
        self._process: subprocess.Popen[bytes] | None = None
        tmp.on_cleanup(self.stop)

    def start(self) -> str | None:
        server = _binary("redis-server")
        if server is None:
            return "no redis-server binary (apt-get install redis-server)"
        with open(self.workdir / "server.log", "a") as log:
            self._process = subprocess.Popen(
                [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.workdir), "--protected-mode", "no",
                 *self.extra],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return None

    def start_and_wait(self, seconds: float = 20) -> str | None:
        """Start the server and wait until it answers; None, or why it did not."""
        return self.start() or wait_until(lambda: _probe(self.url), seconds)

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        self._process = None

    def kill(self) -> None:
        """``kill -9``: no shutdown, no final save."""
        if self._process is not None:
            self._process.kill()
            self._process.wait(10)
            self._process = None


def _start_node(tmp: ThrowawayDir, port: int, *extra: str) -> str | None:
    """Start one ``redis-server`` on 127.0.0.1:``port`` that keeps nothing on disk."""
    return RedisNode(tmp, port, *extra).start()


@functools.cache
def find() -> Found | str:
    """The standalone server to test against, or why there is none (looked up once)."""
    return discover(
        env=ENV,
        service="redis",
        docker_template=DOCKER,
        probe=_probe,
        docker=docker_found,
        local=(LOCAL, "local server 127.0.0.1:6379 (database 9)"),
        throwaway=_start_throwaway,
    )


def _start_throwaway() -> Found | str:
    """A throwaway standalone redis-server on a free port; stopped at process exit."""
    tmp = ThrowawayDir("composite-store-redis-")
    port = _free_port_pair()
    node = RedisNode(tmp, port)
    url = node.url
    failure = node.start_and_wait()
    if failure is not None:
        tmp.cleanup()
        return failure
    return Found(url, f"throwaway redis-server 127.0.0.1:{port}")


def _free_port_pair() -> int:
    """A loopback port P such that P and P + 10000 (its cluster bus) are both free."""
    for _ in range(200):
        port = random.randint(20000, 45000)
        try:
            for candidate in (port, port + 10000):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.bind(("127.0.0.1", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free loopback port pair for a Redis Cluster node")


@functools.cache
def find_cluster() -> Found | str:
    """The Redis Cluster to test against, or why there is none (looked up once)."""
    env = os.environ.get(CLUSTER_ENV)
    if env:
        failure = reachable(lambda: _probe(env))
        if failure is None:
            return Found(env, f"{CLUSTER_ENV}={redact(env)}")
        return f"{CLUSTER_ENV}: {failure}"
    docker = docker_found("redis-cluster", DOCKER_CLUSTER, _probe)
    if docker is not None:
        return docker
    cli = _binary("redis-cli")
    if cli is None:
        return "no redis-cli binary to create a cluster (apt-get install redis-tools)"
    tmp = ThrowawayDir("composite-store-redis-cluster-")
    ports: list[int] = []
    for _ in range(_NODES):
        port = _free_port_pair()
        while port in ports:
            port = _free_port_pair()
        ports.append(port)
        failure = _start_node(
            tmp, port, "--cluster-enabled", "yes", "--cluster-config-file",
            str(tmp.path / f"nodes-{port}.conf"), "--cluster-node-timeout", "5000",
        )
        if failure is not None:
            tmp.cleanup()
            return failure
    nodes = [f"127.0.0.1:{p}" for p in ports]
    failure = wait_until(lambda: _ping_nodes(cli, ports), 20)
    if failure is None:
        failure = run_checked(
            [cli, "--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes"],
            "redis-cli --cluster create",
        )
    url = f"redis+cluster://{nodes[0]}"
    if failure is None:
        failure = wait_until(lambda: _cluster_ok(cli, ports), 30)
    if failure is None:
        failure = wait_until(lambda: _probe(url), 20)
    if failure is not None:
        tmp.cleanup()
        return f"no throwaway cluster: {failure}"
    return Found(url, f"throwaway cluster of {_NODES} nodes {', '.join(nodes)}")


async def _ping_nodes(cli: str, ports: list[int]) -> None:
    for port in ports:
        _cli(cli, port, "ping", expect="PONG")


async def _cluster_ok(cli: str, ports: list[int]) -> None:
    for port in ports:
        _cli(cli, port, "cluster", "info", expect="cluster_state:ok")


def _cli(cli: str, port: int, *args: str, expect: str) -> None:
    done = subprocess.run(
        [cli, "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True, text=True, timeout=10, check=False,
    )
    if expect not in done.stdout:
        raise RuntimeError(f"node {port}: {(done.stdout or done.stderr).strip()[:200]}")


def session_url(request: pytest.FixtureRequest, *, cluster: bool = False) -> str:
    """A store URL under a fresh key prefix, dropped when the session ends. Skips or fails
    when the server is unreachable."""
    backend = CLUSTER if cluster else STANDALONE
    found = find_cluster() if cluster else find()
    if isinstance(found, str):
        unreachable(backend, found)
    name = asyncio.run(create_namespace(found.url))
    request.addfinalizer(lambda: asyncio.run(drop_namespace(found.url, name)))
    ran(backend, found.how)
    return store_url(found.url, name)
