"""``SqlDatabase.record_values``: the bind values of the row storing a record, read off its
attributes in one step, are exactly ``values(spec, stored_view(record))``, with PostgreSQL's
shadow timestamps and with columns the record's model does not have."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

from composite_store.records.memory import Thread
from composite_store.records.observability import Span
from composite_store.records.trusted import stored_view
from composite_store.schema import table
from composite_store.sql.database import SqlDatabase
from composite_store.sql.sqlite import SqliteDialect

AT = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)

RECORDS: list[tuple[str, BaseModel]] = [
    (
        "ai_spans",
        Span(
            trace_id="t1", span_id="s1", parent_span_id="s0", name="step", span_type="tool_call",
            started_at=AT, ended_at=AT, attributes={"k": [1, "x"]}, input={"q": "é"},
            output=None, entity_id="agent", tags=["a"], metadata={"m": True},
        ),
    ),
    ("ai_spans", Span(trace_id="t2", span_id="s2", name="root", span_type="agent_run",
                      started_at=AT)),
    ("threads", Thread(id="th1", resource_id="r1", title="t", metadata={"a": 1},
                       created_at=AT, updated_at=AT)),
    ("threads", Thread(id="th2", resource_id="r1")),
]


def _databases() -> list[Any]:
    found = [pytest.param(SqlDatabase(SqliteDialect(), "sqlite:///:memory:"), id="sqlite")]
    postgres = pytest.importorskip("composite_store_postgres.dialect")
    found.append(
        pytest.param(
            # Never connected: the engine is made, and the values are computed without it.
            SqlDatabase(postgres.PostgresDialect(), "postgresql+psycopg://u@127.0.0.1:1/x"),
            id="postgres-shadow-timestamps",
        )
    )
    return found


@pytest.mark.parametrize("db", _databases())
@pytest.mark.parametrize(("base", "record"), RECORDS, ids=lambda v: getattr(v, "id", v))
def test_record_values_are_the_values_of_the_stored_view(
    db: SqlDatabase, base: str, record: BaseModel
) -> None:
    spec = table(base)
    expected = db.values(spec, stored_view(record))
    got = db.record_values(spec, record)
    assert got == expected
    if db.dialect.shadow_timestamps:  # the premise of the PostgreSQL case
        assert got["createdAtZ"] == got["createdAt"] is not None
    assert list(got) == list(expected)  # the same columns in the same order
    assert db.record_values(spec, record) == expected  # the generated function, reused
