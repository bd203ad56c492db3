"""The pytest plugin: fixtures, markers and the event loop of the suite's async tests.

Opt-in: a test suite that runs the conformance classes loads it from its conftest.py,
``pytest_plugins = ["composite_store_conformance.plugin"]``, or with
``-p composite_store_conformance.plugin``. Installing the package loads nothing into other
pytest sessions. Its fixtures and markers carry the ``cs_`` prefix so that they never meet a
suite's own ``store`` or ``run``: a backend supplies one fixture, ``cs_store_factory``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from composite_store.store import Store
from composite_store_conformance.base import LOOP_FIXTURE, Suite, capability_skip_reason

__all__ = ["pytest_configure"]

_RUNNER_KEY = pytest.StashKey[asyncio.Runner]()
_STORES_KEY = pytest.StashKey[dict[int, Store]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cs_requires(*capabilities): the test needs these capabilities of the suite's domain; "
        "skipped where the backend does not claim them",
    )
    config.addinivalue_line("markers", "cs_conformance: a composite-store conformance test")


def runner(config: pytest.Config) -> asyncio.Runner:
    """The one event loop every conformance test and store of this session runs on."""
    found = config.stash.get(_RUNNER_KEY, None)
    if found is None:
        # A loop factory keeps the loop private: it is never the thread's current loop, so
        # another plugin that closes or replaces that loop (pytest-asyncio) cannot touch it.
        found = asyncio.Runner(loop_factory=asyncio.new_event_loop)
        config.stash[_RUNNER_KEY] = found
    return found


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the suite's tests ``cs_conformance``."""
    for item in items:
        cls = getattr(item, "cls", None)
        if cls is not None and issubclass(cls, Suite):
            item.add_marker(pytest.mark.cs_conformance)


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
def cs_store_factory(request: pytest.FixtureRequest) -> Any:
    """Override this fixture: return a ``Store`` (or a zero-argument callable returning one).

    It should point at a throwaway namespace provisioned for the test session (a temporary
    file, a schema, a database, a key prefix); the suite initializes the domains each test
    needs and clears them between tests with ``dangerously_clear_all()``.

    A backend whose tests define ``store_factory`` instead (the name DESIGN.md section 5 gives
    backend authors) is served from it: the plugin registers no fixture of that name itself,
    so it never shadows or collides with a user's own.
    """
    if "store_factory" in request.fixturenames or _defined(request, "store_factory"):
        return request.getfixturevalue("store_factory")
    raise pytest.UsageError(
        "composite_store_conformance: define a `cs_store_factory` (or `store_factory`) fixture "
        "returning a Store (or a callable returning one), e.g. "
        "`return open_store('sqlite:///' + str(tmp))`"
    )


def _defined(request: pytest.FixtureRequest, name: str) -> bool:
    """Whether a fixture called ``name`` is visible from the requesting test."""
    manager = request._fixturemanager  # no public lookup of a fixture's definitions by name
    return bool(manager.getfixturedefs(name, request.node))


def _session_store(request: pytest.FixtureRequest, factory: Any) -> Store:
    stores = request.config.stash.setdefault(_STORES_KEY, {})
    key = id(factory)
    if key not in stores:
        store = factory if isinstance(factory, Store) else factory()
        if not isinstance(store, Store):
            raise pytest.UsageError(f"cs_store_factory gave {type(store).__name__}, not a Store")
        stores[key] = store
    return stores[key]


@pytest.fixture(name=LOOP_FIXTURE)
def cs_run(request: pytest.FixtureRequest) -> Callable[[Any], Any]:
    """Run a coroutine on the session's event loop (every suite test runs through it)."""
    loop_runner = runner(request.config)
    return lambda coro: loop_runner.run(coro)


def _mark_known_gap(item: pytest.Item, known_gaps: Mapping[str, str]) -> None:
    """Turn the test into a strict xfail where the store declares it a known gap."""
    name = getattr(item, "originalname", item.name)
    reason = known_gaps.get(name)
    if reason is not None:
        item.add_marker(pytest.mark.xfail(reason=f"known gap: {reason}", strict=True))


@pytest.fixture
def cs_store(request: pytest.FixtureRequest, cs_store_factory: Any) -> Iterator[Store]:
    """The backend's store with the suite's domains initialized and empty.

    Capabilities (for ``cs_requires``) and known gaps come from the store itself: the first
    domain's ``capabilities`` and the store's ``known_gaps``.
    """
    cls = request.cls
    if cls is None or not issubclass(cls, Suite):
        raise pytest.UsageError("the `cs_store` fixture is for conformance Suite classes")
    loop_runner = runner(request.config)
    store = _session_store(request, cs_store_factory)
    for name in cls.domains:
        domain = store.get(name)
        if domain is None:
            pytest.skip(f"{store.backend} does not offer the {name} domain")
    _mark_known_gap(request.node, store.known_gaps)
    # init() first: a backend may learn its capabilities from the server (MongoDB has
    # transactions on a replica set only).
    for name in cls.domains:
        domain = store.get(name)
        assert domain is not None
        loop_runner.run(domain.init())
    needs = [m.args for m in request.node.iter_markers("cs_requires")]
    primary = store.get(cls.domains[0]) if cls.domains else None
    for capabilities in needs:
        for capability in capabilities:
            if primary is not None and not getattr(primary.capabilities, capability):
                pytest.skip(capability_skip_reason(primary, capability))
    for name in cls.domains:
        domain = store.get(name)
        assert domain is not None
        loop_runner.run(domain.dangerously_clear_all())
    yield store
