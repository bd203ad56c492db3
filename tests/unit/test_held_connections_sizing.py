"""``HeldConnections.for_engine`` sizes itself like the engine's pool. SQLAlchemy exposes no
accessor for ``max_overflow`` and ``pool_recycle`` (``connections._unexposed_settings`` reads
its private attributes): the first test fails if an upgrade renames them."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.pool import NullPool, StaticPool

pytest.importorskip("psycopg")
pytest.importorskip("greenlet")

from sqlalchemy.ext.asyncio import create_async_engine

from composite_store.sql.engine import HeldConnections

URL = "postgresql+psycopg://nobody@127.0.0.1:1/none"  # never connected to


def test_the_pool_options_size_the_held_connections() -> None:
    engine = create_async_engine(
        URL, pool_size=3, max_overflow=2, pool_timeout=7.5, pool_recycle=60
    )
    held = HeldConnections.for_engine(engine)
    assert held is not None
    assert (held.keep, held.limit, held.timeout, held.recycle) == (3, 5, 7.5, 60)
    asyncio.run(engine.dispose())


def test_unbounded_overflow_and_no_recycle() -> None:
    engine = create_async_engine(URL, pool_size=2, max_overflow=-1)
    held = HeldConnections.for_engine(engine)
    assert held is not None
    assert (held.keep, held.limit, held.recycle) == (2, None, float("inf"))
    asyncio.run(engine.dispose())


@pytest.mark.parametrize("poolclass", [NullPool, StaticPool])
def test_a_pool_without_a_size_holds_nothing(poolclass: type) -> None:
    engine = create_async_engine(URL, poolclass=poolclass)
    assert HeldConnections.for_engine(engine) is None
    asyncio.run(engine.dispose())
