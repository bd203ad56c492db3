"""The composite router: overrides, fall-backs, disabled domains, isolation and lifecycle.

The backend's store is routed next to ``memory://`` stores and to the instrumented
``conformance-probe://`` store (``composite_store_conformance.probe``), which counts the stores
a composite opens and journals every ``init`` and ``close``.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from composite_store import (
    CompositeStore,
    CompositeStoreError,
    DomainNotConfiguredError,
    Store,
    Thread,
    open_store,
)
from composite_store.composite import DomainSource
from composite_store.domains.base import Domain
from composite_store.schema import DOMAINS
from composite_store_conformance.base import Suite
from composite_store_conformance.probe import PROBE_SCHEME, ProbeStore, register_probe

__all__ = ["RouterSuite"]

SECRET_URL = f"{PROBE_SCHEME}://agent:s3cret-pw@db.example:5432/agents?authToken=t0ken-xyz"
#: ``scheme://user:password@`` with a password other than the redacted ``***``.
_PASSWORD_IN_URL = re.compile(r"://[^/\s:@]*:(?!\*\*\*@)[^@\s/]+@")


def _offered(store: Store) -> list[str]:
    names = [name for name in DOMAINS if store.get(name) is not None]
    if not names:
        pytest.skip(f"{store.backend} offers no domain")
    return names


def _composite(
    tmp_path: Path,
    default: Store | str | None = None,
    domains: dict[str, DomainSource] | None = None,
) -> CompositeStore:
    """A composite that reads neither the environment nor a config file of the working
    directory (an empty config file is given instead)."""
    config = tmp_path / "composite-store.toml"
    config.write_text("", encoding="utf-8")
    return CompositeStore(default, domains, use_environment=False, config_file=config)


async def _ready(store: Store, name: str) -> Domain:
    domain = store.get(name)
    assert domain is not None
    await domain.init()
    return domain


async def _still_usable(domain: Domain) -> None:
    """Raise unless ``domain`` still serves calls (a closed domain refuses them)."""
    await domain.dangerously_clear_all()
    assert await domain.ping()


class RouterSuite(Suite):
    """``CompositeStore`` routing rules (DESIGN.md sections 3 and 10) around this backend."""

    #: Tests initialize what they route (the backend's domains are shared, so never closed).
    domains: ClassVar[tuple[str, ...]] = ()

    @pytest.fixture(autouse=True)
    def _probe(self) -> None:
        register_probe()
        ProbeStore.opened.clear()

    async def test_override_takes_the_domain_from_its_own_source(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        name = _offered(cs_store)[0]
        memory_store = open_store("memory://")
        composite = _composite(tmp_path, default=memory_store, domains={name: cs_store})
        assert composite.get(name) is cs_store.get(name)
        for other in DOMAINS:
            if other != name:
                assert composite.get(other) is memory_store.get(other)

    async def test_a_domain_object_can_be_routed_directly(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        name = _offered(cs_store)[0]
        domain = cs_store.get(name)
        composite = _composite(tmp_path, default="memory://", domains={name: domain})
        assert composite.get(name) is domain
        assert getattr(composite, name) is domain

    async def test_none_falls_back_to_the_default(self, cs_store: Store, tmp_path: Path) -> None:
        name = _offered(cs_store)[0]
        composite = _composite(tmp_path, default=cs_store, domains={name: None})
        assert composite.get(name) is cs_store.get(name)

    async def test_disabled_domain_raises_on_access_not_at_construction(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        offered = _offered(cs_store)
        name = offered[0]
        composite = _composite(tmp_path, default=cs_store, domains={name: False})
        assert composite.get(name) is None
        with pytest.raises(DomainNotConfiguredError, match=f"{name!r}.*disabled"):
            getattr(composite, name)
        for other in offered[1:]:
            assert composite.get(other) is cs_store.get(other)
        assert "disabled" in composite.describe()[name]

    async def test_a_source_lacking_the_domain_raises_on_access(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        name = _offered(cs_store)[0]
        only = Store({name: cs_store.get(name)})  # type: ignore[dict-item]
        composite = _composite(tmp_path, default=only)
        missing = next(d for d in DOMAINS if d != name)
        assert composite.get(missing) is None
        with pytest.raises(DomainNotConfiguredError, match=f"{missing!r}.*does not offer it"):
            getattr(composite, missing)
        unrouted = _composite(tmp_path, domains={name: cs_store})
        with pytest.raises(DomainNotConfiguredError, match="no default store"):
            getattr(unrouted, missing)

    async def test_unknown_domain_is_a_validation_error(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        from composite_store import ValidationError

        with pytest.raises(ValidationError, match="unknown domain 'memroy'"):
            _composite(tmp_path, default=cs_store, domains={"memroy": cs_store})
        with pytest.raises(ValidationError, match="unknown domain"):
            _composite(tmp_path, default=cs_store).get("memroy")

    async def test_two_stores_keep_their_data_apart(self, cs_store: Store, tmp_path: Path) -> None:
        if cs_store.get("memory") is None:
            pytest.skip(f"{cs_store.backend} does not offer the memory domain")
        backend_memory: Any = await _ready(cs_store, "memory")
        await backend_memory.dangerously_clear_all()
        elsewhere = open_store("memory://")
        here = _composite(tmp_path, default=cs_store)
        there = _composite(tmp_path, default=elsewhere)
        await here.init()
        await there.init()
        try:
            await here.memory.save_thread(thread=Thread(id="iso-1", resource_id="u1"))
            await there.memory.save_thread(thread=Thread(id="iso-2", resource_id="u1"))
            assert await there.memory.get_thread_by_id(thread_id="iso-1") is None
            assert await here.memory.get_thread_by_id(thread_id="iso-2") is None
            assert await backend_memory.get_thread_by_id(thread_id="iso-1") is not None
            page = await here.memory.list_threads(filter={"resource_id": "u1"})
            assert [t.id for t in page.items] == ["iso-1"]
        finally:
            await here.close()
            await there.close()
            await elsewhere.close()

    async def test_init_runs_one_domain_after_the_other(self, tmp_path: Path) -> None:
        composite = _composite(tmp_path, default=f"{PROBE_SCHEME}://init")
        await composite.init()
        await composite.close()
        (probe,) = ProbeStore.opened
        starts_and_ends = [event for event, _ in probe.journal if event.startswith("init")]
        assert starts_and_ends == ["init-start", "init-end"] * 2, probe.journal

    async def test_the_same_url_opens_one_store(self, tmp_path: Path) -> None:
        url = f"{PROBE_SCHEME}://shared"
        composite = _composite(tmp_path, default=url, domains={"workflows": url})
        assert len(ProbeStore.opened) == 1
        assert composite.get("memory") is ProbeStore.opened[0].get("memory")
        assert composite.get("workflows") is ProbeStore.opened[0].get("workflows")
        _composite(tmp_path, default=url, domains={"workflows": f"{PROBE_SCHEME}://other"})
        assert [p.url for p in ProbeStore.opened[1:]] == [url, f"{PROBE_SCHEME}://other"]

    async def test_close_closes_only_what_the_composite_opened(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        name = _offered(cs_store)[0]
        backend_domain = await _ready(cs_store, name)
        passed_in = open_store("memory://")
        other = next(d for d in ("workflows", "memory") if d != name)
        composite = _composite(
            tmp_path, default=f"{PROBE_SCHEME}://owned", domains={name: cs_store, other: passed_in}
        )
        await composite.init()
        await composite.close()
        (probe,) = ProbeStore.opened
        assert probe.closed, "the store opened from a URL was not closed"
        await _still_usable(backend_domain)
        passed = passed_in.get(other)
        assert passed is not None
        await _still_usable(passed)
        await passed_in.close()

    async def test_describe_redacts_credentials(self, cs_store: Store, tmp_path: Path) -> None:
        composite = _composite(tmp_path, default=SECRET_URL, domains={"workflows": False})
        described = composite.describe()
        text = repr(described) + repr(composite)
        assert "s3cret-pw" not in text and "t0ken-xyz" not in text, text
        assert "***" in described["memory"]
        assert set(described) == set(DOMAINS)
        assert "disabled" in described["workflows"]
        # The backend's own description (its URL may carry a password) shows none either.
        leaked = [d for d in cs_store.describe().values() if _PASSWORD_IN_URL.search(d)]
        assert not leaked, f"{cs_store.backend} describe() shows a password: {leaked}"

    async def test_ping_reports_every_routed_domain(self, cs_store: Store, tmp_path: Path) -> None:
        offered = _offered(cs_store)
        for name in offered:
            await _ready(cs_store, name)
        composite = _composite(tmp_path, default=cs_store)
        assert await composite.ping() == dict.fromkeys(offered, True)

    async def test_use_from_another_event_loop_is_a_clear_error(
        self, cs_store: Store, tmp_path: Path
    ) -> None:
        name = _offered(cs_store)[0]
        await _ready(cs_store, name)
        composite = _composite(tmp_path, default=cs_store)
        domain = composite.get(name)
        assert domain is not None

        def elsewhere() -> None:
            asyncio.run(domain.dangerously_clear_all())

        with pytest.raises(CompositeStoreError, match="bound to the event loop"):
            await asyncio.to_thread(elsewhere)
        await _still_usable(domain)  # the original loop still works

    async def test_use_before_init_is_a_clear_error(self, tmp_path: Path) -> None:
        composite = _composite(tmp_path, default=f"{PROBE_SCHEME}://uninitialized")
        with pytest.raises(CompositeStoreError, match="not initialized"):
            await composite.memory.list_threads()
