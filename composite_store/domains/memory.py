"""The memory domain contract: threads, messages and resources."""

from __future__ import annotations

import uuid
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from composite_store.domains.args import (
    UNSET,
    json_object,
    optional_id,
    optional_int,
    optional_text,
    require_id,
    require_list,
)
from composite_store.domains.base import Domain
from composite_store.errors import (
    ConflictError,
    NotFoundError,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store.records.base import coerce, now_utc
from composite_store.records.memory import (
    CloneResult,
    Message,
    MessageContent,
    MessageUpdate,
    Resource,
    Thread,
)
from composite_store.rules.merge import merge_message_content, shallow_merge
from composite_store.rules.paging import Window, build_page, order_field, window
from composite_store.types import DateRange, Include, OrderBy, Page, PerPage

__all__ = ["UNSET", "IncludeWindows", "MemoryDomain", "MessageQuery", "ThreadQuery"]


_THREAD_ORDER = {
    "createdAt": "createdAt",
    "created_at": "createdAt",
    "updatedAt": "updatedAt",
    "updated_at": "updatedAt",
}
_MESSAGE_ORDER = {"createdAt": "createdAt", "created_at": "createdAt"}


@dataclass(frozen=True, slots=True)
class ThreadQuery:
    """A normalised ``list_threads`` request, handed to the backend hook."""

    resource_id: str | None
    metadata: Mapping[str, Any]
    order_field: str
    descending: bool
    window: Window
    count: bool


@dataclass(frozen=True, slots=True)
class MessageQuery:
    """A normalised ``list_messages`` request (without includes), handed to the backend hook."""

    thread_ids: tuple[str, ...]
    resource_id: str | None
    date_range: DateRange | None
    descending: bool
    window: Window
    count: bool


@dataclass(frozen=True, slots=True)
class IncludeWindows:
    """The include windows of a ``list_messages`` call, read by the backend hook
    (``MemoryDomain._include_windows``)."""

    #: One per include, in the order given: the target and its neighbours (any order), all of
    #: the target's thread; empty when the target does not exist.
    windows: list[list[Message]]
    #: The resourceId of each target's thread by thread id (None: no such thread row), when
    #: asked for.
    owners: Mapping[str, str | None]


def _ids(values: Any, what: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise ValidationError(f"{what} must be a list of ids, got {values!r}")
    return [require_id(v, what) for v in values]


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    """``value`` as a mapping; None is an empty one."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be a dict, got {type(value).__name__}")
    return value


def _date_range(filter: Any) -> DateRange | None:
    if filter is None:
        return None
    if isinstance(filter, DateRange):
        return filter
    if not isinstance(filter, Mapping):
        raise ValidationError(f"filter must be a dict, got {type(filter).__name__}")
    unknown = set(filter) - {"date_range", "dateRange"}
    if unknown:
        raise ValidationError(f"unknown message filter keys: {sorted(unknown)}")
    value = filter.get("date_range", filter.get("dateRange"))
    if value is None:
        return None
    parsed: DateRange = coerce(DateRange, value, what="filter.date_range")
    return parsed


def _metadata_filter(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("filter.metadata must be a dict of key -> value")
    for key in value:
        if (
            not isinstance(key, str)
            or not key
            or not key.replace("_", "a").replace("-", "a").isalnum()
        ):
            raise ValidationError(
                f"invalid metadata filter key {key!r}: use letters, digits, '_' and '-'"
            )
    return dict(value)


class MemoryDomain(Domain):
    """Threads, messages and resources (Mastra's memory storage).

    Public methods validate their arguments and then call the abstract hooks below with
    normalised values; a backend implements the hooks only.
    """

    domain: ClassVar[str] = "memory"

    # -- threads ---------------------------------------------------------------------------------

    async def get_thread_by_id(
        self, *, thread_id: str, resource_id: str | None = None
    ) -> Thread | None:
        """Return the thread, or None when missing or owned by another ``resource_id``."""
        self._check()
        optional_id(resource_id, "resource_id")
        thread = await self._get_thread(require_id(thread_id, "thread_id"))
        if thread is None or (resource_id is not None and thread.resource_id != resource_id):
            return None
        return thread

    async def save_thread(self, *, thread: Thread | Mapping[str, Any]) -> Thread:
        """Insert or replace a thread (upsert by id) and return it."""
        self._check()
        record = coerce(Thread, thread, what="thread")
        await self._save_thread(record)
        return record

    async def update_thread(
        self,
        *,
        id: str,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expected_working_memory: Any = UNSET,
    ) -> Thread:
        """Set the title and shallow-merge ``metadata``; bump ``updatedAt``; return the thread.

        With ``expected_working_memory`` the write happens only if ``metadata.workingMemory``
        still equals it (``None``: absent), else ``ConflictError``. Raises ``NotFoundError``
        when the thread does not exist.
        """
        self._check()
        require_id(id, "id")
        optional_text(title, "title")
        updated = await self._update_thread(
            id,
            title=title,
            metadata=json_object(metadata, "metadata") if metadata is not None else None,
            updated_at=now_utc(),
            expected_working_memory=expected_working_memory,
        )
        if updated is None:
            raise NotFoundError(f"thread {id!r} not found")
        return updated

    async def delete_thread(self, *, thread_id: str) -> None:
        """Delete a thread and all its messages; a missing thread is not an error."""
        self._check()
        await self._delete_thread(require_id(thread_id, "thread_id"))

    async def list_threads(
        self,
        *,
        filter: Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[Thread]:
        """List threads, newest first by default.

        ``filter`` may hold ``resource_id`` (or ``resourceId``) and ``metadata`` (key/value
        pairs, all of which must match; values compare as JSON, by type and value:
        ``rules.json_match``). With ``resource_id`` only that resource's threads are listed,
        ids compared exactly. Raises ``UnsupportedOperationError`` for a metadata
        filter where ``capabilities.metadata_filters`` is off, and for an order other than
        ``createdAt DESC`` where ``capabilities.sort_threads`` is off.
        """
        self._check()
        filter = dict(_mapping(filter, "filter"))
        if "resource_id" in filter and "resourceId" in filter:
            # Which spelling would win is an accident of code: a scope must be unambiguous.
            raise ValidationError(
                "filter names the resource twice (resource_id and resourceId); give one"
            )
        resource_id = filter.pop("resource_id", filter.pop("resourceId", None))
        metadata = _metadata_filter(filter.pop("metadata", None))
        if filter:
            raise ValidationError(f"unknown thread filter keys: {sorted(filter)}")
        if resource_id is not None:
            require_id(resource_id, "resource_id")
        field, descending = order_field(
            order_by if not isinstance(order_by, Mapping) else dict(order_by),
            allowed=_THREAD_ORDER,
            default=("createdAt", "DESC"),
        )
        if metadata and not self.capabilities.metadata_filters:
            raise UnsupportedOperationError(
                f"{self.backend} cannot filter threads by metadata (capability "
                "metadata_filters is off); filter by resource_id, or route the memory domain "
                "to a backend that has it"
            )
        if (field, descending) != ("createdAt", True) and not self.capabilities.sort_threads:
            raise UnsupportedOperationError(
                f"{self.backend} lists threads by createdAt DESC only (capability sort_threads "
                f"is off), not by {field} {'DESC' if descending else 'ASC'}"
            )
        w = window(page, per_page, default=100)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_threads(
            ThreadQuery(resource_id, metadata, field, descending, w, include_total)
        )
        return build_page(rows, w, total)

    # -- messages --------------------------------------------------------------------------------

    async def list_messages(
        self,
        *,
        thread_id: str | Sequence[str],
        resource_id: str | None = None,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        filter: Mapping[str, Any] | DateRange | None = None,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        include_total: bool = True,
    ) -> Page[Message]:
        """List the messages of one thread (or several), oldest first by default.

        ``include`` adds each target message and its neighbours (by ``createdAt`` in the
        target's own thread), deduplicated and merged into the page in the requested order;
        ``total`` counts only the filtered thread messages. ``per_page=0`` returns only the
        included messages with ``total=0``.
        """
        self._check()
        thread_ids = (
            (require_id(thread_id, "thread_id"),)
            if isinstance(thread_id, str)
            else tuple(_ids(thread_id, "thread_id"))
        )
        if not thread_ids:
            raise ValidationError("thread_id must name at least one thread")
        optional_id(resource_id, "resource_id")
        includes = [
            coerce(Include, i, what=f"include[{n}]")
            for n, i in enumerate(require_list(include, "include") if include is not None else ())
        ]
        date_range = _date_range(filter)
        _, descending = order_field(
            order_by if not isinstance(order_by, Mapping) else dict(order_by),
            allowed=_MESSAGE_ORDER,
            default=("createdAt", "ASC"),
        )
        w = window(page, per_page, default=40)
        query = MessageQuery(thread_ids, resource_id, date_range, descending, w, include_total)
        owners = resource_id is not None
        if w.empty:
            result: Page[Message] = build_page([], w, 0)
            if not includes:
                return result
            windows = await self._include_windows(includes, owners=owners)
        elif not includes:
            rows, total = await self._list_messages(query)
            return build_page(rows, w, total)
        else:
            rows, total, windows = await self._list_messages_including(
                query, includes, owners=owners
            )
            result = build_page(rows, w, total)
        extra = _visible(includes, windows, resource_id)
        result.items = merge_messages(result.items, extra, descending=descending)
        if result.has_more and result.total is not None:
            # As Mastra: when the includes brought every message of the thread(s) the page
            # counts, there is nothing more to page through.
            wanted = set(thread_ids)
            returned = {m.id for m in result.items if m.thread_id in wanted}
            if len(returned) >= result.total:
                result.has_more = False
        return result

    async def list_messages_by_id(self, *, message_ids: Sequence[str]) -> list[Message]:
        """Return the messages with these ids, oldest first; unknown ids are skipped."""
        self._check()
        ids = _ids(message_ids, "message_ids")
        if not ids:
            return []
        return sorted(await self._get_messages(ids), key=_chronological)

    async def save_messages(
        self, *, messages: Sequence[Message | Mapping[str, Any]]
    ) -> list[Message]:
        """Insert or replace messages (upsert by id) in one batch and return them.

        A message saved under another thread moves there. ``updatedAt`` of every touched
        thread (old and new) is bumped. Every target thread must exist (``NotFoundError``);
        the batch is atomic where ``capabilities.atomic_batches``.
        """
        self._check()
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
            raise ValidationError("messages must be a list")
        records = [coerce(Message, m, what=f"messages[{i}]") for i, m in enumerate(messages)]
        if not records:
            return []
        await self._save_messages(_last_wins(records), now_utc())
        return records

    async def update_messages(
        self, *, messages: Sequence[MessageUpdate | Mapping[str, Any]]
    ) -> list[Message]:
        """Apply partial updates: given fields replace, ``content`` (and its ``metadata``) merge.

        Returns the updated messages. An id that matches no stored message is skipped, as
        Mastra's ``updateMessages`` skips it (the others are still updated).

        Note for implementers: the default reads, merges in Python and saves through
        ``_save_messages``; concurrent updates of one message are last-writer-wins.
        """
        self._check()
        updates = [
            coerce(MessageUpdate, m, what=f"messages[{i}]")
            for i, m in enumerate(require_list(messages, "messages"))
        ]
        if not updates:
            return []
        current = {m.id: m for m in await self._get_messages([u.id for u in updates])}
        merged: dict[str, Message] = {}
        for update in updates:
            if update.id not in current:
                continue
            base = merged.get(update.id, current[update.id])
            data = base.model_dump()
            given = update.model_dump(exclude_unset=True, exclude={"id"})
            if "content" in given and given["content"] is not None:
                given["content"] = merge_message_content(
                    base.content.model_dump(exclude_none=True), given["content"]
                )
            data.update({k: v for k, v in given.items() if v is not None})
            merged[update.id] = coerce(Message, data, what=f"message {update.id!r}")
        result = list(merged.values())
        if result:
            await self._save_messages(result, now_utc())
        return result

    async def delete_messages(self, *, message_ids: Sequence[str]) -> None:
        """Delete messages by id and bump ``updatedAt`` of their threads; skip unknown ids."""
        self._check()
        ids = _ids(message_ids, "message_ids")
        if ids:
            await self._delete_messages(ids, now_utc())

    async def clone_thread(
        self,
        *,
        source_thread_id: str,
        new_thread_id: str | None = None,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        message_limit: int | None = None,
        message_filter: Mapping[str, Any] | None = None,
    ) -> CloneResult:
        """Copy a thread and its messages (optionally filtered, or the last ``message_limit``).

        The clone records its source in ``metadata.clone``. Raises ``NotFoundError`` for a missing
        source and ``ConflictError`` when ``new_thread_id`` exists.

        Note for implementers: the default saves the thread, then the messages; a failure in
        between leaves an empty clone behind unless the backend overrides it transactionally.
        """
        self._check()
        source = await self._get_thread(require_id(source_thread_id, "source_thread_id"))
        if source is None:
            raise NotFoundError(f"source thread {source_thread_id!r} not found")
        new_id = new_thread_id or str(uuid.uuid4())
        if await self._get_thread(require_id(new_id, "new_thread_id")) is not None:
            raise ConflictError(f"thread {new_id!r} already exists")
        optional_int(message_limit, "message_limit")
        optional_id(resource_id, "resource_id")
        optional_text(title, "title")
        metadata = json_object(metadata, "metadata") if metadata is not None else None
        mf = dict(_mapping(message_filter, "message_filter"))
        wanted_ids = mf.pop("message_ids", mf.pop("messageIds", None))
        start = mf.pop("start_date", mf.pop("startDate", None))
        end = mf.pop("end_date", mf.pop("endDate", None))
        if mf:
            raise ValidationError(f"unknown message_filter keys: {sorted(mf)}")
        date_range = (
            coerce(DateRange, {"start": start, "end": end}, what="message_filter")
            if start is not None or end is not None
            else None
        )
        rows, _ = await self._list_messages(
            MessageQuery(
                (source.id,), None, date_range, False, window(0, False, default=False), False
            )
        )
        if wanted_ids is not None:
            keep = set(_ids(wanted_ids, "message_filter.message_ids"))
            rows = [m for m in rows if m.id in keep]
        if message_limit is not None:
            rows = rows[len(rows) - message_limit :] if message_limit else []
        now = now_utc()
        owner = resource_id or source.resource_id
        clone_info = {
            "sourceThreadId": source.id,
            "clonedAt": now.isoformat().replace("+00:00", "Z"),
            **({"lastMessageId": rows[-1].id} if rows else {}),
        }
        thread = Thread(
            id=new_id,
            resource_id=owner,
            title=title
            if title is not None
            else (f"Clone of {source.title}" if source.title else ""),
            metadata={**(dict(metadata) if metadata else {}), "clone": clone_info},
            created_at=now,
            updated_at=now,
        )
        id_map = {m.id: str(uuid.uuid4()) for m in rows}
        copies = [
            m.model_copy(update={"id": id_map[m.id], "thread_id": new_id, "resource_id": owner})
            for m in rows
        ]
        await self._save_thread(thread)
        if copies:
            await self._save_messages(copies, now)
            thread = thread.model_copy(update={"updated_at": now})
        return CloneResult(thread=thread, messages=copies, message_id_map=id_map)

    # -- resources -------------------------------------------------------------------------------

    async def get_resource_by_id(self, *, resource_id: str) -> Resource | None:
        """Return the resource, or None."""
        self._check()
        return await self._get_resource(require_id(resource_id, "resource_id"))

    async def save_resource(self, *, resource: Resource | Mapping[str, Any]) -> Resource:
        """Insert or replace a resource (upsert by id) and return it."""
        self._check()
        record = coerce(Resource, resource, what="resource")
        await self._save_resource(record)
        return record

    async def update_resource(
        self,
        *,
        resource_id: str,
        working_memory: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expected_working_memory: Any = UNSET,
    ) -> Resource:
        """Set working memory and shallow-merge metadata, creating the resource when missing.

        With ``expected_working_memory`` the write happens only if the stored working memory
        still equals it (``None``: none stored), else ``ConflictError``.
        """
        self._check()
        require_id(resource_id, "resource_id")
        optional_text(working_memory, "working_memory")
        return await self._update_resource(
            resource_id,
            working_memory=working_memory,
            metadata=json_object(metadata, "metadata") if metadata is not None else None,
            now=now_utc(),
            expected_working_memory=expected_working_memory,
        )

    # -- hooks -----------------------------------------------------------------------------------

    @abstractmethod
    async def _get_thread(self, thread_id: str) -> Thread | None:
        """Return the thread or None."""

    @abstractmethod
    async def _save_thread(self, thread: Thread) -> None:
        """Upsert a thread by id."""

    @abstractmethod
    async def _update_thread(
        self,
        thread_id: str,
        *,
        title: str | None,
        metadata: dict[str, Any] | None,
        updated_at: Any,
        expected_working_memory: Any,
    ) -> Thread | None:
        """Atomically set title, shallow-merge metadata and set updatedAt; None when missing.

        Raise ``ConflictError`` when ``expected_working_memory`` is not ``UNSET`` and differs
        from ``metadata.get("workingMemory")``.
        """

    @abstractmethod
    async def _delete_thread(self, thread_id: str) -> None:
        """Delete the thread and its messages."""

    @abstractmethod
    async def _list_threads(self, query: ThreadQuery) -> tuple[list[Thread], int | None]:
        """Return up to ``limit + 1`` threads from ``offset`` (tie-break by id), and the total
        when ``query.count``."""

    @abstractmethod
    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        """Return up to ``limit + 1`` messages from ``offset`` ordered by (createdAt, id), and
        the total when ``query.count``."""

    @abstractmethod
    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        """Return the message, the ``before`` messages just before it and the ``after`` just
        after it in its own thread by (createdAt, id); empty when it does not exist."""

    async def _list_messages_including(
        self, query: MessageQuery, includes: Sequence[Include], *, owners: bool
    ) -> tuple[list[Message], int | None, IncludeWindows]:
        """The page of ``query`` and its total (:meth:`_list_messages`), and the windows of
        ``includes`` with, where ``owners``, the owners of their threads
        (:meth:`_include_windows`).

        The default reads the page, then the windows; a backend that can read them together
        (the relational one: one statement) overrides it.
        """
        rows, total = await self._list_messages(query)
        return rows, total, await self._include_windows(includes, owners=owners)

    async def _include_windows(
        self, includes: Sequence[Include], *, owners: bool
    ) -> IncludeWindows:
        """Return the window of every include (:meth:`_message_window`) in the order given
        and, with ``owners``, the resourceId of each found target's thread by thread id (None
        when the thread row does not exist).

        The default reads one window after another, then each of their threads
        (:meth:`_get_thread`); a backend that can read the windows with their threads' owners
        (the relational one: one statement) overrides it.
        """
        windows = [
            await self._message_window(
                inc.id, inc.with_previous_messages, inc.with_next_messages
            )
            for inc in includes
        ]
        owner_of: dict[str, str | None] = {}
        if owners:
            for thread_id in dict.fromkeys(found[0].thread_id for found in windows if found):
                thread = await self._get_thread(thread_id)
                owner_of[thread_id] = thread.resource_id if thread is not None else None
        return IncludeWindows(windows, owner_of)

    @abstractmethod
    async def _get_messages(self, message_ids: Sequence[str]) -> list[Message]:
        """Return the existing messages among ``message_ids`` in any order."""

    @abstractmethod
    async def _save_messages(self, messages: Sequence[Message], now: Any) -> None:
        """Upsert messages (ids are unique within the batch); set updatedAt=``now`` on every
        touched thread, including the previous thread of a moved message. Raise
        ``NotFoundError`` before writing when a target thread does not exist."""

    @abstractmethod
    async def _delete_messages(self, message_ids: Sequence[str], now: Any) -> None:
        """Delete messages; set updatedAt=``now`` on their threads."""

    @abstractmethod
    async def _get_resource(self, resource_id: str) -> Resource | None:
        """Return the resource or None."""

    @abstractmethod
    async def _save_resource(self, resource: Resource) -> None:
        """Upsert a resource by id."""

    @abstractmethod
    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        """Atomically create-or-update: set workingMemory when given, shallow-merge metadata,
        set updatedAt (createdAt too when creating). Raise ``ConflictError`` on a failed
        compare-and-set."""


def thread_after_update(
    current: Thread,
    title: str | None,
    metadata: dict[str, Any] | None,
    updated_at: Any,
    expected_working_memory: Any,
) -> Thread:
    """The thread an ``update_thread`` call leaves behind (the rule every backend applies
    inside its own atomic read-modify-write).

    The title is replaced when given, metadata shallow-merged, updatedAt set. Raises
    ``ConflictError`` when ``expected_working_memory`` is set and differs from the stored
    ``metadata.workingMemory`` (None: nothing stored).
    """
    if expected_working_memory is not UNSET:
        stored_wm = (current.metadata or {}).get("workingMemory")
        if stored_wm != expected_working_memory:
            raise ConflictError(
                f"working memory of thread {current.id!r} changed since it was read"
            )
    return current.model_copy(
        update={
            "title": title if title is not None else current.title,
            "metadata": shallow_merge(current.metadata, metadata),
            "updated_at": updated_at,
        }
    )


def resource_after_update(
    current: Resource | None,
    resource_id: str,
    *,
    working_memory: str | None,
    metadata: dict[str, Any] | None,
    now: Any,
    expected_working_memory: Any,
) -> Resource:
    """The resource an ``update_resource`` call leaves behind (the rule every backend applies
    inside its own atomic read-modify-write).

    Created when ``current`` is None; otherwise working memory is replaced when given and
    metadata shallow-merged. Raises ``ConflictError`` when ``expected_working_memory`` is set
    and differs from the stored working memory (None: nothing stored).
    """
    stored_wm = current.working_memory if current is not None else None
    if expected_working_memory is not UNSET and stored_wm != expected_working_memory:
        raise ConflictError(f"working memory of resource {resource_id!r} changed since it was read")
    if current is None:
        return Resource.model_construct(
            id=resource_id,
            working_memory=working_memory,
            metadata=metadata,
            created_at=now,
            updated_at=now,
        )
    return current.model_copy(
        update={
            "working_memory": working_memory if working_memory is not None else stored_wm,
            "metadata": shallow_merge(current.metadata, metadata),
            "updated_at": now,
        },
        deep=True,
    )


def _chronological(message: Message) -> tuple[Any, str]:
    return (message.created_at, message.id)


def _last_wins(records: list[Message]) -> list[Message]:
    """Keep the last occurrence of each id, as sequential upserts would."""
    by_id = {m.id: m for m in records}
    return list(by_id.values()) if len(by_id) != len(records) else records


def _visible(
    includes: Sequence[Include], read: IncludeWindows, resource_id: str | None
) -> list[Message]:
    """The messages of the include windows ``read`` that the caller may see, window after
    window in the order given.

    An include whose ``thread_id`` is given must target a message of that thread, and in a
    call scoped by ``resource_id`` a target in a thread of another resource (or of no thread
    row at all) is dropped with its window: no read returns another resource's records.
    """
    extra: list[Message] = []
    for inc, found in zip(includes, read.windows, strict=True):
        if not found:
            continue  # no such message: its window is empty
        thread_id = found[0].thread_id  # a window is all of the target's thread
        if inc.thread_id is not None and inc.thread_id != thread_id:
            continue
        if resource_id is not None and read.owners.get(thread_id) != resource_id:
            continue
        extra.extend(found)
    return extra


def merge_messages(
    page: Sequence[Message], extra: Sequence[Message], *, descending: bool
) -> list[Message]:
    """Merge included messages into a page: deduplicate by id, order by (createdAt, id)."""
    by_id = {m.id: m for m in page}
    for m in extra:
        by_id.setdefault(m.id, m)
    return sorted(by_id.values(), key=_chronological, reverse=descending)


def content_of(value: Any) -> MessageContent:
    """Parse stored message content (JSON text or a legacy string)."""
    return MessageContent.from_stored(value)
