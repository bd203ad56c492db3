"""``Memory``: an agent's working memory and recall over any store's memory domain."""

from __future__ import annotations

import asyncio
import copy
import logging
import random
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, overload

from pydantic import ValidationError as PydanticValidationError

from composite_store.domains.args import require_id
from composite_store.domains.memory import MemoryDomain
from composite_store.errors import (
    ConflictError,
    NotFoundError,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store.memory import signals
from composite_store.memory.config import WorkingMemoryConfig
from composite_store.memory.instructions import signal_text, system_text
from composite_store.memory.recall import RecallFormat, to_anthropic, to_openai
from composite_store.memory.schemas import dump_object, parse_object
from composite_store.memory.signals import StateSignal
from composite_store.memory.templates import overwrites_with_empty
from composite_store.memory.tool import read_arguments, tool_definition
from composite_store.records.base import now_utc
from composite_store.records.memory import Message, Thread
from composite_store.rules.merge import deep_merge
from composite_store.types import OrderBy

__all__ = ["HasMemory", "Memory", "WorkingMemoryValue"]

logger = logging.getLogger("composite_store.memory")

#: Working memory as callers see it: Markdown text (template mode) or a JSON object (schema).
WorkingMemoryValue = str | dict[str, Any]
JsonObject = dict[str, Any]

#: Attempts of one read-merge-write before giving up, and the backoff between them (seconds).
DEFAULT_MAX_ATTEMPTS = 20
_BASE_DELAY = 0.005
_MAX_DELAY = 0.2

# One lock per key and event loop-bound domain, shared by every Memory of the process, so
# concurrent tool calls of one key queue up instead of burning compare-and-set retries.
_LOCKS: weakref.WeakKeyDictionary[
    MemoryDomain, weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock]
] = weakref.WeakKeyDictionary()


class HasMemory(Protocol):
    """Anything with a memory domain: a ``Store``, a ``CompositeStore``."""

    @property
    def memory(self) -> MemoryDomain: ...


class _Rejected(ValidationError):
    """The update itself is unacceptable (bad value, failed validation): report it to the model."""


class _EmptyTemplate(_Rejected):
    """The update would replace real memory with the empty template."""


@dataclass(frozen=True, slots=True)
class _Target:
    """Where one working memory lives, and the ids an update was given."""

    scope: Literal["resource", "thread"]
    thread_id: str
    resource_id: str | None

    @property
    def key(self) -> tuple[str, str]:
        if self.scope == "resource":
            assert self.resource_id is not None
            return ("resource", self.resource_id)
        return ("thread", self.thread_id)

    @property
    def label(self) -> str:
        return f"{self.scope} {self.key[1]!r}"

    def clear_hint(self) -> str:
        key = self.key[1]
        if self.scope == "resource":
            return f"store.memory.update_resource(resource_id={key!r}, working_memory='')"
        return f"store.memory.update_thread(id={key!r}, metadata={{'workingMemory': None}})"


class Memory:
    """Working memory and recall for agents, on top of any store that has the memory domain.

    ``Memory(store, working_memory=WorkingMemoryConfig(scope="resource", template=...),
    read_only=False)``. Without ``working_memory`` it is off: no tool, no system text.

    Template mode keeps Markdown text that each update replaces whole, and refuses to replace
    real memory with the empty template. Schema mode keeps a JSON object that updates merge
    into (nested objects merge, ``null`` deletes a key, arrays replace) and validates every
    result against the schema; a refused update writes nothing.

    Updates of one key are serialised: an asyncio lock per key inside the process, and
    across processes a compare-and-set (``expected_working_memory``) retried with jittered
    backoff, so concurrent writers never lose each other's changes. The cross-process
    guarantee needs a backend that claims ``capabilities.compare_and_set``.
    """

    def __init__(
        self,
        store: HasMemory | MemoryDomain,
        *,
        working_memory: WorkingMemoryConfig | None = None,
        read_only: bool = False,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        if working_memory is not None and not isinstance(working_memory, WorkingMemoryConfig):
            raise ValidationError(
                f"working_memory must be a WorkingMemoryConfig, got {type(working_memory).__name__}"
            )
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValidationError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        self._store = store
        self.config = working_memory or WorkingMemoryConfig(enabled=False)
        self.read_only = bool(read_only)
        self.max_attempts = max_attempts
        self._tool = tool_definition(self.config)

    @property
    def domain(self) -> MemoryDomain:
        """The memory domain this Memory reads and writes."""
        if isinstance(self._store, MemoryDomain):
            return self._store
        return self._store.memory

    @property
    def enabled(self) -> bool:
        """Whether working memory is on."""
        return self.config.enabled

    # -- threads -------------------------------------------------------------------------------

    async def create_thread(
        self,
        *,
        thread_id: str,
        resource_id: str,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        """Create a thread, seeding working memory from ``metadata["workingMemory"]``.

        In resource scope the seed is written to the resource, as Mastra does (the thread keeps
        its metadata as given); in thread scope it is the thread's memory. A seed is an update
        like any other: in schema mode it is merged and validated (``ValidationError`` with
        nothing written when invalid); in template mode a seed that is the empty template does
        not overwrite existing resource memory (it is skipped with a warning). A read-only or
        disabled Memory stores the metadata as given and writes no working memory.

        Creating a thread that exists for the same resource is not an error: its title is set
        and its metadata shallow-merged when given, and the seed applied. A thread owned by
        another resource raises ``ConflictError``.
        """
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        require_id(resource_id, "resource_id")
        meta = dict(metadata or {})
        existing = await self.domain.get_thread_by_id(thread_id=require_id(thread_id, "thread_id"))
        if existing is not None and existing.resource_id != resource_id:
            raise ConflictError(
                f"thread {thread_id!r} already exists and belongs to another resource than "
                f"{resource_id!r}; use another thread id"
            )
        await self._metadata_memory(thread_id, resource_id, meta, new_thread=existing is None)
        if existing is None:
            return await self.domain.save_thread(
                thread={
                    "id": thread_id,
                    "resource_id": resource_id,
                    "title": title,
                    "metadata": meta or None,
                }
            )
        if title is None and not meta:
            return await self.domain.get_thread_by_id(thread_id=thread_id) or existing
        return await self.domain.update_thread(id=thread_id, title=title, metadata=meta or None)

    async def update_thread(
        self,
        *,
        thread_id: str,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        """Set a thread's title and shallow-merge its metadata, as ``store.memory.update_thread``
        does, with working memory in ``metadata["workingMemory"]`` applied as Mastra applies it.

        In resource scope that memory goes to the thread's resource (an update like any other:
        merged and validated in schema mode; the empty template never overwrites real memory),
        and the thread keeps its metadata as given. In thread scope it is merged into the
        thread's own memory. A read-only or disabled Memory stores the metadata as given.
        ``NotFoundError`` for a missing thread; ``ValidationError`` (nothing written) for
        memory the schema refuses.
        """
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
        thread_id = require_id(thread_id, "thread_id")
        existing = await self.domain.get_thread_by_id(thread_id=thread_id)
        if existing is None:
            raise NotFoundError(f"thread {thread_id!r} not found")
        meta = dict(metadata or {})
        await self._metadata_memory(thread_id, existing.resource_id, meta, new_thread=False)
        if title is None and not meta:
            return await self.domain.get_thread_by_id(thread_id=thread_id) or existing
        return await self.domain.update_thread(id=thread_id, title=title, metadata=meta or None)

    async def _metadata_memory(
        self, thread_id: str, resource_id: str, meta: dict[str, Any], *, new_thread: bool
    ) -> None:
        """Apply the working memory a thread's ``meta["workingMemory"]`` carries (creating or
        updating the thread); ``meta`` becomes the metadata to store. Nothing to do when off,
        read-only, or absent."""
        seed = meta.get("workingMemory")
        if not self.enabled or self.read_only or seed is None:
            return
        target = _Target(self.config.scope, thread_id, resource_id)
        patch = self._patch(seed, what='metadata["workingMemory"]')
        try:
            await self._seed(target, patch, meta, new_thread=new_thread)
        except _EmptyTemplate:
            logger.warning(
                "%s: the working memory in the thread's metadata is the empty template; the "
                "stored memory was kept",
                target.label,
            )
        except _Rejected as exc:
            raise ValidationError(str(exc)) from None

    async def _seed(
        self, target: _Target, patch: Any, meta: dict[str, Any], *, new_thread: bool
    ) -> None:
        """Apply a thread's initial memory; ``meta`` becomes the metadata to store."""
        if target.scope == "resource":
            if patch is not None:
                await self._update(target, patch)
            return
        if new_thread and patch is not None:
            # A new thread has no memory to merge with: store the normalised seed directly.
            meta["workingMemory"] = self._compute(patch, target)(None)
            return
        # An existing thread's memory is updated like any other; the metadata write below
        # must not overwrite the merged result with the raw seed.
        meta.pop("workingMemory")
        if patch is not None:
            await self._update(target, patch)

    # -- working memory ------------------------------------------------------------------------

    async def get_working_memory(
        self, *, thread_id: str, resource_id: str | None = None, read_only: bool | None = None
    ) -> WorkingMemoryValue | None:
        """Return the working memory: text in template mode, a dict in schema mode.

        None when nothing (or only blank text or ``{}``) is stored, or when working memory is
        off. Resource scope needs ``resource_id`` (``ValidationError`` otherwise); in thread
        scope a ``resource_id`` that does not own the thread raises ``ValidationError``.
        Reading never writes, so ``read_only`` changes nothing here; it is accepted so one set
        of per-call options fits ``get_working_memory``, ``list_tools`` and ``system_message``.
        """
        if not self.enabled:
            return None
        target = self._target(thread_id, resource_id)
        raw = await self._read(target, must_exist=False)
        value = self._decode(raw, target)
        return value or None

    async def update_working_memory(
        self, *, thread_id: str, resource_id: str | None = None, working_memory: Any
    ) -> WorkingMemoryValue | None:
        """Update the working memory from application code; return the memory now stored.

        Template mode: ``working_memory`` is the Markdown text and replaces the stored text;
        replacing real memory with the empty template (or blank text) raises
        ``ValidationError`` and writes nothing. Schema mode: a dict or JSON text of an object,
        merged into the stored object (nested objects merge, ``None`` deletes, lists replace)
        and validated; an invalid result raises ``ValidationError`` listing the errors and
        writes nothing.

        Resource scope needs ``resource_id``. Thread scope needs an existing thread
        (``NotFoundError``). A ``resource_id`` that does not own the thread raises
        ``ValidationError``. ``ConflictError`` when other writers kept changing the memory
        through every attempt; ``UnsupportedOperationError`` when read-only or disabled.
        """
        self._require_writable()
        target = self._target(thread_id, resource_id)
        patch = self._patch(working_memory, what="working_memory")
        await self._check_owner(target)
        try:
            raw = await self._update(target, patch)
        except _Rejected as exc:
            raise ValidationError(str(exc)) from None
        return self._decode(raw, target) or None

    # -- the model-facing pieces ---------------------------------------------------------------

    def list_tools(self, *, read_only: bool | None = None) -> list[dict[str, Any]]:
        """The tools to offer the model: ``[{"name", "description", "parameters"}]``.

        Empty when working memory is off or read-only (this call's ``read_only``, else the
        Memory's). See :func:`~composite_store.memory.tool.tool_definition` for the shapes the
        OpenAI and Anthropic APIs take.
        """
        if not self.enabled or self._read_only(read_only):
            return []
        return [copy.deepcopy(self._tool)]

    async def apply_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        thread_id: str,
        resource_id: str | None = None,
        read_only: bool | None = None,
    ) -> dict[str, Any]:
        """Apply a call of the ``updateWorkingMemory`` tool; return ``{"success", "message"}``.

        ``read_only`` overrides the Memory's for this call (as on ``list_tools`` and
        ``system_message``): a read-only call answers ``success: False`` and writes nothing.

        ``arguments`` is the dict of arguments or their JSON text. What the model got wrong
        (bad arguments, a schema violation, the empty template over real memory, a call while
        read-only) comes back as ``success: False`` with a message for the model, and nothing
        is written. Mistakes of the application raise: another tool's ``name``
        (``ValidationError``), a missing ``resource_id`` in resource scope, working memory
        off (``UnsupportedOperationError``), a missing thread in thread scope
        (``NotFoundError``), exhausted retries (``ConflictError``).
        """
        if name != self.config.tool_name:
            raise ValidationError(
                f"{name!r} is not a working memory tool; this Memory handles "
                f"{self.config.tool_name!r}"
            )
        if not self.enabled:
            raise UnsupportedOperationError(
                "working memory is off: pass working_memory=WorkingMemoryConfig(...) to Memory"
            )
        target = self._target(thread_id, resource_id)
        if self._read_only(read_only):
            return _result(False, "Working memory is read-only in this session: nothing was saved.")
        try:
            patch = self._patch(read_arguments(arguments, self.config), what="`memory`")
        except ValidationError as exc:
            return _result(False, f"Working memory was not updated: {exc}")
        if patch is None:
            return _result(True, "Nothing to change: the working memory was left as it is.")
        await self._check_owner(target)
        try:
            await self._update(target, patch)
        except _Rejected as exc:
            return _result(False, f"Working memory was not updated: {exc}")
        return _result(True, "Working memory updated.")

    async def system_message(
        self, *, thread_id: str, resource_id: str | None = None, read_only: bool | None = None
    ) -> str:
        """The system-message text with the template or schema, the current memory and the
        rules for keeping it (no update instructions when read-only). Empty when off, and with
        ``use_state_signals`` (the memory then travels as :meth:`state_signal`)."""
        if not self.enabled or self.config.use_state_signals:
            return ""
        memory = await self.get_working_memory(thread_id=thread_id, resource_id=resource_id)
        return system_text(self.config, memory, read_only=self._read_only(read_only))

    # -- recall --------------------------------------------------------------------------------

    async def state_signal(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        context_window: Sequence[Message | Mapping[str, Any]] | None = None,
    ) -> StateSignal | None:
        """The working-memory snapshot to add to the model's context, or None when none is due.

        Only with ``WorkingMemoryConfig(use_state_signals=True)`` (``UnsupportedOperationError``
        otherwise). ``context_window`` is the list of messages about to be sent: a snapshot
        whose cache key the thread last received is not emitted again while one is still in
        that window (the messages of :meth:`StateSignal.to_message` are recognised), and is
        emitted again, with the same cache key, once it has slid out. A changed memory always
        gives a new snapshot. The thread's tracking metadata (``metadata["stateSignals"]``)
        records what was emitted; a read-only Memory emits but records nothing.
        """
        if not self.enabled or not self.config.use_state_signals:
            raise UnsupportedOperationError(
                "state signals are off: pass WorkingMemoryConfig(use_state_signals=True); by "
                "default working memory travels in system_message()"
            )
        memory = await self.get_working_memory(thread_id=thread_id, resource_id=resource_id)
        thread = await self.domain.get_thread_by_id(thread_id=thread_id)
        if thread is None:
            raise NotFoundError(f"thread {thread_id!r} not found")
        lanes = (thread.metadata or {}).get(signals.TRACKING_KEY)
        raw = lanes.get(signals.STATE_ID) if isinstance(lanes, Mapping) else None
        try:
            tracking = signals.SignalTracking.model_validate(raw) if raw else None
        except PydanticValidationError:
            tracking = None  # unreadable tracking: start the lane afresh
        form = "json" if self.config.mode == "schema" else "markdown"
        key = signals.cache_key(form, memory)
        if (
            tracking is not None
            and tracking.current_cache_key == key
            and signals.has_snapshot(context_window)
        ):
            return None
        version = 1 if tracking is None else tracking.version + 1
        after = signals.SignalTracking(
            current_cache_key=key,
            version=version,
            last_signal_id=f"state:{signals.STATE_ID}:{version}",
            updated_at=now_utc(),
        )
        if not self.read_only:
            merged = {**(lanes if isinstance(lanes, Mapping) else {})}
            merged[signals.STATE_ID] = after.model_dump(by_alias=True, mode="json")
            await self.domain.update_thread(
                id=thread_id, metadata={signals.TRACKING_KEY: merged}
            )
        return signals.StateSignal(
            id=after.last_signal_id,
            cache_key=key,
            contents=signal_text(self.config, memory),
            working_memory=memory,
            format=form,
            scope=self.config.scope,
            tracking=after,
        )

    @overload
    async def recall(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        last: int = 20,
        format: Literal["openai"] = "openai",
    ) -> list[dict[str, Any]]: ...

    @overload
    async def recall(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        last: int = 20,
        format: Literal["anthropic"],
    ) -> dict[str, Any]: ...

    async def recall(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        last: int = 20,
        format: RecallFormat = "openai",
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """Return the thread's ``last`` messages, oldest first, as chat-API messages.

        ``format="openai"``: a list for ``client.chat.completions.create(messages=...)``;
        system messages stay in the list with ``role: "system"``. ``format="anthropic"``: a
        dict ``{"system": str, "messages": [...]}`` for ``client.messages.create(**result)``,
        because Anthropic takes system text apart from the messages (``"system"`` is absent
        when the window has no system message). Text parts are joined with newlines; an
        answered tool invocation becomes a tool call plus its result (``tool_calls`` and a
        ``tool`` message, or ``tool_use`` and ``tool_result`` blocks); calls without a result,
        reasoning, file and source parts are left out. ``last`` counts stored messages.

        With ``resource_id`` the thread must exist and belong to it (``NotFoundError``).
        """
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise ValidationError(f"last must be an int >= 0, got {last!r}")
        if format not in ("openai", "anthropic"):
            raise ValidationError(f"format must be 'openai' or 'anthropic', got {format!r}")
        if resource_id is not None:
            owned = await self.domain.get_thread_by_id(thread_id=thread_id, resource_id=resource_id)
            if owned is None:
                raise NotFoundError(f"thread {thread_id!r} not found for resource {resource_id!r}")
        page = await self.domain.list_messages(
            thread_id=thread_id,
            per_page=last,
            order_by=OrderBy(field="createdAt", direction="DESC"),
            include_total=False,
        )
        messages = list(reversed(page.items))
        return to_openai(messages) if format == "openai" else to_anthropic(messages)

    # -- internals -----------------------------------------------------------------------------

    def _read_only(self, read_only: bool | None) -> bool:
        return self.read_only if read_only is None else bool(read_only)

    def _require_writable(self) -> None:
        if not self.enabled:
            raise UnsupportedOperationError(
                "working memory is off: pass working_memory=WorkingMemoryConfig(...) to Memory"
            )
        if self.read_only:
            raise UnsupportedOperationError(
                "this Memory is read-only (read_only=True): it provides working memory to the "
                "model but never writes it; use a Memory with read_only=False to update it"
            )

    def _target(self, thread_id: str, resource_id: str | None) -> _Target:
        require_id(thread_id, "thread_id")
        if resource_id is not None:
            require_id(resource_id, "resource_id")
        elif self.config.scope == "resource":
            raise ValidationError(
                "working memory is resource-scoped but no resource_id was given: pass "
                "resource_id= (the user or tenant that owns the thread), or keep memory per "
                "thread with WorkingMemoryConfig(scope='thread')"
            )
        return _Target(self.config.scope, thread_id, resource_id)

    async def _check_owner(self, target: _Target) -> None:
        # Thread scope checks ownership on every read (_read); resource scope only on writes,
        # where a wrong pair of ids would write one user's memory from another user's thread.
        if target.scope != "resource" or target.resource_id is None:
            return
        thread = await self.domain.get_thread_by_id(thread_id=target.thread_id)
        if thread is not None and thread.resource_id != target.resource_id:
            raise ValidationError(
                f"thread {target.thread_id!r} belongs to another resource than "
                f"{target.resource_id!r}; pass the thread's own resource_id"
            )

    async def _read(self, target: _Target, *, must_exist: bool) -> Any:
        """The stored value as it is (text, or whatever a foreign writer put there)."""
        if target.scope == "resource":
            assert target.resource_id is not None
            resource = await self.domain.get_resource_by_id(resource_id=target.resource_id)
            return resource.working_memory if resource is not None else None
        thread = await self.domain.get_thread_by_id(thread_id=target.thread_id)
        if thread is None:
            if must_exist:
                raise NotFoundError(
                    f"thread {target.thread_id!r} not found: thread-scoped working memory lives "
                    f"in the thread; create it first with memory.create_thread(...)"
                )
            return None
        if target.resource_id is not None and thread.resource_id != target.resource_id:
            raise ValidationError(
                f"thread {target.thread_id!r} belongs to another resource than "
                f"{target.resource_id!r}; pass the thread's own resource_id"
            )
        return (thread.metadata or {}).get("workingMemory")

    def _decode(self, raw: Any, target: _Target) -> WorkingMemoryValue | None:
        """The stored value as callers see it; blank text is no memory."""
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        if self.config.mode == "template":
            if not isinstance(raw, str):
                raise ValidationError(
                    f"the stored working memory of {target.label} is a {type(raw).__name__}, "
                    f"not text; clear it with {target.clear_hint()}"
                )
            return raw
        try:
            return parse_object(raw, what=f"the stored working memory of {target.label}")
        except ValidationError as exc:
            raise ValidationError(
                f"{exc} (was it written in template mode?); convert it to a JSON object or "
                f"clear it with {target.clear_hint()}"
            ) from exc

    def _patch(self, value: Any, *, what: str) -> Any:
        """Check an update's value for the mode; None means "nothing to change"."""
        if self.config.mode == "template":
            if not isinstance(value, str):
                raise ValidationError(f"{what} must be Markdown text, got {type(value).__name__}")
            return value
        if value is None:
            return None
        return parse_object(value, what=what) or None

    def _compute(self, patch: Any, target: _Target) -> Callable[[Any], str | None]:
        """The pure step of read-merge-write: stored value -> text to store."""
        config = self.config

        def compute(raw: Any) -> str | None:
            existing = self._decode(raw, target)
            if config.mode == "template":
                assert existing is None or isinstance(existing, str)
                if overwrites_with_empty(patch, existing, config.effective_template):
                    raise _EmptyTemplate(
                        "refusing to replace the stored working memory with the empty template "
                        "(or blank text); nothing was written. Send the complete memory, "
                        "including what is already stored"
                    )
                return str(patch)
            current = existing if isinstance(existing, dict) else {}
            merged = _without_nulls(deep_merge(current, patch))
            try:
                validated = config.compiled_schema.validate(merged)
            except ValidationError as exc:
                raise _Rejected(f"{exc}; the stored memory was kept as it was") from exc
            return dump_object(validated)

        return compute

    async def _update(self, target: _Target, patch: Any) -> Any:
        """Read, merge and compare-and-set until it sticks; return the stored value."""
        compute = self._compute(patch, target)
        if patch is None:
            return await self._read(target, must_exist=target.scope == "thread")
        async with _lock(self.domain, target.key):
            for attempt in range(self.max_attempts):
                raw = await self._read(target, must_exist=True)
                new = compute(raw)
                if new is None or new == raw:
                    return raw
                try:
                    await self._write(target, new, expected=raw)
                except ConflictError:
                    logger.debug("%s changed during attempt %d", target.label, attempt + 1)
                    if attempt + 1 < self.max_attempts:
                        await asyncio.sleep(_backoff(attempt))
                    continue
                return new
        raise ConflictError(
            f"the working memory of {target.label} changed under {self.max_attempts} attempts "
            f"in a row; nothing was written. Retry later, or raise Memory(max_attempts=...)"
        )

    async def _write(self, target: _Target, new: str, *, expected: Any) -> None:
        if target.scope == "resource":
            assert target.resource_id is not None
            await self.domain.update_resource(
                resource_id=target.resource_id, working_memory=new, expected_working_memory=expected
            )
        else:
            await self.domain.update_thread(
                id=target.thread_id,
                metadata={"workingMemory": new},
                expected_working_memory=expected,
            )


def _lock(domain: MemoryDomain, key: tuple[str, str]) -> asyncio.Lock:
    locks = _LOCKS.get(domain)
    if locks is None:
        locks = weakref.WeakValueDictionary()
        _LOCKS[domain] = locks
    lock = locks.get(key)
    if lock is None:
        # Held only by its users: the entry disappears once nobody waits on the key.
        lock = asyncio.Lock()
        locks[key] = lock
    return lock


def _backoff(attempt: int) -> float:
    # Full jitter: writers that collided once spread out instead of colliding again.
    return random.uniform(0, min(_MAX_DELAY, _BASE_DELAY * 2**attempt))


def _without_nulls(value: Any) -> Any:
    """Drop null-valued keys at every object level (arrays are values and stay as they are).

    ``null`` deletes a field; a fresh nested object sent with nulls must not store them.
    """
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def _result(success: bool, message: str) -> dict[str, Any]:
    return {"success": success, "message": message}
