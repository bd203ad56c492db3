"""A user profile that fills in over a conversation, kept in working memory.

Runs offline: ``ScriptedModel`` stands in for a chat model. It gets what a real model would
get (the system message with the working memory, the recalled history, the tool list), answers
with OpenAI-style tool calls, and the application applies them with ``Memory.apply_tool_call``.
The profile is a pydantic schema, so each turn sends only the new field and it is merged in.

    uv run python examples/working_memory_profile.py            # a temporary SQLite file
    uv run python examples/working_memory_profile.py --db agent.db
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from composite_store import Message, open_store
from composite_store.memory import Memory, WorkingMemoryConfig

USER = "user-ana"
TURNS = [
    "Hi! I'm Ana.",
    "I live in Lisbon these days.",
    "My time zone is Europe/Lisbon, by the way.",
    "What do you remember about me?",
]


class Profile(BaseModel):
    """What the assistant keeps about the user."""

    name: str | None = Field(default=None, description="What the user likes to be called")
    location: str | None = Field(default=None, description="City the user lives in")
    time_zone: str | None = Field(default=None, description="IANA time zone, e.g. Europe/Lisbon")


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as OpenAI's chat API delivers it


@dataclass
class Reply:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)


class ScriptedModel:
    """Stands in for a language model: spots facts in the user's words and saves them."""

    facts = (
        ("name", re.compile(r"\bI'?m ([A-Z][a-z]+)")),
        ("location", re.compile(r"\blive in ([A-Z][a-z]+(?: [A-Z][a-z]+)*)")),
        ("time_zone", re.compile(r"\btime zone is ([A-Za-z_]+/[A-Za-z_]+)")),
    )

    def respond(
        self, system: str, history: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Reply:
        said = history[-1]["content"]
        offered = {tool["name"] for tool in tools}
        learned = {key: m.group(1) for key, pattern in self.facts if (m := pattern.search(said))}
        if learned and "updateWorkingMemory" in offered:
            call = ToolCall(
                id=f"call_{uuid.uuid4().hex[:8]}",
                name="updateWorkingMemory",
                arguments=json.dumps({"memory": learned}),
            )
            noted = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in learned.items())
            return Reply(text=f"Nice to know: {noted}.", tool_calls=[call])
        # A real model reads its memory from the system message; so does this one.
        data = re.search(r"<working_memory_data>\n(.*?)\n</working_memory_data>", system, re.S)
        known = json.loads(data.group(1)) if data and data.group(1).startswith("{") else {}
        summary = "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in known.items())
        return Reply(text=f"Here is what I know: {summary or 'nothing yet'}.")


class Clock:
    """Strictly increasing message timestamps, so recall keeps the turn order."""

    def __init__(self) -> None:
        self.last = datetime.now(UTC)

    def tick(self) -> datetime:
        self.last = max(datetime.now(UTC), self.last + timedelta(milliseconds=1))
        return self.last


async def converse(db: Path) -> None:
    store = open_store(f"sqlite:///{db}")
    memory = Memory(store, working_memory=WorkingMemoryConfig(scope="resource", schema=Profile))
    model, clock = ScriptedModel(), Clock()
    async with store:
        thread = f"thread-{uuid.uuid4().hex[:8]}"
        await memory.create_thread(thread_id=thread, resource_id=USER, title="Getting to know Ana")
        for number, text in enumerate(TURNS, start=1):
            await store.memory.save_messages(messages=[_message(thread, "user", text, clock)])
            system = await memory.system_message(thread_id=thread, resource_id=USER)
            history = await memory.recall(thread_id=thread, resource_id=USER, last=20)
            reply = model.respond(system, history, memory.list_tools())
            parts: list[dict[str, Any]] = []
            for call in reply.tool_calls:
                result = await memory.apply_tool_call(
                    call.name, call.arguments, thread_id=thread, resource_id=USER
                )
                if not result["success"]:
                    raise SystemExit(f"the tool call failed: {result['message']}")
                parts.append(_invocation(call, result))
            parts.append({"type": "text", "text": reply.text})
            await store.memory.save_messages(
                messages=[_message(thread, "assistant", parts, clock)]
            )
            profile = await memory.get_working_memory(thread_id=thread, resource_id=USER)
            print(f"turn {number}  user: {text}")
            print(f"        assistant: {reply.text}")
            print(f"        working memory: {json.dumps(profile)}")

        # Resource scope: a new conversation of the same user starts with the profile.
        later = f"thread-{uuid.uuid4().hex[:8]}"
        await memory.create_thread(thread_id=later, resource_id=USER, title="Next day")
        carried = await memory.get_working_memory(thread_id=later, resource_id=USER)
        print(f"new thread {later} starts with: {json.dumps(carried)}")
        recalled = await memory.recall(thread_id=thread, resource_id=USER, last=3)
        print("last 3 stored messages, as OpenAI chat messages:")
        for entry in recalled:
            print("   ", json.dumps(entry))
        if carried != {"name": "Ana", "location": "Lisbon", "time_zone": "Europe/Lisbon"}:
            raise SystemExit(f"unexpected profile: {carried}")


def _message(thread: str, role: str, content: str | list[dict[str, Any]], clock: Clock) -> Message:
    body: Any = content if isinstance(content, str) else {"format": 2, "parts": content}
    return Message(
        id=str(uuid.uuid4()),
        thread_id=thread,
        resource_id=USER,
        role=role,
        content=body,
        created_at=clock.tick(),
    )


def _invocation(call: ToolCall, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool-invocation",
        "toolInvocation": {
            "state": "result",
            "toolCallId": call.id,
            "toolName": call.name,
            "args": json.loads(call.arguments),
            "result": result,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="SQLite file to use (default: a temporary one)")
    args = parser.parse_args()
    if args.db is not None:
        asyncio.run(converse(args.db))
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(converse(Path(tmp) / "working-memory.db"))


if __name__ == "__main__":
    main()
