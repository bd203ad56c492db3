"""Which backends this test run reached, and the rule for one it cannot reach.

A backend fixture calls :func:`ran` once it has a live store and :func:`unreachable` when it
has none: that skips with the reason, or fails when the backend is listed in
``COMPOSITE_STORE_REQUIRE_BACKENDS`` (CI lists every backend the machine can run).
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["RAN", "SKIPPED", "ran", "required", "unreachable"]

#: backend -> how it was reached (URL or "throwaway server"), for the summary.
RAN: dict[str, str] = {}
#: backend -> why it was skipped.
SKIPPED: dict[str, str] = {}


def required() -> set[str]:
    """Backends that must run (``COMPOSITE_STORE_REQUIRE_BACKENDS=sqlite,postgres,...``)."""
    raw = os.environ.get("COMPOSITE_STORE_REQUIRE_BACKENDS", "")
    return {b.strip() for b in raw.split(",") if b.strip()}


def ran(backend: str, how: str) -> None:
    RAN[backend] = how


def unreachable(backend: str, reason: str) -> NoReturn:
    """Skip (or, when required, fail) every test of ``backend``."""
    if backend in required():
        SKIPPED.pop(backend, None)
        pytest.fail(
            f"{backend} is required by COMPOSITE_STORE_REQUIRE_BACKENDS but unreachable: {reason}",
            pytrace=False,
        )
    SKIPPED[backend] = reason
    pytest.skip(f"{backend} unreachable: {reason}")
