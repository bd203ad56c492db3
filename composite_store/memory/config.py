"""``WorkingMemoryConfig``: where working memory lives and what shape it has."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from composite_store.errors import UnsupportedOperationError, ValidationError
from composite_store.memory.schemas import MemorySchema
from composite_store.memory.templates import DEFAULT_TEMPLATE

__all__ = ["Mode", "Scope", "ToolVersion", "WorkingMemoryConfig"]

#: ``resource``: one memory per resource (user, tenant), shared by all its threads;
#: ``thread``: one memory per thread.
Scope = Literal["resource", "thread"]
#: ``template``: Markdown text replaced whole; ``schema``: a JSON object updated by merges.
Mode = Literal["template", "schema"]
#: Mastra's template tool generations: ``stable`` (the whole text per call) and ``vnext`` (its
#: experimental search-and-replace tool, which this library does not offer yet).
ToolVersion = Literal["stable", "vnext"]

_SCOPES = ("resource", "thread")

#: The write tool's name, as Mastra names it (stored tool invocations use it too).
TOOL_NAME = "updateWorkingMemory"
#: Its name when working memory is delivered as a state signal.
STATE_SIGNAL_TOOL_NAME = "setWorkingMemory"


@dataclass(frozen=True, slots=True)
class WorkingMemoryConfig:
    """How a :class:`~composite_store.memory.Memory` keeps working memory.

    ``scope="resource"`` (the default) stores the memory in ``mastra_resources.workingMemory``,
    shared by every thread of the resource; ``scope="thread"`` stores it in the thread's
    ``metadata["workingMemory"]``. The two scopes never see each other's memory.

    Give a Markdown ``template`` (the default template when neither is given), or a ``schema``:
    a pydantic model class or a JSON Schema dict describing a JSON object. Giving both raises
    ``ValidationError``, as does an invalid JSON Schema.

    ``use_state_signals=True`` (experimental, as in Mastra) changes only how the memory reaches
    the model: no system message; instead ``Memory.state_signal`` returns a
    :class:`~composite_store.memory.signals.StateSignal` (``stateId`` ``working-memory``) to put
    in the context, emitted once per distinct snapshot and again when the last one has slid out
    of the context window; the write tool is named ``setWorkingMemory``. The stored memory is
    the same. It cannot be combined with ``version="vnext"``.
    """

    enabled: bool = True
    scope: Scope = "resource"
    template: str | None = None
    schema: type[BaseModel] | Mapping[str, Any] | None = None
    use_state_signals: bool = False
    version: ToolVersion = "stable"
    _compiled: MemorySchema | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ValidationError(f"enabled must be True or False, got {self.enabled!r}")
        if self.scope not in _SCOPES:
            raise ValidationError(
                f"scope must be 'resource' or 'thread', got {self.scope!r}"
            )
        if self.template is not None and self.schema is not None:
            raise ValidationError(
                "give WorkingMemoryConfig either template= (Markdown, replaced on update) or "
                "schema= (a JSON object, merged on update), not both"
            )
        if self.template is not None and (
            not isinstance(self.template, str) or not self.template.strip()
        ):
            raise ValidationError(
                f"template must be non-blank Markdown text, got {self.template!r}; "
                "omit it to use the default template"
            )
        if not isinstance(self.use_state_signals, bool):
            raise ValidationError(
                f"use_state_signals must be True or False, got {self.use_state_signals!r}"
            )
        if self.version not in ("stable", "vnext"):
            raise ValidationError(f"version must be 'stable' or 'vnext', got {self.version!r}")
        if self.version == "vnext":
            if self.use_state_signals:
                raise ValidationError(
                    "use_state_signals cannot be combined with version='vnext' (as in Mastra): "
                    "state signals deliver the stable tool's whole-document memory"
                )
            raise UnsupportedOperationError(
                "version='vnext' (Mastra's experimental search-and-replace tool) is not "
                "offered; use the default version='stable'"
            )
        if self.schema is not None:
            # Compiled once here, so a bad schema fails at configuration time, not mid-chat.
            object.__setattr__(self, "_compiled", MemorySchema.from_source(self.schema))

    @property
    def mode(self) -> Mode:
        """``"schema"`` when a schema is configured, else ``"template"``."""
        return "schema" if self.schema is not None else "template"

    @property
    def tool_name(self) -> str:
        """The write tool's name: ``setWorkingMemory`` with state signals (Mastra's name on that
        path), else ``updateWorkingMemory``."""
        return STATE_SIGNAL_TOOL_NAME if self.use_state_signals else TOOL_NAME

    @property
    def effective_template(self) -> str:
        """The Markdown template in use: the configured one, or the default."""
        return self.template if self.template is not None else DEFAULT_TEMPLATE

    @property
    def compiled_schema(self) -> MemorySchema:
        """The compiled schema (schema mode only)."""
        if self._compiled is None:
            raise ValidationError("this working memory is in template mode: it has no schema")
        return self._compiled
