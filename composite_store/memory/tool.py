"""The ``updateWorkingMemory`` tool: its definition for function calling and its arguments."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from composite_store.errors import ValidationError
from composite_store.memory.config import STATE_SIGNAL_TOOL_NAME, TOOL_NAME, WorkingMemoryConfig

__all__ = ["STATE_SIGNAL_TOOL_NAME", "TOOL_NAME", "read_arguments", "tool_definition"]

_TEMPLATE_DESCRIPTION = (
    "Save your working memory: durable notes about the user and this conversation that you "
    "will see again in later turns. Pass the complete, updated Markdown document as a string "
    "in `memory`. It replaces what is stored, so keep every section of the template (empty "
    "ones too) and every fact you still want to remember."
)
_SCHEMA_DESCRIPTION = (
    "Save your working memory: durable facts about the user and this conversation, as a JSON "
    "object that follows the schema. Pass only the fields you want to add or change in "
    "`memory`; they are merged into what is stored. Nested objects merge field by field, a "
    "field set to null is deleted, and an array replaces the stored array, so send the whole "
    "array. Fields you leave out keep their stored values."
)


def tool_definition(config: WorkingMemoryConfig) -> dict[str, Any]:
    """Return ``{"name", "description", "parameters"}`` for ``config``.

    ``parameters`` is the JSON Schema of the arguments: ``{"memory": string}`` in template
    mode, ``{"memory": <the memory schema>}`` in schema mode. This is the function object of
    OpenAI's chat API (wrap it as ``{"type": "function", "function": tool}``); for Anthropic
    pass ``{"name", "description", "input_schema": tool["parameters"]}``.
    """
    if config.mode == "template":
        return {
            "name": config.tool_name,
            "description": _TEMPLATE_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {
                    "memory": {
                        "type": "string",
                        "description": "The whole working memory as Markdown text (a string, "
                        "never an object).",
                    }
                },
                "required": ["memory"],
                "additionalProperties": False,
            },
        }
    memory = config.compiled_schema.json_schema
    # Definitions move to the root of the parameters, where "#/$defs/..." references resolve
    # once the memory schema is nested under "memory".
    hoisted = {key: memory.pop(key) for key in ("$defs", "definitions") if key in memory}
    memory.pop("$schema", None)
    memory.pop("$id", None)
    memory.setdefault(
        "description", "The fields to add or change, as a JSON object (merged into memory)."
    )
    return {
        "name": config.tool_name,
        "description": _SCHEMA_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {"memory": memory},
            "required": ["memory"],
            "additionalProperties": False,
            **hoisted,
        },
    }


def read_arguments(arguments: Mapping[str, Any] | str, config: WorkingMemoryConfig) -> Any:
    """Return the ``memory`` argument of a tool call, checked for the configured mode.

    ``arguments`` is the dict of arguments or their JSON text (OpenAI sends text). In template
    mode ``memory`` must be a string; in schema mode an object, JSON text of an object, or
    null (nothing to change). Raises ``ValidationError`` with a message for the model.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise ValidationError(f"the tool arguments are not valid JSON: {exc}") from exc
    if not isinstance(arguments, Mapping):
        raise ValidationError(
            f"the tool arguments must be a JSON object like {{\"memory\": ...}}, "
            f"got {type(arguments).__name__}"
        )
    extra = sorted(set(arguments) - {"memory"})
    if extra:
        raise ValidationError(
            f"unexpected arguments {extra}: {config.tool_name} takes one argument, `memory`"
        )
    if "memory" not in arguments:
        raise ValidationError(f"missing the `memory` argument of {config.tool_name}")
    memory = arguments["memory"]
    if config.mode == "template" and not isinstance(memory, str):
        raise ValidationError(
            f"`memory` must be the Markdown text as a string, got {_json_type(memory)}"
        )
    if config.mode == "schema" and not isinstance(memory, (str, Mapping)) and memory is not None:
        raise ValidationError(
            f"`memory` must be a JSON object with the fields to change, got {_json_type(memory)}"
        )
    return memory


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return "a string" if isinstance(value, str) else type(value).__name__
