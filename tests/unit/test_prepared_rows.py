"""``Prepared.with_rows``: a multi-row upsert derived from its one-row form is the statement
SQLAlchemy compiles for those rows (SQL, binds in order, their conversions), for every
documented table's upsert on every relational dialect that has positional placeholders; where
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
        prepared._row_layout[1] if prepared._row_layout else None,
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


def test_statements_other_than_a_one_row_insert_have_no_derived_form() -> None:
    metadata = sa.MetaData()
    items = sa.Table("items", metadata, sa.Column("id", sa.Text), sa.Column("n", sa.Integer))
    dialect = sqlite.pysqlite.dialect()
    two_rows = items.insert().values(
        [{"id": sa.bindparam(f"id__{i}"), "n": sa.bindparam(f"n__{i}")} for i in range(2)]
    )
    named = items.insert().values(id=sa.bindparam("id"), n=sa.bindparam("n"))
    select = sa.select(items.c.id).where(items.c.n == sa.bindparam("n__0"))
    returning = items.insert().values(id=sa.bindparam("id__0"), n=sa.bindparam("n__0")).returning(
        items.c.id
    )
    for stmt in (two_rows, named, select, returning):
        assert Prepared(stmt, dialect).with_rows(3) is None
