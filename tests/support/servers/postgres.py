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

__all__ = ["BACKEND", "find", "reached", "session_url"]

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


class ThrowawayPostgres:
    """A cluster of its own (initdb + pg_ctl) on a free loopback port, stopped at process exit.

    ``stop``/``start``/``restart`` act on the same data directory, so what a test wrote
    survives a restart: the reliability tests (tests/reliability) stop servers under load.
    """

    def __init__(self, bindir: Path, *, fsync: bool = False) -> None:
        self.tmp = ThrowawayDir("composite-store-pg-")
        self.bindir, self.port = bindir, free_port()
        self.data = self.tmp.path / "data"
        self.fsync = fsync
        # initdb and postgres refuse to run as root: run them as the postgres user.
        self.as_user: list[str] = []
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @classmethod
    def create(cls, *, fsync: bool = False) -> ThrowawayPostgres | str:
        """initdb and start a new cluster, or say why it cannot be done here."""
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            return "no PostgreSQL binaries under /usr/lib/postgresql/*/bin"
        server = cls(Path(found[-1]).parent, fsync=fsync)
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                server.tmp.cleanup()
                return "running as root and there is no 'postgres' user to run the server as"
            shutil.chown(server.tmp.path, account.pw_uid, account.pw_gid)
            server.as_user = ["runuser", "-u", "postgres", "--"]
        failure = run_checked(
            [*server.as_user, str(server.bindir / "initdb"), "-D", str(server.data), "-U",
             "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
            "initdb",
        )
        server.tmp.on_cleanup(lambda: server.stop(mode="immediate"))
        failure = failure or server.start()
        if failure:
            server.tmp.cleanup()
            return failure
        return server

    def _pg_ctl(self, *args: str) -> str | None:
        return run_checked(
            [*self.as_user, str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
            f"pg_ctl {args[-1]}",
        )

    def start(self) -> str | None:
        """Start the server and wait until it answers; None, or why it did not."""
        options = f"-p {self.port} -k {self.tmp.path} -c listen_addresses=127.0.0.1"
        if not self.fsync:
            options += " -c fsync=off"
        failure = self._pg_ctl(
            "-l", str(self.tmp.path / "server.log"), "-o", options, "-w", "-t", "60", "start"
        )
        if failure:
            return failure
        failure = wait_until(lambda: _probe(self.url), 30)
        return f"throwaway server did not answer: {failure}" if failure else None

    def stop(self, *, mode: str = "fast") -> str | None:
        """Stop the server (``fast``: abort sessions, clean shutdown; ``immediate``: a crash)."""
        return self._pg_ctl("-m", mode, "-w", "stop")

    @property
    def how(self) -> str:
        return f"throwaway server 127.0.0.1:{self.port} ({self.bindir.parent.name})"


def start_throwaway() -> Found | str:
    """Start a throwaway cluster on a free port; stopped at process exit."""
    server = ThrowawayPostgres.create()
    if isinstance(server, str):
        return server
    return Found(server.url, server.how)


def reached() -> Found:
    """The server of :func:`find`, recorded as the one this run reached (``ran``); without one,
    the calling test skips, or fails where PostgreSQL is required (``unreachable``)."""
    found = find()
    if isinstance(found, str):
        unreachable(BACKEND, found)
    ran(BACKEND, found.how)
    return found


def session_url(request: pytest.FixtureRequest, **query: str) -> str:
    """A store URL in a fresh schema, dropped when the session ends; ``query`` adds URL
    parameters (``options="-c timezone=Asia/Tokyo"``). Skips or fails when unreachable."""
    found = reached()
    name = asyncio.run(create_namespace(found.url))
    request.addfinalizer(lambda: asyncio.run(drop_namespace(found.url, name)))
    url = store_url(found.url, name)
    for key, value in query.items():
        url += f"&{key}={value.replace(' ', '%20').replace('=', '%3D')}"
    return url
