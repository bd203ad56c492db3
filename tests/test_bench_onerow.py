"""``python -m bench.onerow`` and its Mastra twin ``bench/onerow_mastra.mjs`` cannot rot: a few
calls of each kind on PostgreSQL (the library with the real driver and with the stub; Mastra
where ``COMPOSITE_STORE_TEST_MASTRA_NODE`` names a folder holding tests/data/mastra's packages,
as CI's Mastra interop step installs them) print a row per call and repetition. No timing is
asserted."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.onerow import main
from tests.support.servers import postgres

CALLS = ("snapshot save", "thread save", "working-memory read")
#: A row: call, repetition, user, system and wall us, and (the library's tool only) the CPU
#: spent awaiting the driver.
ROW = re.compile(
    r"^\| ([a-z -]+) \| (\d) \| ([\d.]+) \| ([\d.]+) \| (\d+) \|(?: ([\d.]+) \|)?$", re.MULTILINE
)
MASTRA_NODE = "COMPOSITE_STORE_TEST_MASTRA_NODE"


def _calls(out: str) -> list[tuple[str, str]]:
    return [(name, rep) for name, rep, *_ in ROW.findall(out)]


def _driver_shares(out: str) -> list[tuple[float, float]]:
    """Each row's client CPU (user + system) and the part of it spent awaiting the driver."""
    rows = ROW.findall(out)
    assert all(driver for *_, driver in rows), "a row without the driver's share"
    return [(float(user) + float(system), float(driver)) for *_, user, system, _, driver in rows]


@pytest.mark.parametrize("stub", [False, True], ids=["driver", "stubbed"])
def test_every_call_is_measured(stub: bool, capsys: pytest.CaptureFixture[str]) -> None:
    schema = f"onerow_{secrets.token_hex(4)}"
    argv = ["--url", postgres.reached().url, "--calls", "3", "--reps", "2", "--schema", schema]
    assert main([*argv, "--stub"] if stub else argv) == 0
    out = capsys.readouterr().out
    assert _calls(out) == [(c, r) for r in "12" for c in CALLS]
    shares = _driver_shares(out)
    # A share of the process's CPU (printed to 0.1 us); a real driver sends and reads, so
    # some of it is spent there on every call.
    assert all(driver <= total + 0.2 for total, driver in shares), out
    if not stub:
        assert all(driver > 0 for _, driver in shares), out


def test_mastra_makes_the_same_calls() -> None:
    node_modules = os.environ.get(MASTRA_NODE)
    if not node_modules:
        pytest.skip(f"set {MASTRA_NODE} to a folder with tests/data/mastra's packages installed")
    node = shutil.which("node")
    assert node is not None, "Node.js is needed to run Mastra"
    script = Path(__file__).resolve().parent.parent / "bench" / "onerow_mastra.mjs"
    url = postgres.reached().url.replace("postgresql+psycopg://", "postgresql://")
    argv = [node, str(script), "--harness-node", node_modules, "--url", url]
    done = subprocess.run(
        [*argv, "--calls", "3", "--reps", "2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _calls(done.stdout) == [(c, r) for r in "12" for c in CALLS]
