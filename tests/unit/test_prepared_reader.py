"""``Prepared.rows`` + ``Prepared.reader``: records built from driver rows by position, with the
column types' conversions applied once; a statement whose SQL depends on its values is refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from pydantic import BaseModel, Field

from composite_store.sql.engine import Prepared
from composite_store.sql.types import IsoTimestamp, JsonText

AT = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


class Shout(sa.types.TypeDecorator[str]):
    """A column type whose result conversion shows when it ran twice."""

    impl = sa.Text
    cache_ok = True

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> str | None:
        return None if value is None else f"{value}!"


class Item(BaseModel):
    id: str
    at: datetime
    data: dict[str, Any] = Field(alias="payload")


metadata = sa.MetaData()
items = sa.Table(
    "items",
    metadata,
    sa.Column("id", Shout, primary_key=True),
    sa.Column("payload", JsonText()),
    sa.Column("at", IsoTimestamp()),
)


@pytest.fixture
def conn() -> Any:
    engine = sa.create_engine("sqlite://")
    metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            items.insert(),
            [
                {"id": "a", "payload": {"n": 1}, "at": AT},
                {"id": "b", "payload": {"n": 2}, "at": AT},
            ],
        )
        yield connection


def _wrap(value: dict[str, Any]) -> dict[str, Any]:
    return {"wrapped": value}


def test_rows_get_the_type_conversion_then_the_callers(conn: Any) -> None:
    page = Prepared(sa.select(items).order_by(items.c.id), conn.dialect)
    rows = page.rows(conn)
    assert rows[0][1] == '{"n":1}'  # as the driver gives it: converted by the reader only
    read = page.reader(Item, data=_wrap)
    assert [read(r) for r in rows] == [
        Item(id="a!", at=AT, payload={"wrapped": {"n": 1}}),
        Item(id="b!", at=AT, payload={"wrapped": {"n": 2}}),
    ]


def test_all_converts_each_column_once(conn: Any) -> None:
    page = Prepared(sa.select(items).where(items.c.id == sa.bindparam("id")), conn.dialect)
    assert page.all(conn, {"id": "b"}) == [{"id": "b!", "payload": {"n": 2}, "at": AT}]


def test_a_statement_whose_sql_depends_on_its_values_is_refused(conn: Any) -> None:
    ids = sa.bindparam("ids", expanding=True)
    with pytest.raises(ValueError, match=r"must not depend on its values.*bind each value"):
        Prepared(sa.select(items).where(items.c.id.in_(ids)), conn.dialect)


def test_a_reader_is_made_once_per_model_and_conversions(conn: Any) -> None:
    page = Prepared(sa.select(items), conn.dialect)
    assert page.reader(Item, data=_wrap) is page.reader(Item, data=_wrap)
    assert page.reader(Item) is not page.reader(Item, data=_wrap)


def test_each_streams_rows_into_records_chunk_by_chunk(conn: Any) -> None:
    chunks: list[int] = []

    def streamer(c: Any, sql: str, params: Any, size: int) -> Any:
        cursor = c.connection.cursor()
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(size):
            chunks.append(len(rows))
            yield rows

    page = Prepared(sa.select(items).order_by(items.c.id), conn.dialect, streamer=streamer)
    read = page.reader(Item, data=_wrap)
    assert page.each(conn, read, size=1) == [read(r) for r in page.rows(conn)]
    assert chunks == [1, 1]


def test_records_of_a_bulk_reader_share_a_fields_set_that_never_changes(conn: Any) -> None:
    page = Prepared(sa.select(items).order_by(items.c.id), conn.dialect)
    a, b = page.each(conn, page.reader(Item))
    assert a.model_fields_set is b.model_fields_set == {"id", "at", "data"}
    a.id = "c"  # assignment adds the name, which the set holds already
    assert b.model_fields_set == {"id", "at", "data"} and b.id == "b!"
    copied = a.model_copy(update={"id": "d"})
    assert copied.model_fields_set is not a.model_fields_set


def test_each_raises_a_driver_error_as_statements_do(conn: Any) -> None:
    page = Prepared(sa.select(sa.text("* FROM missing")), conn.dialect)
    with pytest.raises(sa.exc.OperationalError, match="no such table"):
        page.each(conn, lambda row: row)


def test_each_closes_the_cursor_when_a_record_fails(conn: Any) -> None:
    closed: list[bool] = []

    def streamer(c: Any, sql: str, params: Any, size: int) -> Any:
        try:
            yield [("a", '{"n":1}', "2025-01-02T03:04:05.678Z")]
            yield [("b", '{"n":2}', "2025-01-02T03:04:05.678Z")]
        finally:
            closed.append(True)

    def fail(row: Any) -> Any:
        raise ValueError("no record")

    page = Prepared(sa.select(items), conn.dialect, streamer=streamer)
    with pytest.raises(ValueError, match="no record"):
        page.each(conn, fail)
    assert closed == [True]


def test_value_reader_converts_one_column_as_the_record_reader_does(conn: Any) -> None:
    page = Prepared(sa.select(items).order_by(items.c.id), conn.dialect)
    rows = page.rows(conn)
    assert [page.value_reader("id")(r) for r in rows] == ["a!", "b!"]  # its processor, once
    assert page.value_reader("payload")(rows[1]) == {"n": 2}
    ids = Prepared(sa.select(sa.literal_column("'x'").label("plain")), conn.dialect)
    assert ids.value_reader("plain")(ids.rows(conn)[0]) == "x"  # no processor: the value
    with pytest.raises(TypeError, match="selects no column 'nope'"):
        page.value_reader("nope")
