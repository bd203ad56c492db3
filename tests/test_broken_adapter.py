"""The conformance suite catches a deliberately broken adapter.

``BrokenSqliteStore`` is SQLite with five planted faults, each of a kind a real adapter could
ship: exclusive date bounds treated as inclusive (behaviour), a documented index dropped, a
column created with the wrong type, an undeclared extra column (schema), and timestamps
spelled ``YYYY-MM-DD HH:MM:SS.sssZ`` instead of Mastra's ``...THH:...`` (stored form; the
store itself still round-trips and sorts its own rows correctly).

The suites run in a separate pytest process, once against the broken store and once against
the real one as a control, and each planted fault must fail exactly the tests meant to catch it.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, ClassVar

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.types import TypeEngine

from composite_store.domains.memory import MessageQuery
from composite_store.records.memory import Message
from composite_store.schema import Column
from composite_store.sql.domain import SqlDomain
from composite_store.sql.sqlite import SqliteDialect, SqliteMemory, SqliteStore
from composite_store.sql.types import IsoTimestamp

ROOT = Path(__file__).resolve().parents[1]


class SpacedTimestamp(IsoTimestamp):
    """Timestamps with a space for the ``T``: self-consistent, but not Mastra's spelling."""

    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        text = super().process_bind_param(value, dialect)
        return None if text is None else text.replace("T", " ")


class BrokenDialect(SqliteDialect):
    def column_type(self, column: Column) -> TypeEngine[Any]:
        if column.name == "title":
            return sa.Integer()  # SQLite still stores the text: only the schema shows it
        return super().column_type(column)

    def timestamp_type(self) -> TypeEngine[Any]:
        return SpacedTimestamp()


class BrokenMemory(SqliteMemory):
    dialect_cls = BrokenDialect

    async def _init(self) -> None:
        await super()._init()
        prefix = self.db.prefix

        def damage(conn: Connection) -> None:
            # Every index on (thread_id, createdAt): on SQLite, Mastra's stands for ours.
            for index in ("messages_thread_id_createdat_idx", "messages_thread_created_at"):
                conn.exec_driver_sql(f'DROP INDEX IF EXISTS "{prefix}{index}"')
            conn.exec_driver_sql('DROP INDEX IF EXISTS "idx_messages_thread_created_at"')
            columns = conn.exec_driver_sql(f'PRAGMA table_info("{prefix}resources")').fetchall()
            if "legacy_notes" not in {row[1] for row in columns}:
                conn.exec_driver_sql(
                    f'ALTER TABLE "{prefix}resources" ADD COLUMN legacy_notes TEXT'
                )

        await self.db.run(damage, write=True)

    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        if query.date_range is not None:
            inclusive = query.date_range.model_copy(
                update={"start_exclusive": False, "end_exclusive": False}
            )
            query = dataclasses.replace(query, date_range=inclusive)
        return await super()._list_messages(query)


class BrokenSqliteStore(SqliteStore):
    dialect_cls = BrokenDialect
    domain_classes: ClassVar[dict[str, type[SqlDomain]]] = {"memory": BrokenMemory}


SUITE_MODULE = '''
import pytest
from composite_store.sql.sqlite import SqliteStore
from composite_store_conformance import MemorySuite, SchemaSuite
from tests.test_broken_adapter import BrokenSqliteStore


@pytest.fixture(scope="session")
def cs_store_factory(tmp_path_factory):
    return {store}(f"sqlite:///{{tmp_path_factory.mktemp('db') / 'x.db'}}")


class Test{name}Memory(MemorySuite):
    pass


class Test{name}Schema(SchemaSuite):
    pass
'''


#: The behaviour tests the planted bound fault must fail, and the whole schema suite.
SELECTION = "Schema or date_bounds or exclusive_bound"


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Run the suites against the broken store and the real one (the control) in one fresh
    pytest process; return the ids (``test::param``) of the failed tests per store."""
    root = tmp_path_factory.mktemp("suites")
    stores = {"Broken": "BrokenSqliteStore", "Control": "SqliteStore"}
    for name, store in stores.items():
        (root / f"test_{name.lower()}.py").write_text(
            SUITE_MODULE.format(store=store, name=name), encoding="utf-8"
        )
    report = root / "report.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(root), "-q", "-p", "no:cacheprovider",
         "-p", "composite_store_conformance.plugin",
         "-k", SELECTION, "--rootdir", str(root), f"--junitxml={report}",
         "-o", f"pythonpath={ROOT}"],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
    )
    assert report.exists(), f"pytest did not run: {done.stdout}\n{done.stderr}"
    cases = list(ET.parse(report).getroot().iter("testcase"))
    assert len(cases) > 80, f"only {len(cases)} tests ran: {done.stdout[-2000:]}"
    failed: dict[str, set[str]] = {name: set() for name in stores}
    for case in cases:
        if case.find("failure") is not None or case.find("error") is not None:
            cls = case.get("classname", "").rsplit(".", 1)[-1]
            name = next(n for n in stores if cls.startswith(f"Test{n}"))
            failed[name].add(f"{cls}::{case.get('name')}")
    return failed


@pytest.fixture(scope="module")
def broken(failures: dict[str, set[str]]) -> set[str]:
    return failures["Broken"]


def test_the_real_store_passes_the_same_tests(failures: dict[str, set[str]]) -> None:
    assert failures["Control"] == set()


def test_behaviour_suite_catches_inclusive_exclusive_bounds(broken: set[str]) -> None:
    caught = {f for f in broken if f.startswith("TestBrokenMemory::")}
    assert "TestBrokenMemory::test_list_messages_date_bounds[1-3-True-True-expected3]" in caught
    assert "TestBrokenMemory::test_exclusive_bound_from_a_truncated_copy_excludes_the_row" in caught
    # Inclusive bounds still work: only the exclusive cases fail.
    inclusive = "TestBrokenMemory::test_list_messages_date_bounds[1-3-False-False-expected0]"
    assert inclusive not in caught


@pytest.mark.parametrize(
    "test_id",
    [
        "TestBrokenSchema::test_documented_index_exists[messages-thread_id_createdat_idx]",
        "TestBrokenSchema::test_column_types_are_compatible[threads]",
        "TestBrokenSchema::test_only_declared_variant_columns_are_extra[resources]",
        "TestBrokenSchema::test_stored_rows_have_the_documented_names_and_form[memory]",
    ],
)
def test_schema_suite_catches_each_planted_fault(broken: set[str], test_id: str) -> None:
    assert test_id in broken, f"not caught; failures: {sorted(broken)}"


def test_schema_suite_fails_nothing_unplanted(broken: set[str]) -> None:
    schema = {f for f in broken if f.startswith("TestBrokenSchema::")}
    assert schema == {
        "TestBrokenSchema::test_documented_index_exists[messages-thread_id_createdat_idx]",
        "TestBrokenSchema::test_column_types_are_compatible[threads]",
        "TestBrokenSchema::test_only_declared_variant_columns_are_extra[resources]",
        "TestBrokenSchema::test_stored_rows_have_the_documented_names_and_form[memory]",
    }
