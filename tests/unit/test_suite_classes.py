"""``suite_classes``: one test class per conformance suite, named for the backend."""

from __future__ import annotations

import inspect

import pytest
from composite_store_conformance import (
    SUITES,
    MemorySuite,
    RouterSuite,
    SchemaSuite,
    Suite,
    suite_classes,
)
from composite_store_conformance.base import LOOP_FIXTURE


def test_every_suite_once_named_for_the_backend_and_made_here() -> None:
    classes = suite_classes("Acme")
    assert list(classes) == [f"TestAcme{s.__name__.removesuffix('Suite')}" for s in SUITES]
    for (name, cls), suite in zip(classes.items(), SUITES, strict=True):
        assert cls.__name__ == cls.__qualname__ == name
        assert cls.__bases__ == (suite,)
        assert cls.__module__ == __name__


def test_without_leaves_suites_out() -> None:
    classes = suite_classes("Acme", without=(SchemaSuite, RouterSuite))
    every = {f"TestAcme{s.__name__.removesuffix('Suite')}" for s in SUITES}
    assert set(classes) == every - {"TestAcmeSchema", "TestAcmeRouter"}


def test_without_refuses_what_is_not_a_suite() -> None:
    class Mine(MemorySuite):
        pass

    with pytest.raises(ValueError, match=r"not conformance suites: Mine; known: MemorySuite, "):
        suite_classes("Acme", without=(Mine,))


def test_suite_tests_are_plain_functions_asking_for_the_loop() -> None:
    """No async plugin may take them for its own: they are not coroutine functions."""
    test = MemorySuite.test_save_and_get_thread_round_trips
    assert not inspect.iscoroutinefunction(test)
    assert list(inspect.signature(test).parameters) == ["self", "cs_store", LOOP_FIXTURE]

    class Mine(Suite):
        async def test_mine(self, tmp_path: object) -> None:
            pass

        async def helper(self) -> None:
            pass

    assert not inspect.iscoroutinefunction(Mine.test_mine)
    assert inspect.iscoroutinefunction(Mine.helper)
