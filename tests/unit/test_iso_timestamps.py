"""The one text spelling of timestamps (``records.base.iso_ms``), as JavaScript's
``toISOString`` writes it: SQLite/libSQL columns and Redis fields hold it, and it must sort as
the instants do."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from composite_store.records.base import iso_ms
from composite_store.sql.types import IsoTimestamp

INSTANTS = [
    datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(1000, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 1000, tzinfo=UTC),
    datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), "2025-01-02T03:04:05.678Z"),
        (datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC), "0999-01-02T03:04:05.000Z"),
        (
            datetime(2025, 1, 2, 12, 0, tzinfo=timezone(timedelta(hours=9))),
            "2025-01-02T03:00:00.000Z",
        ),
    ],
)
def test_the_spelling_is_javascripts(value: datetime, text: str) -> None:
    assert iso_ms(value) == text


def test_the_fields_are_spelled_as_isoformat_spells_them() -> None:
    # iso_ms formats the fields itself; isoformat is the reference: every width, the
    # milliseconds truncated (never rounded up into the next second), years below 1000.
    values = [
        datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
        for year in (1, 9, 10, 99, 100, 999, 1000, 1970, 2025, 9999)
        for month, day in ((1, 1), (2, 28), (9, 9), (10, 10), (12, 31))
        for hour, minute, second in ((0, 0, 0), (9, 9, 9), (10, 10, 10), (23, 59, 59))
        for micro in (0, 999, 1000, 9999, 10000, 99999, 100000, 999999)
    ]
    for value in values:
        reference = value.isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"
        assert iso_ms(value) == reference


def test_the_text_sorts_as_the_instants() -> None:
    spelled = [iso_ms(v) for v in INSTANTS]
    assert sorted(spelled) == spelled


def test_sqlite_columns_store_the_same_spelling() -> None:
    bind = IsoTimestamp().bind_processor(sa.create_engine("sqlite://").dialect)
    assert bind is not None
    assert [bind(v) for v in INSTANTS] == [iso_ms(v) for v in INSTANTS]
    assert bind(INSTANTS[0]) == "0999-12-31T23:59:59.999Z"


def test_each_value_gets_its_own_text_whatever_came_before() -> None:
    # iso_ms keeps the last value's text for an equal one (a record's two stamps): equal
    # instants in other zones share it, the next instant does not, and a naive wall clock
    # never matches an aware instant.
    moment = datetime(2025, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)
    east = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
    later = moment + timedelta(milliseconds=1)
    sequence = [moment, moment, east, later, moment, later.replace(tzinfo=None), later]
    assert [iso_ms(v) for v in sequence] == [
        "2025-03-04T05:06:07.891Z",
        "2025-03-04T05:06:07.891Z",
        "2025-03-04T05:06:07.891Z",
        "2025-03-04T05:06:07.892Z",
        "2025-03-04T05:06:07.891Z",
        iso_ms(later.replace(tzinfo=None).astimezone(UTC)),
        "2025-03-04T05:06:07.892Z",
    ]


def test_two_instants_of_one_wall_clock_get_their_own_texts() -> None:
    # The wall clock a DST change repeats: equal as datetimes of one zone (fold is ignored),
    # an hour apart as instants.
    from zoneinfo import ZoneInfo

    first = datetime(2025, 10, 26, 2, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    second = first.replace(fold=1)
    assert first == second
    assert [iso_ms(first), iso_ms(second), iso_ms(first)] == [
        "2025-10-26T00:30:00.000Z",
        "2025-10-26T01:30:00.000Z",
        "2025-10-26T00:30:00.000Z",
    ]
