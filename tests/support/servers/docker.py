"""Servers from ``docker/docker-compose.yml``, where a Docker engine answers (DESIGN.md section 6).

Each backend's discovery asks here between its ``COMPOSITE_STORE_TEST_<BACKEND>_URL`` variable
and its local server, so the order is: environment URL, else Docker, else a local server::

    found = docker_found("postgres", "postgresql://composite:composite@{host}:{port}/composite",
                         _probe)

The first request for a service starts it through pytest-docker's ``get_docker_services``
(``docker compose up --wait SERVICE``: returns once the healthcheck passes), once per test
process; the services this process started are removed when it exits. Only the services a run
asks for start, so a run of the PostgreSQL tests never pulls Oracle.

Docker is a convenience, never a requirement: where no engine answers (``docker`` missing, no
daemon, or a daemon that does not reply within :data:`ENGINE_TIMEOUT` seconds) every call
returns None at once and discovery goes on to the local server. ``COMPOSITE_STORE_TEST_DOCKER``
tunes this: ``0`` never uses Docker, ``keep`` leaves started services running after the tests.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml
from pytest_docker.plugin import Services, get_docker_ip, get_docker_services

from composite_store.errors import redact
from tests.support.servers import Found, wait_until

__all__ = [
    "COMPOSE_FILE",
    "CONTROL",
    "PROJECT",
    "docker_found",
    "docker_url",
    "engine_answers",
    "published_ports",
    "shutdown",
]

COMPOSE_FILE = Path(__file__).resolve().parents[3] / "docker" / "docker-compose.yml"
#: The compose project: the file's own ``name:``, so services a developer started by hand with
#: ``docker compose -f docker/docker-compose.yml up`` are the ones the tests find.
PROJECT = "composite-store-test"
#: ``0`` (or ``false``/``no``/``off``): never use Docker; ``keep``: leave started services up.
CONTROL = "COMPOSITE_STORE_TEST_DOCKER"
#: Seconds ``docker info`` and ``docker compose version`` may take before the engine counts as
#: absent: a hung daemon socket must not hang the test session.
ENGINE_TIMEOUT = 5.0
#: Seconds ``docker compose up --wait`` gives a service's healthcheck (image pulls come first
#: and are not counted: pull ahead with ``docker compose -f docker/docker-compose.yml pull``).
STARTUP_TIMEOUT = 600
#: Seconds the backend's own probe gets once the healthcheck passed.
PROBE_SECONDS = 30


def _control() -> str:
    return os.environ.get(CONTROL, "").strip().lower()


def _run(args: list[str], timeout: float) -> str | None:
    """stdout of ``args`` when it exits 0 within ``timeout`` seconds, else None.

    The command runs in its own process group, killed whole on timeout: the docker CLI may
    start plugin helpers that would otherwise keep its output pipe open.
    """
    try:
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None
    return out.decode(errors="replace") if process.returncode == 0 else None


@functools.cache
def engine_answers() -> bool:
    """Whether a Docker engine answers ``docker info`` within :data:`ENGINE_TIMEOUT` seconds
    (looked up once per process)."""
    docker = shutil.which("docker")
    if docker is None:
        return False
    version = _run([docker, "info", "--format", "{{.ServerVersion}}"], ENGINE_TIMEOUT)
    return bool(version and version.strip())


def published_ports(service: str) -> list[tuple[int, int]]:
    """``(host port, container port)`` pairs ``service`` publishes in the compose file."""
    spec = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))["services"][service]
    pairs = []
    for entry in spec.get("ports", []):
        # "127.0.0.1:55432:5432" or "55432:5432": the last two fields are host and container.
        host, container = str(entry).rsplit(":", 2)[-2:]
        pairs.append((int(host), int(container)))
    return pairs


class _Session:
    """The services this process asked for: started once each, removed at exit."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._started: dict[str, Services | str] = {}

    def services(self, service: str) -> Services | str:
        """The running ``service`` (started now if need be), or why it could not start."""
        if service not in self._started:
            self._started[service] = self._start(service)
        return self._started[service]

    def _start(self, service: str) -> Services | str:
        docker = shutil.which("docker")
        if docker is None:
            return "docker is not on PATH"
        compose = [docker, "compose", "-f", str(COMPOSE_FILE), "-p", PROJECT]
        if _run([docker, "compose", "version"], ENGINE_TIMEOUT) is None:
            return "the Docker engine answers but `docker compose` (the Compose plugin) does not"
        running = _run([*compose, "ps", "--status", "running", "--services"], ENGINE_TIMEOUT)
        # A service someone else started (by hand, or another test run) is theirs to stop.
        ours = service not in (running or "").split()
        keep = _control() == "keep" or not ours
        try:
            return self._stack.enter_context(
                get_docker_services(
                    f"{shlex.quote(docker)} compose",
                    str(COMPOSE_FILE),
                    PROJECT,
                    [f"up --wait --wait-timeout {STARTUP_TIMEOUT} {service}"],
                    [] if keep else [f"rm --stop --force --volumes {service}"],
                )
            )
        except Exception as exc:  # noqa: BLE001 - pytest-docker raises a bare Exception
            if not keep:  # a container that never became healthy is not left behind
                _run([*compose, "rm", "--stop", "--force", "--volumes", service], 120)
            return f"docker compose up {service} failed: {str(exc).strip()[-500:]}"

    def close(self) -> None:
        try:
            self._stack.close()
        except Exception as exc:  # noqa: BLE001 - at exit: say so, without a traceback
            print(f"could not remove Docker test services: {exc}", file=sys.stderr)
        finally:
            self._started.clear()


_SESSION = _Session()


def shutdown() -> None:
    """Remove the services this process started (registered to run at exit)."""
    _SESSION.close()


# At exit, like the throwaway servers: discovery runs outside any fixture's lifetime.
atexit.register(shutdown)


def docker_url(service: str, url_template: str) -> str | None:
    """The URL of compose service ``service``, started and healthy; None when no Docker engine
    answers (at once), when Docker is turned off, or when the service cannot start (with a
    warning saying why).

    ``url_template`` is formatted with ``host`` (where the engine publishes ports) and ``port``
    (the host port of the service's first published port), e.g.
    ``"redis://{host}:{port}/0"``.
    """
    if _control() in {"0", "false", "no", "off"} or not engine_answers():
        return None
    services = _SESSION.services(service)
    if isinstance(services, str):
        warnings.warn(f"not using Docker for {service}: {services}", RuntimeWarning, stacklevel=2)
        return None
    try:
        container_port = published_ports(service)[0][1]
        port = services.port_for(service, container_port)
    except Exception as exc:  # noqa: BLE001 - a compose or file error means "not Docker"
        warnings.warn(f"not using Docker for {service}: {exc}", RuntimeWarning, stacklevel=2)
        return None
    return url_template.format(host=get_docker_ip(), port=port)


def docker_found(
    service: str, url_template: str, probe: Callable[[str], Awaitable[Any]]
) -> Found | None:
    """:func:`docker_url` checked with the backend's own ``probe``; None (with a warning when
    the service started but does not pass the probe) lets discovery go on to a local server."""
    url = docker_url(service, url_template)
    if url is None:
        return None
    failure = wait_until(lambda: probe(url), PROBE_SECONDS)
    if failure is not None:
        warnings.warn(
            f"not using Docker for {service}: {redact(url)} does not answer: {failure}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return Found(url, f"docker compose service {service} ({redact(url)})")
