"""``WorkingMemoryConfig``: where working memory lives and what shape it has."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from composite_store.errors import ValidationError
from composite_store.memory.schemas import MemorySchema
from composite_store.memory.templates import DEFAULT_TEMPLATE

__all__ = ["Mode", "Scope", "WorkingMemoryConfig"]

#: ``resource``: one memory per resource (user, tenant), shared by all its threads;
#: ``thread``: one memory per thread.
Scope = Literal["resource", "thread"]
#: ``template``: Markdown text replaced whole; ``schema``: a JSON object updated by merges.
Mode = Literal["template", "schema"]

_SCOPES = ("resource", "thread")


@dataclass(frozen=True, slots=True)
class WorkingMemoryConfig:
    """How a :class:`~composite_store.memory.Memory` keeps working memory.

    ``scope="resource"`` (the default) stores the memory in ``mastra_resources.workingMemory``,
    shared by every thread of the resource; ``scope="thread"`` stores it in the thread's
    ``metadata["workingMemory"]``. The two scopes never see each other's memory.

    Give a Markdown ``template`` (the default template when neither is given), or a ``schema``:
    a pydantic model class or a JSON Schema dict describing a JSON object. Giving both raises
    ``ValidationError``, as does an invalid JSON Schema.
    """

    enabled: bool = True
    scope: Scope = "resource"
    template: str | None = None
    schema: type[BaseModel] | Mapping[str, Any] | None = None
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
        if self.schema is not None:
            # Compiled once here, so a bad schema fails at configuration time, not mid-chat.
            object.__setattr__(self, "_compiled", MemorySchema.from_source(self.schema))

    @property
    def mode(self) -> Mode:
        """``"schema"`` when a schema is configured, else ``"template"``."""
        return "schema" if self.schema is not None else "template"

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
