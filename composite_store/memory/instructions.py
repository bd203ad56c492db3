"""The system-message text that gives the model its working memory and how to keep it."""

from __future__ import annotations

import json
import re
from typing import Any

from composite_store.memory.config import WorkingMemoryConfig

__all__ = ["signal_text", "system_text"]

_TAG = re.compile(r"<(/?)(working_memory)", re.IGNORECASE)

_SPAN = {
    "resource": "across all of this user's conversations",
    "thread": "for the rest of this conversation",
}


def system_text(
    config: WorkingMemoryConfig, memory: str | dict[str, Any] | None, *, read_only: bool
) -> str:
    """Render the working-memory system message.

    It carries the template (or the schema), the current memory and the usage rules; in
    read-only mode it carries no update instructions and never names the update tool.
    """
    shape = _shape(config)
    data = _data(memory)
    tool = config.tool_name
    if read_only:
        return "\n".join(
            [
                "WORKING MEMORY (READ-ONLY)",
                "Below is your working memory: what is known about the user and this "
                "conversation from earlier interactions. Use it to keep your answers "
                "consistent and personal.",
                "",
                "Rules:",
                "1. Treat it as background knowledge; do not mention it or quote it to the "
                "user.",
                "2. It is read-only in this session: you cannot change it.",
                "",
                shape,
                "",
                data,
            ]
        )
    if config.mode == "schema":
        how = (
            f"4. Call {tool} with only the fields you want to add or change, as a JSON "
            "object in `memory`: it is merged into the stored memory. Nested objects merge "
            "field by field; set a field to null to delete it; an array replaces the stored "
            "array, so always send the complete array. Fields you leave out are kept."
        )
    else:
        how = (
            f"4. Call {tool} with the complete Markdown document as a string in `memory`: "
            "it replaces the stored memory entirely. Keep the structure of the template, "
            "including sections that are still empty, and every fact already stored."
        )
    return "\n".join(
        [
            "WORKING MEMORY",
            f"You have a working memory: durable notes about the user and this conversation "
            f"that you will see again {_SPAN[config.scope]}. Keep it current with the "
            f"{tool} tool.",
            "",
            "Rules:",
            "1. Save anything likely to matter later (names, places, time zones, preferences, "
            "goals, decisions) as soon as you learn it; you need no permission.",
            "2. When a stored fact changes, update it, however small the change.",
            "3. Do not mention the memory to the user, and do not quiz the user to fill it.",
            how,
            f"5. Call {tool} only when something new or changed needs saving.",
            "",
            shape,
            "",
            data,
        ]
    )


def signal_text(config: WorkingMemoryConfig, memory: str | dict[str, Any] | None) -> str:
    """The contents of a working-memory state signal: the template (or schema) and the current
    memory, as in the system message, without its rules (the tool's description carries how
    to update it)."""
    return "\n".join(
        [
            "Current working memory for this conversation. Update it with the "
            f"{config.tool_name} tool when relevant information changes.",
            "",
            _shape(config),
            "",
            _data(memory),
        ]
    )


def _shape(config: WorkingMemoryConfig) -> str:
    if config.mode == "schema":
        schema = json.dumps(
            config.compiled_schema.json_schema, separators=(",", ":"), ensure_ascii=False
        )
        return f"<working_memory_schema>\n{_neutralize(schema)}\n</working_memory_schema>"
    template = config.effective_template.strip()
    return f"<working_memory_template>\n{_neutralize(template)}\n</working_memory_template>"


def _data(memory: str | dict[str, Any] | None) -> str:
    if memory is None:
        body = "(empty: nothing has been saved yet)"
    elif isinstance(memory, str):
        body = memory.strip()
    else:
        body = json.dumps(memory, ensure_ascii=False, indent=2)
    return f"<working_memory_data>\n{_neutralize(body)}\n</working_memory_data>"


def _neutralize(text: str) -> str:
    # The memory is written by the model and partly by users: a stray closing tag inside it
    # must not end the data block early and let the rest read as instructions.
    return _TAG.sub(lambda m: f"&lt;{m.group(1)}{m.group(2)}", text)
