"""MySQL 8, compile-checked: no MySQL 8 server runs here (CI runs the suite on MariaDB).

The adapter serves both servers with one dialect class; what differs on MySQL (native JSON
columns, JSON equality by CAST) is rendered with SQLAlchemy's MySQL dialect set up as MySQL
8.0 and checked for properties, not golden strings.
"""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.schema import CreateIndex, CreateTable

pytest.importorskip("composite_store_mysql")

from composite_store_mysql.dialect import MysqlDialect

from composite_store.schema import TABLES, ColumnType
from composite_store.sql.tables import render_tables


def mysql8() -> sa.engine.Dialect:
    dialect = mysql.dialect()
    dialect.server_version_info = (8, 0, 36)
    dialect.is_mariadb = False
    dialect.supports_native_boolean = False
    return dialect


@pytest.fixture(scope="module")
def rendered() -> dict[str, sa.Table]:
    ours = MysqlDialect()
    ours.is_mariadb = False
    _, tables = render_tables(ours, "mastra_", None)
    return tables


def test_every_table_renders_for_mysql8(rendered: dict[str, sa.Table]) -> None:
    dialect = mysql8()
    for spec in TABLES:
        ddl = str(CreateTable(rendered[spec.base_name]).compile(dialect=dialect))
        columns = {
            m.group(1): m.group(2)
            for m in re.finditer(r"^\s+`?([A-Za-z_]+)`? ([A-Z]+(?:\(\d+\))?)", ddl, re.M)
        }
        for column in spec.columns:
            physical = columns[column.name]
            if column.type is ColumnType.JSON:
                assert physical == "JSON", (spec.base_name, column.name, physical)
            elif column.type is ColumnType.TIMESTAMP:
                assert physical == "DATETIME(3)", (spec.base_name, column.name, physical)
            elif column.type is ColumnType.TEXT and (
                column.key or column.name in spec.primary_key
            ):
                # Keys and indexed text are bounded: MySQL cannot index a TEXT column whole.
                assert physical.startswith("VARCHAR("), (spec.base_name, column.name, physical)
        for index in rendered[spec.base_name].indexes:
            assert len(index.name or "") <= 64
            str(CreateIndex(index).compile(dialect=dialect))


def test_json_equality_casts_on_mysql(rendered: dict[str, sa.Table]) -> None:
    ours = MysqlDialect()
    ours.is_mariadb = False
    condition = ours.json_equals(
        rendered["threads"].c.metadata, "topic", sa.bindparam("v", type_=sa.Text)
    )
    sql = str(condition.compile(dialect=mysql8()))
    assert "CAST(" in sql and "AS JSON" in sql and "JSON_EQUALS" not in sql
    # The key travels in the path, the value as a bound parameter.
    assert "%s" in sql or ":v" in sql
