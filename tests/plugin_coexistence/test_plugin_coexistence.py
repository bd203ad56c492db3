"""The conformance plugin in a user's test suite, beside pytest-asyncio and anyio.

Each test writes a small suite with ``pytester`` and runs it in a fresh pytest process: the
conformance classes on a SQLite file, and beside them the user's own ``store`` and ``run``
fixtures and ``async def`` tests run by the other plugin. The suite's tests must still run on
the conformance plugin's loop (where the store was initialized), the user's on theirs, and the
names must not meet. Plugins are loaded explicitly (autoload off), as a user would list them.
"""

from __future__ import annotations

import importlib.util

import pytest

CONFTEST = '''
import pytest
from composite_store import open_store

pytest_plugins = ["composite_store_conformance.plugin"]


@pytest.fixture(scope="session")
def cs_store_factory(tmp_path_factory):
    return open_store(f"sqlite:///{tmp_path_factory.mktemp('db') / 'conformance.db'}")


@pytest.fixture
def run():
    """The user's own `run`: nothing to do with the plugin's `cs_run`."""
    return "the user's run"
'''

CONFORMANCE = '''
from composite_store_conformance import suite_classes

globals().update(suite_classes("Sqlite"))
'''

#: The user's own async ``store`` fixture and tests; ``{fixture}`` and ``{mark}`` are the
#: other plugin's spelling.
USER = '''
import asyncio

import pytest
{imports}
from composite_store import Thread, open_store


{fixture}
async def store():
    """The user's own `store`, opened on the loop of the user's async plugin."""
    opened = open_store("memory://")
    await opened.init()
    yield opened
    await opened.close()


{mark}
async def test_user_store_works_on_its_own_loop(store, run):
    assert run == "the user's run"
    thread = Thread(id="t1", resource_id="r1", title="mine")
    await store.memory.save_thread(thread=thread)
    assert (await store.memory.get_thread_by_id(thread_id="t1")).title == "mine"
    await asyncio.sleep(0)


def test_user_sync_test(run):
    assert run == "the user's run"
'''


def _suite(pytester: pytest.Pytester, *, imports: str, fixture: str, mark: str) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_conformance=CONFORMANCE,
        test_user=USER.format(imports=imports, fixture=fixture, mark=mark),
    )


def _run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-rfE", *args)


def _assert_all_ran(result: pytest.RunResult, *, user_tests: int, at_least: int) -> None:
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and "errors" not in outcomes, result.stdout.str()[-4000:]
    # The user's tests ran (none skipped as "async def functions are not natively supported").
    result.stdout.no_fnmatch_line("*not natively supported*")
    assert outcomes.get("passed", 0) >= at_least + user_tests, outcomes


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def test_beside_pytest_asyncio_in_auto_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Auto mode takes every ``async def`` test and fixture: the suite's included, were they
    coroutine functions. The whole suite passes on SQLite beside the user's async fixture."""
    _needs("pytest_asyncio")
    _suite(pytester, imports="", fixture="@pytest.fixture", mark="")
    result = _run(pytester, monkeypatch, "-p", "pytest_asyncio.plugin", "-o", "asyncio_mode=auto")
    _assert_all_ran(result, user_tests=2, at_least=500)


def test_beside_pytest_asyncio_in_strict_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _needs("pytest_asyncio")
    _suite(
        pytester,
        imports="import pytest_asyncio",
        fixture="@pytest_asyncio.fixture",
        mark="@pytest.mark.asyncio",
    )
    result = _run(
        pytester, monkeypatch, "-p", "pytest_asyncio.plugin", "-o", "asyncio_mode=strict",
        "-k", "Memory or Router or user",
    )
    _assert_all_ran(result, user_tests=2, at_least=80)


def test_beside_anyio(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs("anyio")
    _suite(pytester, imports="", fixture="@pytest.fixture", mark="@pytest.mark.anyio")
    pytester.makeconftest(
        CONFTEST + '\n\n@pytest.fixture\ndef anyio_backend():\n    return "asyncio"\n'
    )
    result = _run(pytester, monkeypatch, "-p", "anyio.pytest_plugin", "-k", "Memory or user")
    _assert_all_ran(result, user_tests=2, at_least=50)


def test_without_the_plugin_nothing_is_collected_from_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installing the package loads nothing: a suite that does not opt in has no ``cs_``
    fixtures, and its own ``store`` is its own."""
    pytester.makepyfile(
        test_plain='''
import pytest


@pytest.fixture
def store():
    return "mine"


def test_own_store(store, request):
    assert store == "mine"
    assert "cs_store" not in request.fixturenames
    with pytest.raises(pytest.FixtureLookupError):
        request.getfixturevalue("cs_store")
'''
    )
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1)


def test_a_known_gap_that_passes_fails_strictly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known gaps are read from the store under test and are strict xfails."""
    pytester.makeconftest(
        CONFTEST.replace(
            "    return open_store(",
            "    return Gappy(",
        ).replace(
            "from composite_store import open_store",
            "from composite_store.sql.sqlite import SqliteStore\n\n\n"
            "class Gappy(SqliteStore):\n"
            '    known_gaps = {"test_get_missing_thread_returns_none": "declared, yet it passes"}',
        )
    )
    pytester.makepyfile(test_conformance=CONFORMANCE)
    result = _run(pytester, monkeypatch, "-k", "TestSqliteMemory and missing_thread_returns_none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*known gap: declared, yet it passes*"])


def test_a_backend_written_to_design_md_section_5(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN.md's contract for backend authors: one ``store_factory`` fixture and one-line
    subclasses of the ``*Suite`` classes. The plugin serves the suite from that fixture."""
    pytester.makeconftest(
        '''
import pytest
from composite_store import open_store

pytest_plugins = ["composite_store_conformance.plugin"]


@pytest.fixture(scope="session")
def store_factory(tmp_path_factory):
    return open_store(f"sqlite:///{tmp_path_factory.mktemp('db') / 'conformance.db'}")
'''
    )
    pytester.makepyfile(
        test_mine='''
from composite_store_conformance import MemorySuite, WorkflowsSuite


class TestMineMemory(MemorySuite):
    pass


class TestMineWorkflows(WorkflowsSuite):
    pass
'''
    )
    result = _run(pytester, monkeypatch)
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and "errors" not in outcomes, result.stdout.str()[-3000:]
    assert outcomes.get("passed", 0) >= 80, outcomes
