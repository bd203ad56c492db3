"""The hostile-input tests (tests/hostile): one live store per backend CI has, and the
hypothesis profiles.

Profiles: ``ci`` (the default here: a couple of hundred examples per backend and test, within
CI's time budget) and ``deep`` (``--hypothesis-profile=deep``: 10,000 examples per backend and
test). Each backend's store is opened once per session on an event loop of its own; a test
runs its coroutines there with ``live.run(...)`` and finds every domain it uses empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings

from composite_store import Store, open_store
from tests.support.backends import RAN, ran
from tests.support.servers import mariadb, mongodb, postgres, redis

T = TypeVar("T")

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=_SLOW_OK, derandomize=True
)
settings.register_profile(
    "deep", max_examples=10_000, deadline=None, suppress_health_check=_SLOW_OK
)
settings.register_profile("smoke", parent=settings.get_profile("ci"), max_examples=30)
settings.load_profile("ci")


def budget(ci: int) -> settings:
    """``ci`` examples per backend under the ``ci`` profile, the profile's count under any
    other (``deep``: 10,000; ``smoke``: 30): the domain properties of
    test_properties_domains.py are many, so CI runs fewer of each than of the memory ones."""
    if settings.get_current_profile_name() == "ci":
        return settings(max_examples=ci)
    return settings()


#: backend -> a store URL for the session (server backends provision a namespace).
BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "inmemory": lambda request, tmp: "memory://",
    "sqlite": lambda request, tmp: f"sqlite:///{tmp / 'hostile.db'}",
    "postgres": lambda request, tmp: postgres.session_url(request),
    "mariadb": lambda request, tmp: mariadb.session_url(request),
    "redis": lambda request, tmp: redis.session_url(request),
    "mongodb": lambda request, tmp: mongodb.session_url(request),
}


@dataclass
class Live:
    """A backend's open store and the event loop it is bound to."""

    backend: str
    store: Store
    runner: asyncio.Runner

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)

    def clear(self, *domains: str) -> None:
        async def clear() -> None:
            for name in domains:
                domain = self.store.get(name)
                if domain is not None:
                    await domain.dangerously_clear_all()

        self.run(clear())

    def domain(self, name: str) -> Any:
        domain = self.store.get(name)
        if domain is None:
            pytest.skip(f"{self.backend} does not offer the {name} domain")
        return domain


@pytest.fixture(scope="session", params=sorted(BACKENDS))
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    backend = request.param
    url = BACKENDS[backend](request, tmp_path_factory.mktemp(f"hostile-{backend}"))
    if backend not in RAN:
        ran(backend, "hostile-input tests")
    runner = asyncio.Runner()
    store = open_store(url)
    runner.run(store.init())
    try:
        yield Live(backend, store, runner)
    finally:
        runner.run(store.close())
        runner.close()
