"""The conformance modules of each client-side backend family once more, in a process whose local
time zone is America/New_York (``TZ``), so a timestamp written or parsed in local time fails.

A machine (or CI runner) in UTC cannot tell local time from UTC; ``time.tzset()`` in a fixture
would shift the whole test session, so each family runs in its own ``python -m pytest``
subprocess. PostgreSQL has its own module for this (``test_postgres_tz.py``: server and client
zones both shifted). A server backend that is not reachable skips inside the subprocess as it
would here; ``COMPOSITE_STORE_REQUIRE_BACKENDS``, narrowed to the family, makes that a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIFTED = "America/New_York"

#: family -> the backends (``tests.support.backends.ran`` names) whose conformance modules
#: (``tests/conformance/test_<backend>.py``) run it.
FAMILIES: dict[str, list[str]] = {
    "sqlite": ["sqlite", "libsql"],
    "memory": ["inmemory"],
    "redis": ["redis"],
    "mongodb": ["mongodb"],
}


def _env(backends: Sequence[str] = ()) -> dict[str, str]:
    env = {**os.environ, "TZ": SHIFTED}
    # The subprocess runs only these backends: it must require those of them required here.
    wanted = set(os.environ.get("COMPOSITE_STORE_REQUIRE_BACKENDS", "").split(","))
    env["COMPOSITE_STORE_REQUIRE_BACKENDS"] = ",".join(b for b in backends if b in wanted)
    if not env["COMPOSITE_STORE_REQUIRE_BACKENDS"]:
        del env["COMPOSITE_STORE_REQUIRE_BACKENDS"]
    return env


def test_the_subprocess_really_runs_in_the_shifted_zone() -> None:
    # Guard the premise: had TZ been ignored, the runs below would prove nothing.
    probe = "import time; print(time.localtime(0).tm_gmtoff)"
    out = subprocess.run(
        [sys.executable, "-c", probe], env=_env(), capture_output=True, text=True, check=True
    )
    assert int(out.stdout) == -5 * 3600


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_conformance_passes_in_a_shifted_local_time_zone(family: str) -> None:
    command = [
        sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--timeout=240",
        *(f"tests/conformance/test_{backend}.py" for backend in FAMILIES[family]),
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=_env(FAMILIES[family]), capture_output=True, text=True,
        timeout=280,
    )
    tail = "\n".join(done.stdout.splitlines()[-15:])
    failed = f"{family} under TZ={SHIFTED} failed:\n{tail}\n{done.stderr[-2000:]}"
    assert done.returncode == 0, failed
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) > 0, f"nothing passed under TZ={SHIFTED}:\n{tail}"
