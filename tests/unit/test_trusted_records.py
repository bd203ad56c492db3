"""Records built from trusted rows (``records.trusted``) equal validated ones, field for field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel

import composite_store.records as records
from composite_store.records.base import Record, StampedRecord, now_utc
from composite_store.records.json import parse_json
from composite_store.records.memory import Message, MessageContent, Thread, message_from_row
from composite_store.records.observability import Span
from composite_store.records.tables import record_from_row, row_of
from composite_store.records.trusted import (
    from_row,
    replaced,
    row_reader,
    stored_view,
    trusted,
    tuple_reader,
)

AT = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def _state(record: BaseModel) -> tuple[Any, ...]:
    return (
        type(record),
        record.__dict__,
        record.model_fields_set,
        record.__pydantic_extra__,
        record.__pydantic_private__,
    )


def _message() -> Message:
    return Message(
        id="m1",
        thread_id="t1",
        content={"format": 2, "parts": [{"type": "text", "text": "hi"}], "content": "hi"},
        role="user",
        created_at=AT,
        resource_id="r1",
    )


def test_message_from_a_whole_row_equals_the_validated_message() -> None:
    message = _message()
    row = message.stored_row()
    read = message_from_row(row)
    assert read == message
    assert _state(read.content) == _state(message.content)
    assert read.model_fields_set == set(Message.model_fields)
    assert read.model_dump() == message.model_dump()


def test_a_row_lacking_a_column_takes_the_field_default() -> None:
    row = _message().stored_row()
    del row["type"], row["resourceId"]
    read = message_from_row(row)
    assert read.type == "v2"
    assert read.resource_id is None
    assert "type" not in read.model_fields_set


def test_absent_is_none_reads_missing_names_as_none() -> None:
    reader = row_reader(Thread, absent_is_none=True)
    thread = reader({"id": "t1", "resourceId": "r1", "createdAt": AT, "updatedAt": AT})
    assert thread.title is None
    assert thread.metadata is None
    assert thread.model_fields_set == set(Thread.model_fields)


def test_each_record_gets_fresh_containers() -> None:
    first = trusted(MessageContent, {})
    second = trusted(MessageContent, {})
    first.parts.append({"type": "text", "text": "x"})
    assert second.parts == []
    assert first.__pydantic_extra__ is not second.__pydantic_extra__
    a, b = (message_from_row(_message().stored_row()) for _ in range(2))
    assert a.model_fields_set is not b.model_fields_set


def test_a_record_read_back_can_be_changed_like_a_validated_one() -> None:
    read = message_from_row(_message().stored_row())
    read.role = "assistant"
    assert read.role == "assistant"
    assert read.model_copy(update={"type": "v3"}).type == "v3"
    read.content.reasoning = "because"  # extra key on content (extra="allow")
    assert json.loads(read.content.to_json())["reasoning"] == "because"


def test_convert_must_name_a_field() -> None:
    with pytest.raises(TypeError, match="no field"):
        row_reader(Message, contents=str)


def test_every_table_round_trips_through_its_row() -> None:
    span = Span(
        trace_id="tr", span_id="sp", name="n", span_type="AGENT_RUN", started_at=AT,
        attributes={"a": None}, input={"q": 1},
    )
    thread = Thread(id="t", resource_id="r")
    for table, record in (("messages", _message()), ("ai_spans", span), ("threads", thread)):
        read = record_from_row(table, row_of(table, record))
        assert read == record, table
        assert read.__dict__ == record.__dict__, table  # fields set: every column read
    for record in (span, thread):  # rows that hold Python values as they are (no JSON text)
        assert from_row(type(record), record.stored()) == record


def test_to_json_matches_model_dump_exclude_none() -> None:
    content = MessageContent.model_validate(
        {"parts": [{"type": "text", "text": "é", "x": None}], "metadata": None,
         "toolInvocations": [{"a": None}], "dropped": None}
    )
    assert json.loads(content.to_json()) == content.model_dump(exclude_none=True)
    assert "é" in content.to_json()


def _subclasses(cls: type[Record]) -> list[type[Record]]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def test_every_record_with_two_now_stamps_gets_one_instant_for_both() -> None:
    # A record whose createdAt and updatedAt both default to now must be a StampedRecord,
    # else a new one can come out with updatedAt a millisecond after createdAt.
    assert records.Thread in _subclasses(Record)
    for model in _subclasses(Record):
        if model is StampedRecord:
            continue
        fields = model.model_fields
        stamped = all(
            name in fields and fields[name].default_factory is now_utc
            for name in ("created_at", "updated_at")
        )
        assert stamped == issubclass(model, StampedRecord), model.__name__


def test_a_driver_row_read_by_position_equals_the_validated_message() -> None:
    message = _message()
    row = message.stored_row()
    columns = ("resourceId", "id", "createdAt", "role", "thread_id", "type", "content", "extra")
    values = tuple(row.get(c, "ignored") for c in columns)
    read = tuple_reader(Message, columns, (("content", MessageContent.from_stored),))(values)
    assert read == message
    assert _state(read) == _state(message_from_row(row))
    assert _state(read.content) == _state(message.content)


def test_a_positional_reader_refuses_rows_without_a_field() -> None:
    with pytest.raises(TypeError, match="createdAt"):
        tuple_reader(Message, ("id", "thread_id", "content", "role", "type", "resourceId"))


@pytest.mark.parametrize(
    "text",
    [
        '{"format":2,"parts":[],"content":"x"}',
        ' {"a": [1, 2.5, null, true]} ',  # whitespace around: json.loads' path
        '"just a string"',
        "[]",
        "12",
    ],
)
def test_parse_json_reads_what_json_loads_reads(text: str) -> None:
    assert parse_json(text) == json.loads(text)


@pytest.mark.parametrize("text", ['{"a":1} trailing', '{"a":', "", "{'a': 1}", "NaNx"])
def test_parse_json_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as raised:
        parse_json(text)
    assert str(raised.value) == str(expected.value)


def _span() -> Span:
    return Span(
        trace_id="t1",
        span_id="s1",
        name="step",
        span_type="TOOL_CALL",
        started_at=AT,
        attributes={"model": "gpt"},
        input={"q": "x"},
        tags=["a"],
    )


def test_replaced_equals_model_copy_with_the_update() -> None:
    span = _span()
    copy = replaced(span, updated_at=AT, name="renamed")
    assert _state(copy) == _state(span.model_copy(update={"updated_at": AT, "name": "renamed"}))
    assert span.name == "step"
    assert span.updated_at is None


def test_stored_view_holds_what_model_dump_by_alias_holds() -> None:
    span = _span()
    view = stored_view(span)
    assert view == span.model_dump(by_alias=True)
    assert view["attributes"] is span.attributes  # a view: nothing copied
