"""Records of the memory domain: threads, messages (format 2 content) and resources."""

from __future__ import annotations

import json
from typing import Any, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from composite_store.records.base import Record, StampedRecord, Timestamp, not_blank, stored, when
from composite_store.records.json import (
    NOT_COMPACT,
    Id,
    JsonObject,
    Text,
    check_json,
    checked_encoder,
    compact_value,
    encodable_text,
    parse_json,
)
from composite_store.records.trusted import RowReader, row_reader, stored_view, trusted

__all__ = [
    "CloneResult",
    "Message",
    "MessageContent",
    "MessageUpdate",
    "Resource",
    "Role",
    "Thread",
    "message_from_row",
    "stored_content_text",
]

Role = Literal["user", "assistant", "system"]


class Thread(StampedRecord):
    """A conversation thread owned by one resource (user, tenant)."""

    id: Id = Field(min_length=1)
    resource_id: Id = stored("resourceId", min_length=1)
    title: Text = ""
    metadata: JsonObject | None = None
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")

    @field_validator("id", "resource_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return not_blank(value)

    @field_validator("title", mode="before")
    @classmethod
    def _title_none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


class MessageContent(BaseModel):
    """Message content, format 2: ``{format: 2, parts: [...], content?, metadata?, ...}``.

    Other keys (``toolInvocations``, ``reasoning``, ``experimental_attachments``, ...) are kept
    as they are. A plain string is a legacy message and becomes one text part.
    """

    model_config = ConfigDict(extra="allow")

    format: Literal[2] = 2
    parts: list[dict[str, Any]] = Field(default_factory=list)
    content: str | None = None
    metadata: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"format": 2, "content": value, "parts": [{"type": "text", "text": value}]}
        return value

    @model_validator(mode="after")
    def _json_data(self) -> MessageContent:
        # Content is stored as one JSON document: refuse what cannot be (NaN, deep nesting,
        # non-string keys) here, so a batch fails before any backend writes a message of it.
        try:
            # Content is JSON text, which escapes NUL: only unencodable text is refused.
            check_json(self.parts, text=encodable_text)
            check_json(self.content, text=encodable_text)
            check_json(self.metadata, text=encodable_text)
            if self.__pydantic_extra__:
                check_json(self.__pydantic_extra__, text=encodable_text)
        except ValueError as exc:
            raise ValueError(f"content is not storable JSON: {exc}") from None
        return self

    def to_json(self) -> str:
        """Compact JSON (no spaces, non-ASCII as UTF-8, no NaN), as Mastra stores it.

        What ``model_dump(exclude_none=True)`` gives, without copying ``parts`` first: fields
        and extra keys that are not None (values inside them are kept as they are).
        """
        fields = {k: v for k, v in self.__dict__.items() if v is not None}
        if self.__pydantic_extra__:
            fields.update((k, v) for k, v in self.__pydantic_extra__.items() if v is not None)
        return _content_json(fields)

    @classmethod
    def from_stored(cls, text: str | dict[str, Any]) -> MessageContent:
        """Read stored content: JSON text of format 2, or a legacy plain string."""
        if isinstance(text, dict):
            value: Any = text
        else:
            try:
                value = parse_json(text)
            except ValueError:
                value = text
        if isinstance(value, dict):
            extra = None
            if value.keys() <= _CONTENT_FIELDS:  # the usual case: nothing extra to split off
                fields = value
            else:
                fields = {k: value[k] for k in _CONTENT_FIELDS if k in value}
                extra = {k: v for k, v in value.items() if k not in _CONTENT_FIELDS}
            if "format" not in fields:
                fields["format"] = 2
            if "parts" not in fields:
                fields["parts"] = []
            return trusted(cls, fields, extra)
        if not isinstance(value, str):
            value = text
        return trusted(
            cls, {"format": 2, "content": value, "parts": [{"type": "text", "text": value}]}
        )


_CONTENT_FIELDS = frozenset(MessageContent.model_fields)


def stored_content_text(text: str | dict[str, Any]) -> str:
    """``MessageContent.from_stored(text).to_json()``, without the record in between for the
    usual stored content (a JSON object holding ``format`` and ``parts`` and only content
    fields): the same text, the same errors. The stored row of a record read from a stored
    row (copy's row path, ``sql.transfer.export_stored``)."""
    if type(text) is str:
        value = compact_value(text)
        if _usual_content(value) and None not in value.values():
            # Already the text the path below writes of it (nearly every stored row): kept
            # as it is, not parsed by the standard library and dumped again.
            return text
        if value is NOT_COMPACT:  # else parse_json reads the same value (compact_value)
            try:
                value = parse_json(text)
            except ValueError:
                value = None  # a legacy plain string: from_stored's path
        if _usual_content(value):
            # What from_stored builds of it holds these fields (the missing ones None) and
            # nothing extra; to_json leaves out the None ones.
            if None in value.values():
                value = {k: v for k, v in value.items() if v is not None}
            return _parsed_content_json(value)
    return MessageContent.from_stored(text).to_json()


def _usual_content(value: Any) -> TypeGuard[dict[str, Any]]:
    """Whether parsed stored content is a JSON object holding ``format`` and ``parts`` and
    only content fields."""
    return (
        type(value) is dict
        and "format" in value
        and "parts" in value
        and value.keys() <= _CONTENT_FIELDS
    )


class Message(Record):
    """One message of a thread."""

    id: Id = Field(min_length=1)
    thread_id: Id = stored("thread_id", "threadId", min_length=1)
    content: MessageContent
    role: Role
    type: Text = "v2"
    created_at: Timestamp = when("createdAt")
    resource_id: Id | None = stored("resourceId", default=None)

    @field_validator("id", "thread_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return not_blank(value)

    @field_validator("resource_id")
    @classmethod
    def _no_blank_owner(cls, value: str | None) -> str | None:
        # A blank owner could never be asked for (``resource_id`` arguments are ids).
        return None if value is None else not_blank(value)

    def stored_row(self) -> dict[str, Any]:
        """The stored row: documented names, ``content`` as its JSON text (dumped once)."""
        # The field values as they are (ids, role, timestamps: nothing nested to copy), which
        # model_dump would rebuild through the serializer at several times the cost.
        row = stored_view(self)
        row["content"] = self.content.to_json()
        return row


def _model_as_json(value: Any) -> Any:
    """``json.dumps`` fallback: a model inside content (a part given as a model) as its dict."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: ``checked_json`` that also dumps a model found inside content (checked by ``check_json``
#: when the content was built); what orjson refuses goes to the standard library's encoder,
#: circular references refused.
_content_json = checked_encoder(
    _model_as_json,
    json.JSONEncoder(
        separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_model_as_json
    ).encode,
)


#: ``_content_json`` for values parsed from JSON text (which holds no cycle and no model).
_parsed_content_json = checked_encoder(_model_as_json)


#: A Message from a trusted stored row or document: content as stored (JSON text or a dict).
message_from_row: RowReader[Message] = row_reader(Message, content=MessageContent.from_stored)


class MessageUpdate(Record):
    """A partial message update: given fields replace, ``content`` and its metadata merge."""

    id: Id = Field(min_length=1)
    thread_id: Id | None = stored("thread_id", "threadId", default=None)
    content: dict[str, Any] | None = None
    role: Role | None = None
    type: Text | None = None
    created_at: Timestamp | None = stored("createdAt", default=None)
    resource_id: Id | None = stored("resourceId", default=None)

    @field_validator("content", mode="before")
    @classmethod
    def _content_model(cls, value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(exclude_none=True)
        check_json(value, text=encodable_text)
        return value


class Resource(StampedRecord):
    """A resource (user, tenant) with its resource-scoped working memory."""

    id: Id = Field(min_length=1)
    working_memory: Text | None = stored("workingMemory", default=None)
    metadata: JsonObject | None = None
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")


class CloneResult(BaseModel):
    """What ``clone_thread`` returns: the new thread, its messages and the id mapping."""

    thread: Thread
    messages: list[Message]
    message_id_map: dict[str, str]
