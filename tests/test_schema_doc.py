"""docs/schema.md is generated from composite_store/schema/documented.py and must stay in step
with it."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from composite_store.schema import DEFAULT_PREFIX, TABLES, ColumnType
from composite_store.schema import doc as schema_doc
from composite_store.sql.dialect import SqlDialect

DOC = Path(__file__).resolve().parents[1] / "docs" / "schema.md"
REGENERATE = "uv run python -m composite_store.schema.doc > docs/schema.md"


def test_docs_schema_md_is_up_to_date() -> None:
    assert DOC.is_file(), f"docs/schema.md is missing; run `{REGENERATE}`"
    if DOC.read_text(encoding="utf-8") != schema_doc.render():
        pytest.fail(
            "docs/schema.md is out of date with composite_store/schema/documented.py; "
            f"run `{REGENERATE}`"
        )


def test_every_table_column_and_index_is_documented() -> None:
    text = schema_doc.render()
    for spec in TABLES:
        name = spec.name(DEFAULT_PREFIX)
        assert f"#### `{name}`" in text
        for col in spec.columns:
            assert f"| `{col.name}` | {col.type.value} |" in text, f"{name}.{col.name}"
        for index in spec.indexes:
            assert f"`{index.name(name)}`" in text


def test_every_logical_type_has_a_physical_mapping() -> None:
    assert set(schema_doc.PHYSICAL) == set(ColumnType)


#: docs column -> the adapter dialect whose DDL it documents, and SQLAlchemy's dialect name.
ADAPTER_DIALECTS = [
    ("PostgreSQL", "composite_store_postgres.dialect:PostgresDialect", "postgresql"),
    ("MySQL / MariaDB", "composite_store_mysql.dialect:MysqlDialect", "mysql"),
    ("Oracle", "composite_store_oracle.dialect:OracleDialect", "oracle"),
]
_TYPE_NAME = re.compile(r"^[A-Z0-9_]+(\([^)]*\))?")


@pytest.mark.parametrize(("label", "target", "sa_name"), ADAPTER_DIALECTS)
def test_documented_physical_types_match_the_adapter(label: str, target: str, sa_name: str) -> None:
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        pytest.skip(f"{module_name} is not installed: {exc}")
    dialect: SqlDialect = getattr(module, class_name)()
    sa_dialect = importlib.import_module(f"sqlalchemy.dialects.{sa_name}").dialect()
    for kind in ColumnType:
        cell = schema_doc.PHYSICAL[kind][label]
        for col in {
            (c.key, c.lookup): c for t in TABLES for c in t.columns if c.type is kind
        }.values():
            compiled = str(dialect.column_type(col).compile(dialect=sa_dialect))
            match = _TYPE_NAME.match(compiled)
            assert match is not None, compiled
            assert match.group(0) in cell, (
                f"{label} {kind.value}: DDL says {compiled}, docs {cell!r}"
            )
        if kind is ColumnType.TIMESTAMP:
            assert ("shadow" in cell) == dialect.shadow_timestamps, f"{label}: shadow columns"


def test_deviations_name_real_columns_of_the_stated_type() -> None:
    schema_doc._check_deviations()
    text = schema_doc.render()
    assert "`mastra_messages.type`" in text
    assert "`mastra_workflow_snapshot.snapshot`" in text


def test_deviation_check_catches_a_wrong_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = schema_doc.Deviation("threads", "title", "claimed JSON", ColumnType.JSON)
    monkeypatch.setattr(schema_doc, "DEVIATIONS", (wrong,))
    with pytest.raises(AssertionError, match=r"threads\.title is not json"):
        schema_doc.render()


def test_module_prints_the_reference() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "composite_store.schema.doc"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == schema_doc.render()
