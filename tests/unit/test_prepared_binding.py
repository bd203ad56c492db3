"""``Prepared`` binding: every placeholder gets the caller's value (or the value the statement
embeds, unless given), converted by its column type, None left as is, in the driver's order
on positional dialects and by the SQL's names on named ones."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, oracle, postgresql, sqlite

from composite_store.sql.engine import Prepared, RowValues


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


def _rows_insert(n: int, columns: tuple[str, ...]) -> sa.Insert:
    """A multi-row INSERT binding ``<column>__<i>``, as ``SqlDomain.upsert`` builds its own."""
    types = {"id": sa.Text(), "tag": Tagged(), "n": sa.Integer()}
    return items.insert().values(
        [{c: sa.bindparam(f"{c}__{i}", type_=types[c]) for c in columns} for i in range(n)]
    )


ROWS = [
    {"n": 1, "tag": "a", "id": "x"},
    {"n": None, "tag": None, "id": "y"},
    {"n": 3, "tag": "c", "id": "z"},
]


@pytest.mark.parametrize(
    "dialect",
    [mysql.dialect(), sqlite.dialect(), postgresql.dialect(paramstyle="numeric_dollar")],
    ids=["mysql", "sqlite", "postgres-numbered"],
)
@pytest.mark.parametrize("columns", [("n", "tag", "id"), ("id", "tag", "n")], ids=str)
def test_rows_bind_as_their_names_do(dialect: Any, columns: tuple[str, ...]) -> None:
    """``RowValues`` binds row by row exactly what the mapping of its names binds, whatever
    the order of the rows' keys against the order the statement sends its columns in."""
    rows = [{c: row[c] for c in columns} for row in ROWS]
    prepared = Prepared(_rows_insert(3, columns), dialect)
    assert prepared._row_layout is not None  # the row-by-row path is the one under test
    by_rows = prepared.bind(RowValues(rows))
    by_names = prepared.bind({name: RowValues(rows)[name] for name in RowValues(rows)})
    assert by_rows == by_names
    assert by_rows == [v for row in ROWS for v in (row["id"], *_tagged(row), row["n"])]


def _rows_between(n: int) -> sa.Select[Any]:
    """A statement binding a value before its ``n`` rows (``head``, selected) and one after
    them (``tail``, in the WHERE), as the message batch binds its threads and timestamp
    around its rows."""
    rows = sa.values(sa.column("id", sa.Text()), sa.column("tag", Tagged()), name="v").data(
        [
            (sa.bindparam(f"id__{i}", type_=sa.Text()), sa.bindparam(f"tag__{i}", type_=Tagged()))
            for i in range(n)
        ]
    )
    head = sa.bindparam("head", type_=Tagged())
    return sa.select(rows.c.id, head.label("h")).where(rows.c.tag != sa.bindparam("tail"))


@pytest.mark.parametrize(
    "dialect",
    [mysql.dialect(), sqlite.dialect(), postgresql.dialect(paramstyle="numeric_dollar")],
    ids=["mysql", "sqlite", "postgres-numbered"],
)
def test_rows_between_other_binds_bind_as_their_names_do(dialect: Any) -> None:
    """The binds before and after the rows come from ``RowValues.others``, converted by
    their types as the rows' are, in the statement's order."""
    prepared = Prepared(_rows_between(2), dialect)
    layout = prepared._row_layout
    assert layout is not None
    assert (layout.before, layout.rows, layout.after) == (("head",), 2, ("tail",))
    rows = [{"tag": "a", "id": "x"}, {"tag": None, "id": "y"}]
    values = RowValues(rows, {"head": "h", "tail": "t"})
    assert prepared.bind(values) == prepared.bind(dict(values))
    assert prepared.bind(values) == ["<h>", "x", "<a>", "y", None, "<t>"]
    with pytest.raises(KeyError, match="tail"):
        prepared.bind(RowValues(rows, {"head": "h"}))


def _tagged(row: dict[str, Any]) -> tuple[Any]:
    return (None if row["tag"] is None else f"<{row['tag']}>",)


def test_rows_of_another_count_or_statement_bind_by_name() -> None:
    """Fewer rows than the statement binds, or a statement whose binds are not rows, go by
    name: a missing row's value is a KeyError naming it, and a statement with other names
    looks them up (``RowValues`` has none but its rows')."""
    prepared = Prepared(_rows_insert(3, ("id", "tag", "n")), sqlite.dialect())
    with pytest.raises(KeyError, match="__2"):
        prepared.bind(RowValues(ROWS[:2]))
    plain = Prepared(_upsert(), sqlite.dialect())
    assert plain._row_layout is None
    with pytest.raises(KeyError, match="id"):
        plain.bind(RowValues([{"n": 3, "tag": "a", "id": "x"}]))


def test_row_values_read_as_the_mapping_of_their_names() -> None:
    values = RowValues(ROWS[:2])
    assert dict(values) == {
        "n__0": 1, "tag__0": "a", "id__0": "x", "n__1": None, "tag__1": None, "id__1": "y",
    }
    assert len(values) == 6
    values = RowValues(ROWS[:1], {"limit": 5})
    assert dict(values) == {"n__0": 1, "tag__0": "a", "id__0": "x", "limit": 5}
    assert len(values) == 4
    assert values["limit"] == 5
    for missing in ("n__2", "n", "n__x", "color__0"):
        with pytest.raises(KeyError):
            values[missing]
