"""``Prepared`` binding: every placeholder gets the caller's value (or the value the statement
embeds, unless given), converted by its column type, None left as is, in the driver's order
on positional dialects and by the SQL's names on named ones."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, oracle, postgresql, sqlite

from composite_store.sql.engine import Prepared


class Tagged(sa.types.TypeDecorator[str]):
    """A bind conversion that shows whether it ran."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        return None if value is None else f"<{value}>"


metadata = sa.MetaData()
items = sa.Table(
    "items",
    metadata,
    sa.Column("id", sa.Text),
    sa.Column("tag", Tagged),
    sa.Column("n", sa.Integer),
)


def _upsert() -> sa.Insert:
    return items.insert().values(
        id=sa.bindparam("id"), tag=sa.bindparam("tag", type_=Tagged()), n=sa.bindparam("n")
    )


@pytest.mark.parametrize("dialect", [mysql.dialect(), sqlite.dialect()])
def test_positional_values_follow_the_placeholders_and_are_converted(dialect: Any) -> None:
    prepared = Prepared(_upsert(), dialect)
    assert prepared.bind({"n": 3, "tag": "a", "id": "x"}) == ["x", "<a>", 3]
    assert prepared.bind({"n": None, "tag": None, "id": "x"}) == ["x", None, None]


@pytest.mark.parametrize("dialect", [oracle.dialect(), postgresql.dialect()])
def test_named_values_are_keyed_by_the_sql_names(dialect: Any) -> None:
    prepared = Prepared(_upsert(), dialect)
    assert prepared.bind({"n": 3, "tag": "a", "id": "x"}) == {"id": "x", "tag": "<a>", "n": 3}


def test_an_embedded_value_is_bound_unless_given() -> None:
    stmt = sa.select(items.c.id).where(items.c.tag == sa.bindparam("tag")).limit(5)
    prepared = Prepared(stmt, mysql.dialect())
    assert prepared.bind({"tag": "a"})[0] == "<a>"
    assert prepared.bind({"tag": "a"})[1:] == [5]
    limit = next(name for _, name, _ in prepared._binds if name != "tag")
    assert prepared.bind({"tag": "a", limit: 7})[1:] == [7]


def test_a_missing_value_is_an_error_naming_it() -> None:
    prepared = Prepared(_upsert(), mysql.dialect())
    with pytest.raises(KeyError, match="tag"):
        prepared.bind({"id": "x", "n": 1})
