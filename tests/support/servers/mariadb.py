"""A MariaDB server for the tests: ``COMPOSITE_STORE_TEST_MARIADB_URL``, else the ``mariadb``
service of docker/docker-compose.yml where a Docker engine answers, else the local server
(127.0.0.1:3306, root without password), else a throwaway server started from the Debian
binaries (mariadb-install-db + mariadbd) on a free loopback port."""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess

import pytest
from composite_store_mysql.provision import create_namespace, drop_namespace, store_url

from tests.support.backends import ran, unreachable
from tests.support.servers import Found, ThrowawayDir, discover, free_port, run_checked, wait_until
from tests.support.servers.docker import docker_found

__all__ = ["BACKEND", "find", "session_url"]

BACKEND = "mariadb"
ENV = "COMPOSITE_STORE_TEST_MARIADB_URL"
LOCAL = "mysql://root@127.0.0.1:3306/?connect_timeout=5"
DOCKER = "mysql://root:composite@{host}:{port}/?connect_timeout=5"


async def _probe(url: str) -> None:
    """Works only where the tests can work: connect, and create and drop a database."""
    await drop_namespace(url, await create_namespace(url))


@functools.cache
def find() -> Found | str:
    """The server to test against, or why there is none (looked up once per process)."""
    return discover(
        env=ENV,
        service="mariadb",
        docker_template=DOCKER,
        probe=_probe,
        docker=docker_found,
        local=(LOCAL, "local server 127.0.0.1:3306"),
        throwaway=start_throwaway,
    )


def start_throwaway() -> Found | str:
    """Start a throwaway server on a free port; stopped at process exit."""
    install = shutil.which("mariadb-install-db")
    server = shutil.which("mariadbd", path=os.environ.get("PATH", "") + ":/usr/sbin")
    if install is None or server is None:
        return "mariadb-install-db or mariadbd is not installed"
    tmp = ThrowawayDir("composite-store-mariadb-")
    data, port = tmp.path / "data", free_port()
    # mariadbd refuses to run as root unless told to; the directory is ours either way.
    user = ["--user=root"] if os.geteuid() == 0 else []
    failure = run_checked(
        [install, "--no-defaults", f"--datadir={data}", *user, "--skip-test-db",
         "--auth-root-authentication-method=normal"],
        "mariadb-install-db",
    )
    if failure:
        tmp.cleanup()
        return failure
    log = open(tmp.path / "server.log", "wb")  # noqa: SIM115 - closed by the cleanup below
    process = subprocess.Popen(
        [server, "--no-defaults", f"--datadir={data}", *user, f"--port={port}",
         "--bind-address=127.0.0.1", f"--socket={tmp.path / 'mariadb.sock'}",
         f"--pid-file={tmp.path / 'mariadb.pid'}", "--skip-name-resolve",
         "--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def stop() -> None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()

    tmp.on_cleanup(stop)
    # install-db creates root@127.0.0.1 without a password (authentication "normal"), and
    # --skip-name-resolve matches TCP clients by address, so that account is the one used.
    url = f"mysql://root@127.0.0.1:{port}/"
    failure = wait_until(lambda: _probe(url), 60)
    if failure:
        tmp.cleanup()
        return f"throwaway server did not answer: {failure}"
    return Found(url, f"throwaway server 127.0.0.1:{port}")


def session_url(request: pytest.FixtureRequest) -> str:
    """A store URL in a fresh database, dropped when the session ends. Skips or fails when
    unreachable."""
    found = find()
    if isinstance(found, str):
        unreachable(BACKEND, found)
    name = asyncio.run(create_namespace(found.url))
    request.addfinalizer(lambda: asyncio.run(drop_namespace(found.url, name)))
    ran(BACKEND, found.how)
    return store_url(found.url, name)
