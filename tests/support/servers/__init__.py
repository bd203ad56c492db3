"""Finding a real server for a backend's tests: an environment URL, the local server, or a
throwaway one started from the Debian binaries (DESIGN.md section 6).

Each backend module offers one cached ``find()`` returning a :class:`Found` or the reason
none was found; throwaway servers stop when the test process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Found", "ThrowawayDir", "discover", "free_port", "reachable", "wait_until"]


@dataclass(frozen=True)
class Found:
    """A server the tests may use: an admin URL and how it was found (for the summary)."""

    url: str
    how: str


def discover(
    *,
    env: str,
    service: str,
    docker_template: str,
    probe: Callable[[str], Awaitable[object]],
    docker: Callable[[str, str, Callable[[str], Awaitable[object]]], Found | None],
    local: tuple[str, str] | None = None,
    throwaway: Callable[[], Found | str] | None = None,
) -> Found | str:
    """The server a backend's tests use, in DESIGN.md section 6's order: the URL in ``env``,
    else the Docker compose ``service`` (where an engine answers), else the ``local`` (URL, how)
    server, else a ``throwaway`` one; or why there is none. ``docker`` is
    ``servers.docker.docker_found`` (passed in, so tests can stand in for it)."""
    from composite_store.errors import redact

    url = os.environ.get(env)
    if url:
        failure = reachable(lambda: probe(url))
        return Found(url, f"{env}={redact(url)}") if failure is None else f"{env}: {failure}"
    from_docker = docker(service, docker_template, probe)
    if from_docker is not None:
        return from_docker
    reasons = []
    if local is not None:
        local_url, how = local
        failure = reachable(lambda: probe(local_url))
        if failure is None:
            return Found(local_url, how)
        reasons.append(f"no local server ({failure})")
    if throwaway is not None:
        started = throwaway()
        if isinstance(started, Found):
            return started
        reasons.append(f"no throwaway server ({started})")
    return "; ".join(reasons) or f"no server here; set {env}"


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def reachable(probe: Callable[[], Awaitable[object]]) -> str | None:
    """Run ``probe`` on a fresh event loop; None when it worked, else why it failed."""
    try:
        asyncio.run(probe())
    except Exception as exc:  # noqa: BLE001 - any failure means "not this server"
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return None


def wait_until(probe: Callable[[], Awaitable[object]], seconds: float) -> str | None:
    """Probe until it works or ``seconds`` pass; None when it worked, else the last failure."""
    deadline = time.monotonic() + seconds
    while True:
        failure = reachable(probe)
        if failure is None or time.monotonic() > deadline:
            return failure
        time.sleep(0.3)


class ThrowawayDir:
    """A temporary directory for one throwaway server, removed (after ``stop``) at exit."""

    def __init__(self, prefix: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        self._stops: list[Callable[[], None]] = []
        atexit.register(self.cleanup)

    def on_cleanup(self, stop: Callable[[], None]) -> None:
        self._stops.append(stop)

    def cleanup(self) -> None:
        for stop in reversed(self._stops):
            with contextlib.suppress(Exception):
                stop()
        self._stops.clear()
        shutil.rmtree(self.path, ignore_errors=True)


def run_checked(args: list[str], what: str, timeout: float = 120) -> str | None:
    """Run a setup command; None on success, else a one-line reason with its output's tail."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{what} failed: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"{what} exited {done.returncode}: {tail[0][:200]}"
    return None
