"""Stored messages (content format 2) as chat-API messages for OpenAI and Anthropic."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from composite_store.records.memory import Message

__all__ = ["RecallFormat", "to_anthropic", "to_openai"]

RecallFormat = Literal["openai", "anthropic"]
JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Call:
    """One answered tool invocation: a call and its result."""

    id: str
    name: str
    args: Any
    result: Any


@dataclass(slots=True)
class _Turn:
    """Text, then the tool calls made after it, from one stored message."""

    text: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)

    @property
    def joined(self) -> str:
        return "\n".join(t for t in self.text if t.strip())


def to_openai(messages: Sequence[Message]) -> list[JsonObject]:
    """Convert messages (oldest first) to OpenAI chat messages.

    Text parts are joined with newlines. An assistant message's answered tool invocations
    become ``tool_calls`` on the assistant message followed by one ``role: "tool"`` message per
    result; text written after a tool call starts a new assistant message, so the order of
    the original turn is kept. Unanswered calls (no result stored) are left out because the
    API rejects a call without a result; so are reasoning, file and source parts, and messages
    left with nothing to say.
    """
    out: list[JsonObject] = []
    for message in messages:
        turns = _turns(message)
        if message.role != "assistant":
            text = "\n".join(t.joined for t in turns if t.joined)
            if text:
                out.append({"role": message.role, "content": text})
            continue
        for turn in turns:
            if not turn.joined and not turn.calls:
                continue
            entry: JsonObject = {"role": "assistant", "content": turn.joined or None}
            if turn.calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _text(call.args)},
                    }
                    for call in turn.calls
                ]
            out.append(entry)
            out.extend(
                {"role": "tool", "tool_call_id": call.id, "content": _text(call.result)}
                for call in turn.calls
            )
    return out


def to_anthropic(messages: Sequence[Message]) -> JsonObject:
    """Convert messages (oldest first) to the arguments of Anthropic's Messages API.

    Returns ``{"system": str, "messages": [...]}``, ready for
    ``client.messages.create(model=..., max_tokens=..., **result)``. System messages go to
    ``"system"`` (joined by blank lines; the key is absent when there are none), because the
    API takes no ``system`` role inside ``messages``. Content is a list of blocks: text parts
    become ``text`` blocks (joined with newlines), an answered tool invocation becomes a
    ``tool_use`` block in the assistant message and a ``tool_result`` block in a following user
    message. Consecutive messages of one role are merged, as the API expects alternating
    turns. Unanswered calls and non-text parts are left out, as in :func:`to_openai`.
    """
    system: list[str] = []
    out: list[JsonObject] = []

    def add(role: str, blocks: list[JsonObject]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        turns = _turns(message)
        if message.role == "system":
            text = "\n".join(t.joined for t in turns if t.joined)
            if text:
                system.append(text)
            continue
        if message.role == "user":
            text = "\n".join(t.joined for t in turns if t.joined)
            add("user", [{"type": "text", "text": text}] if text else [])
            continue
        for turn in turns:
            blocks: list[JsonObject] = (
                [{"type": "text", "text": turn.joined}] if turn.joined else []
            )
            blocks.extend(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.args)}
                for call in turn.calls
            )
            add("assistant", blocks)
            add(
                "user",
                [
                    {"type": "tool_result", "tool_use_id": call.id, "content": _text(call.result)}
                    for call in turn.calls
                ],
            )
    result: JsonObject = {"messages": out}
    if system:
        result = {"system": "\n\n".join(system), **result}
    return result


def _turns(message: Message) -> list[_Turn]:
    """Split a message into text-then-calls turns, in the order of its parts."""
    content = message.content.model_dump(exclude_none=True)
    turns = [_Turn()]
    saw_text = False
    saw_call = False
    for part in content.get("parts") or []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            if turns[-1].calls:
                turns.append(_Turn())
            turns[-1].text.append(part["text"])
            saw_text = True
        elif kind == "tool-invocation" and isinstance(part.get("toolInvocation"), Mapping):
            saw_call = True
            call = _call(part["toolInvocation"])
            if call is not None:
                turns[-1].calls.append(call)
    # Older messages keep their text in ``content`` and their calls in ``toolInvocations``.
    legacy_text = content.get("content")
    if not saw_text and isinstance(legacy_text, str):
        turns[0].text.insert(0, legacy_text)
    if not saw_call:
        for invocation in content.get("toolInvocations") or []:
            if isinstance(invocation, Mapping):
                call = _call(invocation)
                if call is not None:
                    turns[-1].calls.append(call)
    return turns


def _call(invocation: Mapping[str, Any]) -> _Call | None:
    if invocation.get("state") != "result" or "result" not in invocation:
        return None
    call_id, name = invocation.get("toolCallId"), invocation.get("toolName")
    if not isinstance(call_id, str) or not isinstance(name, str):
        return None
    return _Call(call_id, name, invocation.get("args", {}), invocation["result"])


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _input(args: Any) -> JsonObject:
    # tool_use input must be an object; arguments stored as JSON text are parsed back.
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return {"value": args}
    if isinstance(args, Mapping):
        return dict(args)
    return {"value": args}
