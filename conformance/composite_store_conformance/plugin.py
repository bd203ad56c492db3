"""The pytest plugin: fixtures, markers and the runner of the suite's async tests.

Registered through the ``pytest11`` entry point, so installing composite-store-conformance is
enough. A backend supplies one fixture, ``store_factory``; see ``composite_store_conformance``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from composite_store.store import Store
from composite_store_conformance.base import Suite

__all__ = ["pytest_configure"]

_RUNNER_KEY = pytest.StashKey[asyncio.Runner]()
_STORES_KEY = pytest.StashKey[dict[int, Store]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires(*capabilities): the test needs these capabilities of the suite's domain; "
        "skipped where the backend does not claim them",
    )
    config.addinivalue_line("markers", "conformance: a composite-store conformance test")


def runner(config: pytest.Config) -> asyncio.Runner:
    """The one event loop every conformance test and store of this session runs on."""
    found = config.stash.get(_RUNNER_KEY, None)
    if found is None:
        found = asyncio.Runner()
        config.stash[_RUNNER_KEY] = found
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark suite tests, and turn each class's ``known_gaps`` into strict xfails."""
    for item in items:
        cls = getattr(item, "cls", None)
        if cls is None or not issubclass(cls, Suite):
            continue
        item.add_marker(pytest.mark.conformance)
        name = getattr(item, "originalname", item.name)
        reason = cls.known_gaps.get(name)
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=f"known gap: {reason}", strict=True))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run the suite's ``async def`` tests on the session's event loop."""
    cls = getattr(pyfuncitem, "cls", None)
    if cls is None or not issubclass(cls, Suite) or not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    runner(pyfuncitem.config).run(pyfuncitem.obj(**kwargs))
    return True


def pytest_unconfigure(config: pytest.Config) -> None:
    found = config.stash.get(_RUNNER_KEY, None)
    if found is None:
        return
    for store in config.stash.get(_STORES_KEY, {}).values():
        # Closing at exit must not hide the test results.
        with contextlib.suppress(Exception):
            found.run(store.close())
    found.close()


@pytest.fixture
def store_factory() -> Any:
    """Override this fixture: return a ``Store`` (or a zero-argument callable returning one).

    It should point at a throwaway namespace provisioned for the test session (a temporary
    file, a schema, a database, a key prefix); the suite initializes the domains each test
    needs and clears them between tests with ``dangerously_clear_all()``.
    """
    raise pytest.UsageError(
        "composite_store_conformance: define a `store_factory` fixture returning a Store "
        "(or a callable returning one), e.g. `return open_store('sqlite:///' + str(tmp))`"
    )


def _session_store(request: pytest.FixtureRequest, factory: Any) -> Store:
    stores = request.config.stash.setdefault(_STORES_KEY, {})
    key = id(factory)
    if key not in stores:
        store = factory if isinstance(factory, Store) else factory()
        if not isinstance(store, Store):
            raise pytest.UsageError(f"store_factory gave {type(store).__name__}, not a Store")
        stores[key] = store
    return stores[key]


@pytest.fixture
def run(request: pytest.FixtureRequest) -> Callable[[Any], Any]:
    """Run a coroutine on the session's event loop (for synchronous helpers and fixtures)."""
    loop_runner = runner(request.config)
    return lambda coro: loop_runner.run(coro)


@pytest.fixture
def store(request: pytest.FixtureRequest, store_factory: Any) -> Iterator[Store]:
    """The backend's store with the suite's domains initialized and empty."""
    cls = request.cls
    if cls is None or not issubclass(cls, Suite):
        raise pytest.UsageError("the `store` fixture is for conformance Suite classes")
    loop_runner = runner(request.config)
    store = _session_store(request, store_factory)
    for name in cls.domains:
        domain = store.get(name)
        if domain is None:
            pytest.skip(f"{store.backend} does not offer the {name} domain")
    # init() first: a backend may learn its capabilities from the server (MongoDB has
    # transactions on a replica set only).
    for name in cls.domains:
        domain = store.get(name)
        assert domain is not None
        loop_runner.run(domain.init())
    needs = [m.args for m in request.node.iter_markers("requires")]
    primary = store.get(cls.domains[0]) if cls.domains else None
    for capabilities in needs:
        for capability in capabilities:
            if primary is not None and not getattr(primary.capabilities, capability):
                pytest.skip(f"{primary.backend} does not claim {capability}")
    for name in cls.domains:
        domain = store.get(name)
        assert domain is not None
        loop_runner.run(domain.dangerously_clear_all())
    yield store
