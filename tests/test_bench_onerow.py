"""``python -m bench.onerow`` cannot rot: a few calls of each kind on PostgreSQL, with the real
driver and with the stub, print a row per call and repetition (no timing is asserted)."""

from __future__ import annotations

import re
import secrets

import pytest

from bench.onerow import main
from tests.support.backends import ran, unreachable
from tests.support.servers import postgres

CALLS = ("snapshot save", "thread save", "working-memory read")


@pytest.mark.parametrize("stub", [False, True], ids=["driver", "stubbed"])
def test_every_call_is_measured(stub: bool, capsys: pytest.CaptureFixture[str]) -> None:
    found = postgres.find()
    if isinstance(found, str):
        unreachable(postgres.BACKEND, found)
    ran(postgres.BACKEND, found.how)
    schema = f"onerow_{secrets.token_hex(4)}"
    argv = ["--url", found.url, "--calls", "3", "--reps", "2", "--schema", schema]
    assert main([*argv, "--stub"] if stub else argv) == 0
    rows = re.findall(
        r"^\| ([a-z -]+) \| (\d) \| ([\d.]+) \| ([\d.]+) \| (\d+) \|$",
        capsys.readouterr().out,
        re.MULTILINE,
    )
    assert [(name, rep) for name, rep, *_ in rows] == [(c, r) for r in "12" for c in CALLS]
