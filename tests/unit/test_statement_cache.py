"""``StatementCache``: keys derived from what defines a statement (``sql.engine.cache``).

No caller names a key: two statements cannot share one, and a builder that could build
different statements under one key (a closure over a value, a default argument) is refused.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql.expression import Executable

import composite_store as cs
from composite_store.sql.engine import Prepared, StatementCache

items = sa.table("items", sa.column("id"), sa.column("kind"))


def by_id(column: str) -> Executable:
    return sa.select(items).where(items.c[column] == sa.bindparam("v"))


def by_kind(column: str) -> Executable:
    # The same arguments as by_id, another statement: under caller-chosen keys such as
    # ("select", column) the two would collide.
    return sa.select(items.c.id).where(items.c[column] == sa.bindparam("v"))


def _cache() -> StatementCache:
    return StatementCache(sqlite.dialect())


def test_two_builders_with_the_same_arguments_get_two_statements() -> None:
    cache = _cache()
    first, second = cache.get(by_id, "kind"), cache.get(by_kind, "kind")
    assert first is not second
    assert first.sql != second.sql
    assert cache.get(by_id, "kind") is first


def test_the_arguments_are_part_of_the_key() -> None:
    cache = _cache()
    assert cache.get(by_id, "id") is not cache.get(by_id, "kind")
    assert len(cache) == 2


def test_two_nested_builders_of_one_method_are_two_statements() -> None:
    class Domain:
        def statements(self, cache: StatementCache) -> tuple[Prepared, Prepared]:
            def page(column: str) -> Executable:
                return by_id(column)

            def count(column: str) -> Executable:
                return sa.select(sa.func.count()).where(items.c[column] == sa.bindparam("v"))

            return cache.get(page, "id"), cache.get(count, "id")

    cache, domain = _cache(), Domain()
    page, count = domain.statements(cache)
    assert page is not count
    # Each call of the method makes new function objects of the same code: cache hits.
    assert domain.statements(cache) == (page, count)
    assert len(cache) == 2


def test_the_scope_separates_callers_sharing_a_builder() -> None:
    cache = _cache()
    assert cache.get(by_id, "id", scope="a") is not cache.get(by_id, "id", scope="b")


def test_a_builder_closing_over_a_value_is_refused() -> None:
    cache = _cache()
    for column in ("id", "kind"):

        def build() -> Executable:
            return by_id(column)  # noqa: B023 - the point: "kind" under the key of "id"

        with pytest.raises(TypeError, match="closes over column: pass everything"):
            cache.get(build)


def test_a_builder_with_defaults_is_refused() -> None:
    def build(column: str = "id") -> Executable:
        return by_id(column)

    with pytest.raises(TypeError, match="has default arguments"):
        _cache().get(build)


def test_a_builder_may_close_over_self() -> None:
    class Domain:
        column = "kind"

        def statement(self, cache: StatementCache) -> Prepared:
            def build() -> Executable:
                return by_id(self.column)

            return cache.get(build)

    cache = _cache()
    assert cache.get(by_id, "kind").sql == Domain().statement(cache).sql


# -- statements by their caller's shape (``StatementCache.by_shape``) ---------------------------


def test_a_point_read_is_found_by_all_of_its_shape() -> None:
    """``SqlDomain.select_by`` serves a point read's statement with one lookup: its table, its
    columns and whether it locks are all part of what it is found by."""
    # A PostgreSQL store compiles its statements without connecting (nothing listens here).
    memory = cs.open_store("postgresql://u@127.0.0.1:1/db").memory
    locked = memory.select_by("threads", "id", lock=True)
    plain = memory.select_by("threads", "id")
    assert "FOR UPDATE" in locked.sql
    assert "FOR UPDATE" not in plain.sql
    assert memory.select_by("threads", "id", lock=True) is locked
    assert memory.select_by("threads", "id") is plain
    resources = memory.select_by("resources", "id")
    assert "mastra_resources" in resources.sql
    assert "mastra_threads" not in resources.sql
    by_two = memory.select_by("threads", "id", "resourceId")
    assert by_two is not plain
    assert '"resourceId" = ' in by_two.sql
    assert '"resourceId" = ' not in plain.sql
