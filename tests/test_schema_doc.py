"""docs/schema.md is generated from composite_store/schema.py and must stay in step with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from composite_store import schema_doc
from composite_store.schema import DEFAULT_PREFIX, TABLES, ColumnType

DOC = Path(__file__).resolve().parents[1] / "docs" / "schema.md"
REGENERATE = "uv run python -m composite_store.schema_doc > docs/schema.md"


def test_docs_schema_md_is_up_to_date() -> None:
    assert DOC.is_file(), f"docs/schema.md is missing; run `{REGENERATE}`"
    if DOC.read_text(encoding="utf-8") != schema_doc.render():
        pytest.fail(
            f"docs/schema.md is out of date with composite_store/schema.py; run `{REGENERATE}`"
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
        [sys.executable, "-m", "composite_store.schema_doc"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == schema_doc.render()
