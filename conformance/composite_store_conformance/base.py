"""``Suite``: the base of every conformance class."""

from __future__ import annotations

from typing import ClassVar

__all__ = ["Suite"]


class Suite:
    """Base of the conformance classes (not collected by itself: its name ends in ``Suite``).

    A backend's test module subclasses each suite in one line::

        class TestSqliteMemory(MemorySuite): pass

    ``known_gaps`` maps a test name to the reason the backend fails it; each becomes a strict
    xfail, so a fixed gap shows up as an unexpected pass.
    """

    #: The domains the suite's tests use; the first one's capabilities gate ``requires``.
    domains: ClassVar[tuple[str, ...]] = ()
    #: Test name -> reason this backend is known to fail it.
    known_gaps: ClassVar[dict[str, str]] = {}
