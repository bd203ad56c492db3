"""Records of the memory domain: threads, messages (format 2 content) and resources."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from composite_store.records.base import Record, Timestamp, stored, trusted, when

__all__ = [
    "CloneResult",
    "Message",
    "MessageContent",
    "MessageUpdate",
    "Resource",
    "Role",
    "Thread",
]

Role = Literal["user", "assistant", "system"]


class Thread(Record):
    """A conversation thread owned by one resource (user, tenant)."""

    id: str = Field(min_length=1)
    resource_id: str = stored("resourceId", min_length=1)
    title: str = ""
    metadata: dict[str, Any] | None = None
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")

    @field_validator("id", "resource_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

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

    def to_json(self) -> str:
        """Compact JSON (no spaces, non-ASCII as UTF-8, no NaN), as Mastra stores it."""
        return json.dumps(
            self.model_dump(exclude_none=True),
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )

    @classmethod
    def from_stored(cls, text: str | dict[str, Any]) -> MessageContent:
        """Read stored content: JSON text of format 2, or a legacy plain string."""
        if isinstance(text, dict):
            value: Any = text
        else:
            try:
                value = json.loads(text)
            except ValueError:
                value = text
        if isinstance(value, dict):
            if value.keys() <= _CONTENT_FIELDS:  # the usual case: nothing extra to split off
                fields, extra = value, {}
            else:
                fields = {k: value[k] for k in _CONTENT_FIELDS if k in value}
                extra = {k: v for k, v in value.items() if k not in _CONTENT_FIELDS}
            fields.setdefault("format", 2)
            fields.setdefault("parts", [])
            return trusted(cls, fields, extra)
        if not isinstance(value, str):
            value = text
        return trusted(
            cls, {"format": 2, "content": value, "parts": [{"type": "text", "text": value}]}
        )


_CONTENT_FIELDS = frozenset(MessageContent.model_fields)


class Message(Record):
    """One message of a thread."""

    id: str = Field(min_length=1)
    thread_id: str = stored("thread_id", "threadId", min_length=1)
    content: MessageContent
    role: Role
    type: str = "v2"
    created_at: Timestamp = when("createdAt")
    resource_id: str | None = stored("resourceId", default=None)

    @field_validator("id", "thread_id")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class MessageUpdate(Record):
    """A partial message update: given fields replace, ``content`` and its metadata merge."""

    id: str = Field(min_length=1)
    thread_id: str | None = stored("thread_id", "threadId", default=None)
    content: dict[str, Any] | None = None
    role: Role | None = None
    type: str | None = None
    created_at: Timestamp | None = stored("createdAt", default=None)
    resource_id: str | None = stored("resourceId", default=None)

    @field_validator("content", mode="before")
    @classmethod
    def _content_model(cls, value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(exclude_none=True)
        return value


class Resource(Record):
    """A resource (user, tenant) with its resource-scoped working memory."""

    id: str = Field(min_length=1)
    working_memory: str | None = stored("workingMemory", default=None)
    metadata: dict[str, Any] | None = None
    created_at: Timestamp = when("createdAt")
    updated_at: Timestamp = when("updatedAt")


class CloneResult(BaseModel):
    """What ``clone_thread`` returns: the new thread, its messages and the id mapping."""

    thread: Thread
    messages: list[Message]
    message_id_map: dict[str, str]
