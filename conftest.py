"""Repository-wide test configuration (tests/ and adapters/<name>/tests/): the per-backend
summary, the rule for required backends and the time spent per backend."""

from __future__ import annotations

import collections
import os
from pathlib import Path

import pytest

from tests.support.backends import RAN, SKIPPED, required

# The conformance suite's plugin is opt-in: the matrix in tests/conformance/ runs it.
# pytester: tests/plugin_coexistence/ runs small user suites beside it.
pytest_plugins = ["composite_store_conformance.plugin", "pytester"]

_seconds: collections.Counter[str] = collections.Counter()


def _backend_of(nodeid: str) -> str:
    path = Path(nodeid.split("::", 1)[0])
    if path.parts[:1] == ("adapters",):
        return f"{path.parts[1]}-adapter"
    return path.stem.removeprefix("test_") if "/conformance/" in f"/{nodeid}" else "core"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds[_backend_of(report.nodeid)] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tr = terminalreporter
    tr.section("composite-store backends")
    for backend, how in sorted(RAN.items()):
        tr.write_line(f"ran      {backend:<14} {how}")
    for backend, why in sorted(SKIPPED.items()):
        tr.write_line(f"skipped  {backend:<14} {why}")
    missing = sorted(required() - set(RAN))
    if missing and os.environ.get("COMPOSITE_STORE_REQUIRE_BACKENDS"):
        tr.write_line(f"REQUIRED BUT NOT RUN: {', '.join(missing)}")
    tr.write_line(
        "seconds per test module group: "
        + ", ".join(f"{k}={v:.1f}" for k, v in sorted(_seconds.items()))
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A required backend whose tests were never collected is a failure too.
    missing = required() - set(RAN)
    if missing and exitstatus == 0 and session.testscollected:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
