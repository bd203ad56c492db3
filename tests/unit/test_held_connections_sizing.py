"""``HeldConnections.for_engine`` sizes itself like the engine's pool (some of which SQLAlchemy
keeps in private attributes: this fails if an upgrade renames them)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.pool import NullPool

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


def test_a_pool_that_keeps_nothing_holds_nothing() -> None:
    engine = create_async_engine(URL, poolclass=NullPool)
    assert HeldConnections.for_engine(engine) is None
    asyncio.run(engine.dispose())
