"""``Prepared.with_rows``: a multi-row statement derived from its one-row form is the statement
SQLAlchemy compiles for those rows (SQL, binds in order, their conversions, the columns it
returns), for every documented table's upsert on every relational dialect that has positional
placeholders, for a row of values among other binds, and for PostgreSQL's message batch; where
the text does not allow it (named placeholders: Oracle), there is no derived form and the
caller compiles."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql, oracle, postgresql, sqlite

from composite_store.schema.documented import TABLES
from composite_store.sql.dialect import SqlDialect
from composite_store.sql.engine import Prepared, RowValues
from composite_store.sql.sqlite import SqliteDialect
from composite_store.sql.tables import render_tables


def _dialects() -> list[tuple[str, SqlDialect, Any]]:
    """(name, our dialect, the SQLAlchemy dialect statements are compiled with)."""
    from composite_store_mysql.dialect import MysqlDialect
    from composite_store_oracle.dialect import OracleDialect
    from composite_store_postgres.dialect import PostgresDialect

    pg = PostgresDialect()
    mariadb = mysql.asyncmy.dialect()
    mariadb.server_version_info = (10, 11, 9)
    mariadb.is_mariadb = True
    return [
        ("sqlite", SqliteDialect(), sqlite.pysqlite.dialect()),
        ("postgres", pg, pg.statement_dialect(postgresql.psycopg.dialect())),
        ("mariadb", MysqlDialect(), mariadb),
        ("oracle", OracleDialect(), oracle.oracledb.dialect()),
    ]


DIALECTS = _dialects()


def _upserts(ours: SqlDialect, prefix: str, schema: str | None) -> list[tuple[str, Any]]:
    """(table, builder of its upsert of n rows) for every documented table with a key: every
    column written, the key kept, the rest updated, as ``SqlDomain.upsert`` builds them."""
    _, tables = render_tables(ours, prefix, schema)
    found = []
    for spec in TABLES:
        key = spec.primary_key or (spec.unique[0] if spec.unique else ())
        if not key:
            continue
        table = tables[spec.base_name]
        columns = [c.name for c in table.columns]
        update = [c for c in columns if c not in key]

        def build(n: int, table: sa.Table = table, key: Any = key, update: Any = update) -> Any:
            rows = [
                {c.name: sa.bindparam(f"{c.name}__{i}", type_=c.type) for c in table.columns}
                for i in range(n)
            ]
            return ours.upsert(table, rows, key, update)

        found.append((spec.base_name, build))
    return found


def _shape(prepared: Prepared, sample: Any) -> tuple[Any, ...]:
    """What defines a prepared statement's execution: its SQL, its binds in order, and what
    its conversions make of a sample value."""
    converted = [
        (i, type(process(sample)).__name__ if _converts(process, sample) else "refused")
        for i, process in prepared._bind_processors
    ]
    return (
        prepared.sql,
        prepared._bind_names,
        prepared._sql_names,
        prepared._positional,
        converted,
        prepared._row_layout[::2] if prepared._row_layout else None,  # before, rows, after
        prepared.selected_keys,
        [key for key, _ in prepared._processed],
    )


def _converts(process: Any, sample: Any) -> bool:
    try:
        process(sample)
    except Exception:  # noqa: BLE001 - a conversion that refuses the sample refuses it alike
        return False
    return True


@pytest.mark.parametrize(("name", "ours", "dialect"), DIALECTS, ids=[d[0] for d in DIALECTS])
@pytest.mark.parametrize(("prefix", "schema"), [("mastra_", None), ("agent_", "tenant_a")])
def test_derived_rows_are_what_sqlalchemy_compiles(
    name: str, ours: SqlDialect, dialect: Any, prefix: str, schema: str | None
) -> None:
    derived_any = False
    for table, build in _upserts(ours, prefix, schema):
        one = Prepared(build(1), dialect)
        for n in (2, 3, 10, 100):
            derived = one.with_rows(n)
            if name == "oracle":  # named placeholders: nothing derived, the caller compiles
                assert derived is None, table
                continue
            assert derived is not None, (table, n)
            derived_any = True
            compiled = Prepared(build(n), dialect)
            assert _shape(derived, "x") == _shape(compiled, "x"), (table, n)
    assert derived_any == (name != "oracle")


POSITIONAL = [d for d in DIALECTS if d[0] != "oracle"]


@pytest.mark.parametrize(("name", "ours", "dialect"), POSITIONAL, ids=[d[0] for d in POSITIONAL])
def test_derived_rows_bind_each_rows_values(name: str, ours: SqlDialect, dialect: Any) -> None:
    """Binding rows through the derived statement gives the values, converted, in the order
    the compiled statement sends them."""
    _, tables = render_tables(ours, "mastra_", None)
    columns = [c.name for c in tables["threads"].columns]
    build = dict(_upserts(ours, "mastra_", None))["threads"]
    rows = [
        {c: (None if c == "metadata" else f"{c}-{i}") for c in columns if "At" not in c}
        for i in range(3)
    ]
    for row in rows:
        row.update({c: "2026-01-02T03:04:05.678Z" for c in columns if "At" in c})
    derived = Prepared(build(1), dialect).with_rows(3)
    assert derived is not None
    assert derived.bind(RowValues(rows)) == Prepared(build(3), dialect).bind(RowValues(rows))


def _items() -> sa.Table:
    return sa.Table(
        "items",
        sa.MetaData(),
        sa.Column("id", sa.Text),
        sa.Column("n", sa.Integer),
        sa.Column("at", sa.DateTime(timezone=True)),
    )


def _rows_among_other_binds(n: int) -> Any:
    """A row of values in a CTE with binds before it, after it and used twice (``low``), and
    returned columns: the shape of PostgreSQL's message batch."""
    items = _items()
    batch = (
        sa.values(sa.column("id", sa.Text), sa.column("n", sa.Integer), name="v")
        .data(
            [
                (sa.bindparam(f"id__{i}", type_=sa.Text), sa.bindparam(f"n__{i}", type_=sa.Integer))
                for i in range(n)
            ]
        )
        .cte("v")
    )
    low = sa.bindparam("low", type_=sa.Integer)
    kept = sa.select(batch.c.id, batch.c.n).where(batch.c.n > low).cte("kept")
    return sa.select(kept.c.id, items.c.at).join_from(kept, items, kept.c.id == items.c.id).where(
        items.c.n > low, items.c.at < sa.bindparam("before", type_=items.c.at.type)
    )


@pytest.mark.parametrize(("name", "ours", "dialect"), POSITIONAL, ids=[d[0] for d in POSITIONAL])
def test_a_row_among_other_binds_is_derived_as_compiled(
    name: str, ours: SqlDialect, dialect: Any
) -> None:
    one = Prepared(_rows_among_other_binds(1), dialect)
    for n in (2, 3, 10):
        derived = one.with_rows(n)
        assert derived is not None, n
        compiled = Prepared(_rows_among_other_binds(n), dialect)
        assert _shape(derived, "x") == _shape(compiled, "x"), n
        values = {"low": 1, "before": "2026-01-02T03:04:05.678Z"}
        values.update({f"id__{i}": f"id-{i}" for i in range(n)})
        values.update({f"n__{i}": i for i in range(n)})
        assert derived.bind(values) == compiled.bind(values)


def test_the_message_batch_is_derived_as_compiled() -> None:
    """PostgreSQL's message batch (``SqlMemory._message_batch``), every documented column
    and the shadow timestamps written: its form for n rows derived from the one-row form is
    SQLAlchemy's compilation of n rows."""
    from composite_store_postgres.domains import PostgresMemory

    domain = PostgresMemory(url="postgresql://nobody@127.0.0.1:1/none")
    columns = tuple(c.name for c in domain.tables["messages"].columns)
    stamped = ("updatedAt", "updatedAtZ")
    one = domain.prepared(domain._message_batch, columns, stamped, 1)
    for n in (2, 3, 10, 100):
        derived = one.with_rows(n)
        assert derived is not None, n
        compiled = Prepared(domain._message_batch(columns, stamped, n), one.dialect)
        assert _shape(derived, "x") == _shape(compiled, "x"), n


def test_statements_other_than_a_one_row_insert_have_no_derived_form() -> None:
    items = _items()
    dialect = sqlite.pysqlite.dialect()
    two_rows = items.insert().values(
        [{"id": sa.bindparam(f"id__{i}"), "n": sa.bindparam(f"n__{i}")} for i in range(2)]
    )
    named = items.insert().values(id=sa.bindparam("id"), n=sa.bindparam("n"))
    select = sa.select(items.c.id).where(items.c.n == sa.bindparam("n__0"))
    split_row = items.insert().values(
        id=sa.bindparam("id__0"), n=sa.bindparam("n"), at=sa.bindparam("at__0")
    )
    two_values = sa.union_all(
        sa.select(sa.values(sa.column("id"), name="a").data([(sa.bindparam("id__0"),)])),
        sa.select(sa.values(sa.column("id"), name="b").data([(sa.bindparam("id__0"),)])),
    )
    for stmt in (two_rows, named, select, split_row, two_values):
        assert Prepared(stmt, dialect).with_rows(3) is None, stmt


def _row_bound_outside_too() -> Any:
    """A row whose ``id__0`` is also compared with outside it: no n-row form means that."""
    row_id = sa.bindparam("id__0", type_=sa.Text)
    batch = (
        sa.values(sa.column("id", sa.Text), sa.column("n", sa.Integer), name="v")
        .data([(row_id, sa.bindparam("n__0", type_=sa.Integer))])
        .cte("v")
    )
    return sa.select(batch.c.id).where(batch.c.id != row_id, batch.c.n > sa.bindparam("low"))


@pytest.mark.parametrize(("name", "ours", "dialect"), POSITIONAL, ids=[d[0] for d in POSITIONAL])
def test_text_the_derivation_cannot_read_for_sure_has_no_derived_form(
    name: str, ours: SqlDialect, dialect: Any
) -> None:
    """A row bind used outside the row as well, and (by position) a placeholder-like literal
    before or after the row, make the text ambiguous: the caller compiles."""
    stmts = [_row_bound_outside_too()]
    if name != "postgres":  # by position: the placeholders before the row are counted
        items = _items()
        mark = "'?'" if dialect.paramstyle == "qmark" else "'%%s'"
        batch = (
            sa.values(sa.column("id", sa.Text), sa.column("n", sa.Integer), name="v")
            .data([(sa.bindparam("id__0", type_=sa.Text), sa.bindparam("n__0", type_=sa.Integer))])
            .cte("v")
        )
        marked = sa.select(items.c.id, sa.literal_column(mark)).cte("m")
        for first, second in ((marked, batch), (batch, marked)):  # before the row, after it
            stmts.append(sa.select(batch.c.id, marked.c.id).join_from(first, second, sa.true()))
    for stmt in stmts:
        prepared = Prepared(stmt, dialect)
        assert prepared.with_rows(3) is None, prepared.sql


@pytest.mark.parametrize(("name", "ours", "dialect"), POSITIONAL, ids=[d[0] for d in POSITIONAL])
def test_an_insert_returning_is_derived_as_compiled(
    name: str, ours: SqlDialect, dialect: Any
) -> None:
    items = _items()

    def build(n: int) -> Any:
        # Typed binds, as the library's: SQLAlchemy types only the first row's of its own.
        rows = [
            {
                "id": sa.bindparam(f"id__{i}", type_=sa.Text),
                "n": sa.bindparam(f"n__{i}", type_=sa.Integer),
            }
            for i in range(n)
        ]
        return items.insert().values(rows).returning(items.c.id)

    derived = Prepared(build(1), dialect).with_rows(4)
    assert derived is not None
    assert _shape(derived, 1) == _shape(Prepared(build(4), dialect), 1)
