"""Working memory as a state signal: the record, its cache key, and when to emit it.

With ``WorkingMemoryConfig(use_state_signals=True)`` the current working memory reaches the
model as a *state signal* in the conversation instead of inside the system message (Mastra's
experimental delivery path). A signal is a snapshot of one state lane (``stateId``
``working-memory``) keyed by a ``cacheKey`` derived from what it shows, so:

- an identical snapshot is emitted once: while the last one is still in the context window, a
  request with the same cache key emits nothing;
- a snapshot that has slid out of the context window is emitted again (same cache key), so the
  model always sees the current memory;
- a changed memory (a tool call, an application update) gives a new cache key and a new
  snapshot.

Which snapshot went out last is tracking metadata of the thread (``metadata["stateSignals"]``
on the thread, so dedup holds across processes); whether it is still in the context window is
read from the messages the caller is about to send (``StateSignal.to_message`` marks them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from composite_store.records.memory import Message

__all__ = [
    "STATE_ID",
    "TRACKING_KEY",
    "SignalTracking",
    "StateSignal",
    "cache_key",
    "has_snapshot",
]

#: The state lane of working memory.
STATE_ID = "working-memory"
#: Where a thread's metadata keeps the tracking of its state lanes.
TRACKING_KEY = "stateSignals"
#: Where a message's ``content.metadata`` says which snapshot it carries.
MESSAGE_MARK = "stateSignal"


class SignalTracking(BaseModel):
    """What the thread last received on one state lane."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    current_cache_key: str = Field(alias="currentCacheKey")
    version: int = Field(ge=1)
    last_signal_id: str = Field(alias="lastSignalId")
    updated_at: datetime = Field(alias="updatedAt")


class StateSignal(BaseModel):
    """One snapshot of working memory for the model's context.

    ``contents`` is the text the model reads (the template or schema and the current memory);
    ``working_memory`` the memory itself (text in template mode, a dict in schema mode, None
    when empty). ``tracking`` is the thread's tracking metadata after this emission.
    """

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    kind: Literal["state"] = "state"
    state_id: str = Field(default=STATE_ID, alias="stateId")
    id: str
    mode: Literal["snapshot"] = "snapshot"
    cache_key: str = Field(alias="cacheKey")
    tag_name: str = Field(default=STATE_ID, alias="tagName")
    contents: str
    working_memory: str | dict[str, Any] | None = Field(alias="workingMemory")
    format: Literal["markdown", "json"]
    scope: Literal["resource", "thread"]
    tracking: SignalTracking

    def to_message(self, *, thread_id: str, resource_id: str | None = None) -> Message:
        """The signal as a message for the context window (role ``system``), marked so that
        :func:`has_snapshot` finds it when it is passed back with the next request."""
        return Message(
            id=self.id.replace(":", "-") + f"-{thread_id}",
            thread_id=thread_id,
            resource_id=resource_id,
            role="system",
            content={
                "format": 2,
                "parts": [
                    {
                        "type": "text",
                        "text": f"<{self.tag_name}>\n{self.contents}\n</{self.tag_name}>",
                    }
                ],
                "metadata": {
                    MESSAGE_MARK: {
                        "stateId": self.state_id,
                        "id": self.id,
                        "cacheKey": self.cache_key,
                    }
                },
            },
        )


def cache_key(format: str, data: str | dict[str, Any] | None) -> str:
    """A key that changes exactly when the snapshot's content does: deterministic JSON (sorted
    keys, compact), so the order of keys in a schema-mode memory does not matter."""
    return json.dumps(
        {"format": format, "data": "" if data is None else data},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def has_snapshot(context_window: Sequence[Message | Mapping[str, Any]] | None) -> bool:
    """Whether the messages about to be sent still carry a working-memory snapshot."""
    for message in context_window or ():
        content = message.content if isinstance(message, Message) else message.get("content")
        metadata = _metadata(content)
        mark = metadata.get(MESSAGE_MARK) if isinstance(metadata, Mapping) else None
        if isinstance(mark, Mapping) and mark.get("stateId") == STATE_ID:
            return True
    return False


def _metadata(content: Any) -> Any:
    if isinstance(content, Mapping):
        return content.get("metadata")
    return getattr(content, "metadata", None)
