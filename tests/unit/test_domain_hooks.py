"""A domain that opts into none of ``composite_store.domains.hooks``: it serves, and the tools
over the contract report what it cannot do instead of failing half-way."""

from __future__ import annotations

import asyncio

import pytest

from composite_store import Store, UnsupportedOperationError, open_store
from composite_store.admin.copy import copy_domains
from composite_store.admin.inspect import inspect_store
from composite_store.admin.migrate import plan_migrations
from composite_store.domains.base import Domain
from composite_store.domains.hooks import (
    Inspectable,
    Migratable,
    Transferable,
    outstanding,
    recorded_version,
    require,
)
from composite_store.schema.migrations import pending


class _Bare(Domain):
    """The least a domain can be: a lifecycle."""

    domain = "workflows"
    backend = "bare"

    async def _init(self) -> None:
        pass

    async def _clear(self) -> None:
        pass


def _bare_store() -> Store:
    return Store({"workflows": _Bare()})


def test_a_bare_domain_has_no_hook() -> None:
    bare = _Bare()
    assert not isinstance(bare, (Transferable, Migratable, Inspectable))
    assert not hasattr(bare, "export_records") and not hasattr(bare, "describe_physical")
    with pytest.raises(UnsupportedOperationError, match=r"_Bare \(bare\) cannot export .*"
                       r"composite_store.domains.hooks.Transferable"):
        require(bare, Transferable, "export its records")


def test_the_backends_opt_into_every_hook() -> None:
    store = open_store("memory://")
    for dom in store.domains.values():
        assert all(isinstance(dom, hook) for hook in (Transferable, Migratable, Inspectable)), dom


def test_tools_report_what_a_bare_domain_cannot_do() -> None:
    async def run() -> None:
        async with _bare_store() as store:  # init() records no version: nothing to settle
            dom = store.domains["workflows"]
            assert await recorded_version(dom) is None
            assert await outstanding(dom, pending("workflows", 0)) == []
            [plan] = await plan_migrations(store)
            assert plan.recorded is None and not plan.due and plan.steps == []
            [report] = await inspect_store(store)
            assert report.schema_version is None and not report.version_recorded
            assert report.error is not None and "Inspectable" in report.error
            async with open_store("memory://") as other:
                with pytest.raises(UnsupportedOperationError, match="cannot export the workflows"):
                    await copy_domains(store, other, domains=["workflows"])
                with pytest.raises(UnsupportedOperationError, match="cannot import the workflows"):
                    await copy_domains(other, store, domains=["workflows"])

    asyncio.run(run())
