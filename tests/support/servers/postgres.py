"""A PostgreSQL server for the tests: ``COMPOSITE_STORE_TEST_POSTGRES_URL``, else the ``postgres``
service of docker/docker-compose.yml where a Docker engine answers, else the local
server (127.0.0.1:5432, user ``postgres``, trust), else a throwaway cluster started from the
Debian binaries on a free loopback port."""

from __future__ import annotations

import asyncio
import functools
import glob
import os
import pwd
import shutil
from pathlib import Path

import pytest
from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

from tests.support.backends import ran, unreachable
from tests.support.servers import Found, ThrowawayDir, discover, free_port, run_checked, wait_until
from tests.support.servers.docker import docker_found

__all__ = ["BACKEND", "find", "session_url"]

BACKEND = "postgres"
ENV = "COMPOSITE_STORE_TEST_POSTGRES_URL"
LOCAL = "postgresql://postgres@127.0.0.1:5432/postgres?connect_timeout=5"
DOCKER = "postgresql://composite:composite@{host}:{port}/composite?connect_timeout=5"


async def _probe(url: str) -> None:
    """Works only where the tests can work: connect, and create and drop a schema."""
    await drop_namespace(url, await create_namespace(url))


@functools.cache
def find() -> Found | str:
    """The server to test against, or why there is none (looked up once per process)."""
    return discover(
        env=ENV,
        service="postgres",
        docker_template=DOCKER,
        probe=_probe,
        docker=docker_found,
        local=(LOCAL, "local server 127.0.0.1:5432"),
        throwaway=start_throwaway,
    )


def start_throwaway() -> Found | str:
    """Start a throwaway cluster (initdb + pg_ctl) on a free port; stopped at process exit."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        return "no PostgreSQL binaries under /usr/lib/postgresql/*/bin"
    bindir = Path(found[-1]).parent
    tmp = ThrowawayDir("composite-store-pg-")
    # initdb and postgres refuse to run as root: run them as the postgres user.
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
        shutil.chown(tmp.path, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = tmp.path / "data", free_port()
    failure = run_checked(
        [*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
         "-E", "UTF8", "--no-sync"],
        "initdb",
    )
    if failure:
        tmp.cleanup()
        return failure
    pg_ctl = [*as_user, str(bindir / "pg_ctl"), "-D", str(data)]
    options = f"-p {port} -k {tmp.path} -c listen_addresses=127.0.0.1 -c fsync=off"
    failure = run_checked(
        [*pg_ctl, "-l", str(tmp.path / "server.log"), "-o", options, "-w", "-t", "60", "start"],
        "pg_ctl start",
    )
    tmp.on_cleanup(lambda: run_checked([*pg_ctl, "-m", "immediate", "stop"], "pg_ctl stop"))
    if failure:
        tmp.cleanup()
        return failure
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    failure = wait_until(lambda: _probe(url), 30)
    if failure:
        tmp.cleanup()
        return f"throwaway server did not answer: {failure}"
    return Found(url, f"throwaway server 127.0.0.1:{port} ({bindir.parent.name})")


def session_url(request: pytest.FixtureRequest, **query: str) -> str:
    """A store URL in a fresh schema, dropped when the session ends; ``query`` adds URL
    parameters (``options="-c timezone=Asia/Tokyo"``). Skips or fails when unreachable."""
    found = find()
    if isinstance(found, str):
        unreachable(BACKEND, found)
    name = asyncio.run(create_namespace(found.url))
    request.addfinalizer(lambda: asyncio.run(drop_namespace(found.url, name)))
    ran(BACKEND, found.how)
    url = store_url(found.url, name)
    for key, value in query.items():
        url += f"&{key}={value.replace(' ', '%20').replace('=', '%3D')}"
    return url
