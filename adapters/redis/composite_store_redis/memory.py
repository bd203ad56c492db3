"""The memory domain on Redis: threads, messages and resources as hashes, ordered by sorted sets.

Layout (``T`` = prefixed table name, e.g. ``mastra_threads``):

- a thread is ``mastra_threads:{<thread id>}``; its messages are ``mastra_messages:{<thread
  id>}:<message id>`` with the per-thread indexes (by createdAt; by resourceId and createdAt),
  all in the thread's slot, so a batch within one thread is one atomic script on a cluster;
- ``mastra_messages:id_thread_id_idx:{<message id>}`` holds the thread of each message (for
  lookups by id and for moves);
- threads are listed from ``resourceid_createdat_idx`` / ``resourceid_updatedat_idx`` (one set
  per resource) and ``createdat_idx`` / ``updatedat_idx`` (all threads);
- metadata filters: ``meta_resourceid_meta_createdat_idx:{<resource id>}:<pair>`` (a
  resource's threads holding one metadata key/value pair, ``<pair>`` its JSON ``["k",v]``)
  and ``meta_all_meta_createdat_idx:{*}:<pair>`` (every resource's); a filter intersects them
  with the listing's order set in the slot they share (``scratch:{...}``, deleted at once);
- a resource is ``mastra_resources:{<resource id>}``, listed by ``createdat_idx`` (all
  resources).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from composite_store.domains.base import Capabilities
from composite_store.domains.memory import (
    MemoryDomain,
    MessageQuery,
    ThreadQuery,
    resource_after_update,
    thread_after_update,
)
from composite_store.errors import NotFoundError
from composite_store.records.base import Record, now_utc
from composite_store.records.memory import Message, MessageContent, Resource, Thread
from composite_store.records.trusted import RowReader, row_reader
from composite_store.schema import table
from composite_store_redis import transfer
from composite_store_redis.batch import Batch
from composite_store_redis.codec import (
    decode_record,
    dump_json,
    encode_record,
    from_stored,
    iso,
    score_range,
)
from composite_store_redis.domain import RedisDomain
from composite_store_redis.intersect import intersect_page
from composite_store_redis.keys import GLOBAL_TAG, pack, sorted_index, unpack

__all__ = ["RedisMemory"]

_THREADS, _MESSAGES, _RESOURCES = table("threads"), table("messages"), table("resources")
BY_RESOURCE = sorted_index("threads", ["resourceId"], "createdAt", ["id"])
BY_RESOURCE_UPDATED = sorted_index("threads", ["resourceId"], "updatedAt", ["id"])
ALL_THREADS = sorted_index("threads", [], "createdAt", ["id"])
ALL_THREADS_UPDATED = sorted_index("threads", [], "updatedAt", ["id"])
_ALL, _META = "_all", "_meta"
#: Threads by one metadata key/value pair (``_meta``: :func:`metadata_pair`), within a resource
#: (on the resource's slot) and across resources (on the ``{*}`` slot of the whole-table sets):
#: a metadata filter intersects them with the listing's order set, one slot either way.
META_BY_RESOURCE = sorted_index(
    "threads", ["resourceId", _META], "createdAt", ["id"], derived=(_META,), kind="meta"
)
META_ALL = sorted_index(
    "threads", [_ALL, _META], "createdAt", ["id"], derived=(_ALL, _META), kind="meta"
)
THREAD_INDEXES = (
    BY_RESOURCE, BY_RESOURCE_UPDATED, ALL_THREADS, ALL_THREADS_UPDATED, META_BY_RESOURCE, META_ALL
)
#: Longest JSON of a metadata pair kept as is in its set's key; longer ones are hashed.
_PAIR_MAX = 200
BY_THREAD = sorted_index("messages", ["thread_id"], "createdAt", ["id"])
BY_THREAD_RESOURCE = sorted_index("messages", ["thread_id", "resourceId"], "createdAt", ["id"])
MESSAGE_INDEXES = (BY_THREAD, BY_THREAD_RESOURCE)
#: Every resource, so that export lists them all (schema version 1).
ALL_RESOURCES = sorted_index("resources", [], "createdAt", ["id"])
RESOURCE_INDEXES = (ALL_RESOURCES,)
#: Thread ids per read while exporting or counting messages thread by thread.
_THREAD_CHUNK = 100
#: message id -> thread id
MESSAGE_THREAD = "id_thread_id_idx"


def metadata_pair(key: str, value: Any) -> str:
    """How one metadata key/value pair names its index set: its JSON (``["kind","x"]``), or
    the SHA-1 of a long one."""
    text = dump_json([key, value])
    if len(text) <= _PAIR_MAX:
        return text
    return "sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest()


def _indexed(stored: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A thread's stored values plus the derived ones its metadata sets partition by."""
    if stored is None:
        return None
    metadata = stored.get("metadata")
    pairs = [metadata_pair(k, v) for k, v in metadata.items()] if metadata else []
    return {**stored, _ALL: GLOBAL_TAG, _META: pairs or None}


def _thread(fields: dict[str, str]) -> Thread:
    return from_stored(Thread, decode_record(_THREADS, fields))


#: A Message from its decoded hash (content stays JSON text until the record is built).
_message_of: RowReader[Message] = row_reader(
    Message, absent_is_none=True, content=MessageContent.from_stored
)


def _message(fields: dict[str, str]) -> Message:
    return _message_of(decode_record(_MESSAGES, fields))


_CROSS_SLOT = (
    "on Redis Cluster a batch over several threads spans hash slots: each thread's part is "
    "atomic, the whole is not"
)


class RedisMemory(RedisDomain, MemoryDomain):
    """Threads, messages and resources on Redis (standalone or cluster)."""

    tables = ("threads", "messages", "resources")
    indexes = (*THREAD_INDEXES, *MESSAGE_INDEXES, *RESOURCE_INDEXES)
    pointers = (("messages", MESSAGE_THREAD, "id", "thread_id"),)
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True,
        concurrent_updates=True,
        compare_and_set=True,
        transactions=True,
        sort_threads=True,
        metadata_filters=True,
    )
    # A batch spanning threads spans slots: each thread's part stays atomic, the whole does not.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(
        concurrent_updates=True,
        compare_and_set=True,
        sort_threads=True,
        metadata_filters=True,
        reasons={"atomic_batches": _CROSS_SLOT, "transactions": _CROSS_SLOT},
    )

    # -- keys --------------------------------------------------------------------------------------

    def _thread_key(self, thread_id: str) -> str:
        return self.keys.record("threads", thread_id)

    def _message_key(self, thread_id: str, message_id: str) -> str:
        return self.keys.record("messages", thread_id, pack(message_id))

    def _pointer(self, message_id: str) -> str:
        return self.keys.pointer("messages", MESSAGE_THREAD, message_id)

    def _resource_key(self, resource_id: str) -> str:
        return self.keys.record("resources", resource_id)

    async def _init(self) -> None:
        await super()._init()
        # Threads an older release wrote have no metadata sets: a filter would miss them, so
        # it is refused on such a key space (copy it into a fresh prefix to get the sets).
        [listed] = await self.conn.read([["HGET", self.keys.catalog("threads"), "indexes"]])
        names = {name for name, _, _ in json.loads(listed or "[]")}
        if f"{self.keys.table('threads')}_{META_ALL.name}" not in names:
            setattr(  # noqa: B010
                self,
                "capabilities",
                dataclasses.replace(self.capabilities, metadata_filters=False),
            )

    async def read_raw(self, table: str, key: Any) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        if table == "threads":
            return await self._raw(table, self._thread_key(key["id"]))
        if table == "resources":
            return await self._raw(table, self._resource_key(key["id"]))
        # With the thread given, read where that thread keeps the message, past the id pointer:
        # a hash the pointer no longer leads to (left behind by a delete) is still seen.
        thread_id = key.get("thread_id")
        if thread_id is None:
            [thread_id] = await self.conn.read([["GET", self._pointer(key["id"])]])
        return (
            None
            if thread_id is None
            else await self._raw(table, self._message_key(thread_id, key["id"]))
        )

    # -- threads -----------------------------------------------------------------------------------

    async def _get_thread(self, thread_id: str) -> Thread | None:
        # docstring inherited
        [found] = await self.conn.read([["HGETALL", self._thread_key(thread_id)]])
        return _thread(found) if found else None

    async def _save_thread(self, thread: Thread) -> None:
        # docstring inherited
        key = self._thread_key(thread.id)
        new = thread.stored()

        async def attempt() -> bool | None:
            [old] = await self.conn.read([["HGETALL", key]])
            batch = self.batch()
            batch.expect_field(key, "resourceId", old.get("resourceId") if old else None)
            batch.expect_field(key, "metadata", old.get("metadata") if old else None)
            batch.put_record(key, encode_record(_THREADS, new))
            self.reindex(
                batch,
                THREAD_INDEXES,
                _indexed(decode_record(_THREADS, old) if old else None),
                _indexed(new),
            )
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"save_thread({thread.id!r})")

    async def _update_thread(
        self,
        thread_id: str,
        *,
        title: str | None,
        metadata: dict[str, Any] | None,
        updated_at: Any,
        expected_working_memory: Any,
    ) -> Thread | None:
        # docstring inherited
        key = self._thread_key(thread_id)

        async def attempt() -> tuple[Thread | None] | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            if not raw:
                return (None,)
            current = _thread(raw)
            updated = thread_after_update(
                current, title, metadata, updated_at, expected_working_memory
            )
            batch = self.batch()
            for name in ("resourceId", "metadata", "title", "createdAt"):
                batch.expect_field(key, name, raw.get(name))
            batch.put_record(key, encode_record(_THREADS, updated.stored()))
            self.reindex(
                batch, THREAD_INDEXES, _indexed(current.stored()), _indexed(updated.stored())
            )
            return (updated,) if await self.conn.apply(batch) else None

        (result,) = await self.optimistic(attempt, f"update_thread({thread_id!r})")
        return result

    async def _delete_thread(self, thread_id: str) -> None:
        # docstring inherited
        key = self._thread_key(thread_id)
        index, companion = self.index_set(BY_THREAD, [thread_id])

        async def attempt() -> bool | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            # Every message of the thread, with the one field its other index depends on.
            page = await self.conn.page(
                index,
                companion,
                records=self.keys.record_prefix("messages", thread_id),
                fields=("id", "resourceId"),
            )
            batch = self.batch()
            batch.expect_field(key, "resourceId", raw.get("resourceId") if raw else None)
            if raw:
                batch.delete(key)
                self.reindex(batch, THREAD_INDEXES, _indexed(decode_record(_THREADS, raw)), None)
            assert page.records is not None
            for member, fields in zip(page.members, page.records, strict=True):
                message_id = unpack(member)[0]
                pointer = self._pointer(message_id)
                batch.expect_value(pointer, thread_id)
                batch.delete(self._message_key(thread_id, message_id), pointer)
                self.reindex(
                    batch,
                    MESSAGE_INDEXES,
                    {
                        "thread_id": thread_id,
                        "id": message_id,
                        "resourceId": fields.get("resourceId"),
                        "createdAt": 0,
                    },
                    None,
                )
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"delete_thread({thread_id!r})")

    async def _list_threads(self, query: ThreadQuery) -> tuple[list[Thread], int | None]:
        # docstring inherited
        if query.resource_id is not None:
            index = BY_RESOURCE if query.order_field == "createdAt" else BY_RESOURCE_UPDATED
            values = [query.resource_id]
        else:
            index = ALL_THREADS if query.order_field == "createdAt" else ALL_THREADS_UPDATED
            values = []
        w = query.window
        count = w.fetch
        if query.metadata:
            meta, tag = (
                (META_BY_RESOURCE, query.resource_id)
                if query.resource_id is not None
                else (META_ALL, GLOBAL_TAG)
            )
            sets = [self.keys.index(index, values)] + [
                self.keys.index(meta, [tag, metadata_pair(k, v)])
                for k, v in query.metadata.items()
            ]
            page = await intersect_page(
                self.conn,
                sets,
                self.keys.scratch("threads", tag),
                reverse=query.descending,
                offset=w.offset,
                count=count,
                total=query.count,
            )
        else:
            page = await self.conn.page(
                *self.index_set(index, values),
                reverse=query.descending,
                offset=w.offset,
                count=count,
                total=query.count,
            )
        ids = [unpack(m)[0] for m in page.members]
        found = await self.conn.read([["HGETALL", self._thread_key(t)] for t in ids])
        # An entry whose thread is gone (or moved) was left by a partly applied cluster write.
        threads = [
            _thread(raw)
            for raw in found
            if raw and (query.resource_id is None or raw.get("resourceId") == query.resource_id)
        ]
        if query.metadata:
            threads = [t for t in threads if _has_metadata(t.metadata, query.metadata)]
        return threads, page.total

    # -- messages ----------------------------------------------------------------------------------

    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        # docstring inherited
        w = query.window
        low, high = score_range(query.date_range)
        single = len(query.thread_ids) == 1
        wanted = w.stop

        async def one(thread_id: str) -> tuple[list[Message], int | None]:
            if query.resource_id is None:
                index = self.index_set(BY_THREAD, [thread_id])
            else:
                index = self.index_set(BY_THREAD_RESOURCE, [thread_id, query.resource_id])
            page = await self.conn.page(
                *index,
                low=low,
                high=high,
                reverse=query.descending,
                offset=w.offset if single else 0,
                count=w.fetch if single else wanted,
                total=query.count,
                records=self.keys.record_prefix("messages", thread_id),
            )
            assert page.records is not None
            return [_message(r) for r in page.records if r], page.total

        if single:
            return await one(query.thread_ids[0])
        # Several threads: the first offset+limit+1 of each, merged; bounded by the page.
        parts = [await one(t) for t in dict.fromkeys(query.thread_ids)]
        merged = sorted(
            (m for rows, _ in parts for m in rows),
            key=lambda m: (m.created_at, m.id),
            reverse=query.descending,
        )
        end = w.stop
        total = sum(t or 0 for _, t in parts) if query.count else None
        return merged[w.offset : end], total

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        # docstring inherited
        [thread_id] = await self.conn.read([["GET", self._pointer(message_id)]])
        if thread_id is None:
            return []
        found = await self.conn.window(
            *self.index_set(BY_THREAD, [thread_id]),
            pack(message_id),
            before,
            after,
            self.keys.record_prefix("messages", thread_id),
        )
        return [_message(r) for r in found if r]

    async def _get_messages(self, message_ids: Sequence[str]) -> list[Message]:
        # docstring inherited
        ids = list(dict.fromkeys(message_ids))
        threads = await self.conn.read([["GET", self._pointer(m)] for m in ids])
        located = [(m, t) for m, t in zip(ids, threads, strict=True) if t is not None]
        found = await self.conn.read([["HGETALL", self._message_key(t, m)] for m, t in located])
        return [_message(raw) for raw in found if raw]

    async def _save_messages(
        self, messages: Sequence[Message], now: Any, *, touch: bool = True
    ) -> None:
        # docstring inherited
        # ``touch=False``: an import, which leaves the threads' updatedAt as they are.
        targets = list(dict.fromkeys(m.thread_id for m in messages))

        async def attempt() -> bool | None:
            reads = [["HGET", self._thread_key(t), "resourceId"] for t in targets]
            reads += [["GET", self._pointer(m.id)] for m in messages]
            found = await self.conn.read(reads)
            owners = dict(zip(targets, found[: len(targets)], strict=True))
            missing = sorted(t for t, owner in owners.items() if owner is None)
            if missing:
                raise NotFoundError(f"thread(s) not found: {missing}")
            previous = dict(zip((m.id for m in messages), found[len(targets) :], strict=True))
            # Messages saved before (upserts, moves): their stored resourceId and thread owner.
            existing = [(m, previous[m.id]) for m in messages if previous[m.id] is not None]
            moved_from = sorted({t for _, t in existing} - set(owners))
            more = await self.conn.read(
                [["HGET", self._message_key(t, m.id), "resourceId"] for m, t in existing]
                + [["HGET", self._thread_key(t), "resourceId"] for t in moved_from]
            )
            old_resource = {
                m.id: r for (m, _), r in zip(existing, more[: len(existing)], strict=True)
            }
            owners.update(zip(moved_from, more[len(existing) :], strict=True))

            batch = self.batch()
            for thread_id, owner in owners.items():
                batch.expect_field(self._thread_key(thread_id), "resourceId", owner)
            for message in messages:
                pointer = self._pointer(message.id)
                before = previous[message.id]
                batch.expect_value(pointer, before)
                if before is not None:
                    old_key = self._message_key(before, message.id)
                    batch.expect_field(old_key, "resourceId", old_resource.get(message.id))
                    old = {
                        "thread_id": before,
                        "id": message.id,
                        "createdAt": 0,
                        "resourceId": old_resource.get(message.id),
                    }
                    if before != message.thread_id:
                        batch.delete(old_key)
                    self.reindex(batch, MESSAGE_INDEXES, old, None)
                stored = message.stored_row()
                batch.put_record(
                    self._message_key(message.thread_id, message.id),
                    encode_record(_MESSAGES, stored),
                )
                self.reindex(batch, MESSAGE_INDEXES, None, stored)
                batch.set_string(pointer, message.thread_id)
            if touch:
                self._touch(batch, owners, now)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, "save_messages")

    def _touch(self, batch: Batch, owners: dict[str, str | None], now: Any) -> None:
        """Set updatedAt of existing threads (owner: their resourceId) and move their entries in
        the updatedAt indexes."""
        for thread_id, owner in owners.items():
            if owner is None:
                continue
            key = self._thread_key(thread_id)
            batch.set_fields(key, {"updatedAt": iso(now)})
            stored = {"id": thread_id, "resourceId": owner, "updatedAt": now}
            self.reindex(batch, (BY_RESOURCE_UPDATED, ALL_THREADS_UPDATED), None, stored)

    async def _delete_messages(self, message_ids: Sequence[str], now: Any) -> None:
        # docstring inherited
        ids = list(dict.fromkeys(message_ids))

        async def attempt() -> bool | None:
            threads = await self.conn.read([["GET", self._pointer(m)] for m in ids])
            located = [(m, t) for m, t in zip(ids, threads, strict=True) if t is not None]
            owners_of = sorted({t for _, t in located})
            found = await self.conn.read(
                [["HMGET", self._message_key(t, m), "id", "resourceId"] for m, t in located]
                + [["HGET", self._thread_key(t), "resourceId"] for t in owners_of]
            )
            owners = dict(zip(owners_of, found[len(located) :], strict=True))
            batch = self.batch()
            for thread_id, owner in owners.items():
                batch.expect_field(self._thread_key(thread_id), "resourceId", owner)
            for (message_id, thread_id), (exists, resource_id) in zip(
                located, found[: len(located)], strict=True
            ):
                pointer = self._pointer(message_id)
                batch.expect_value(pointer, thread_id)
                batch.delete(pointer)
                if exists is None:
                    continue  # a pointer left by a partly applied cluster write
                key = self._message_key(thread_id, message_id)
                batch.expect_field(key, "resourceId", resource_id)
                batch.delete(key)
                old = {
                    "thread_id": thread_id,
                    "id": message_id,
                    "createdAt": 0,
                    "resourceId": resource_id,
                }
                self.reindex(batch, MESSAGE_INDEXES, old, None)
            self._touch(batch, owners, now)
            if not batch:
                return True
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, "delete_messages")

    # -- resources ---------------------------------------------------------------------------------

    async def _get_resource(self, resource_id: str) -> Resource | None:
        # docstring inherited
        [found] = await self.conn.read([["HGETALL", self._resource_key(resource_id)]])
        return from_stored(Resource, decode_record(_RESOURCES, found)) if found else None

    async def _save_resource(self, resource: Resource) -> None:
        # docstring inherited
        key = self._resource_key(resource.id)
        new = resource.stored()

        async def attempt() -> bool | None:
            # The index entry moves with createdAt: guard the value it was read at.
            [created] = await self.conn.read([["HGET", key, "createdAt"]])
            batch = self.batch()
            batch.expect_field(key, "createdAt", created)
            batch.put_record(key, encode_record(_RESOURCES, new))
            old = (
                None
                if created is None
                else decode_record(_RESOURCES, {"id": resource.id, "createdAt": created})
            )
            self.reindex(batch, RESOURCE_INDEXES, old, new)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"save_resource({resource.id!r})")

    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        # docstring inherited
        key = self._resource_key(resource_id)

        async def attempt() -> Resource | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            current = from_stored(Resource, decode_record(_RESOURCES, raw)) if raw else None
            updated = resource_after_update(
                current,
                resource_id,
                working_memory=working_memory,
                metadata=metadata,
                now=now,
                expected_working_memory=expected_working_memory,
            )
            batch = self.batch()
            batch.expect_exists(key, raw is not None and bool(raw))
            for name in ("workingMemory", "metadata", "createdAt"):
                batch.expect_field(key, name, raw.get(name) if raw else None)
            batch.put_record(key, encode_record(_RESOURCES, updated.stored()))
            self.reindex(
                batch,
                RESOURCE_INDEXES,
                current.stored() if current is not None else None,
                updated.stored(),
            )
            return updated if await self.conn.apply(batch) else None

        return await self.optimistic(attempt, f"update_resource({resource_id!r})")

    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        if table == "threads":
            return await self._export_from(
                ALL_THREADS, cursor, limit, lambda m: self._thread_key(unpack(m)[0]), _thread
            )
        if table == "resources":
            return await self._export_from(
                ALL_RESOURCES,
                cursor,
                limit,
                lambda m: self._resource_key(unpack(m)[0]),
                _resource,
            )
        return await self._export_messages(cursor, limit)

    async def _export_messages(
        self, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        """Messages thread by thread (threads by createdAt, each thread's by createdAt); the
        cursor is "<thread rank>:<message rank>"."""
        thread_rank, _, message_rank = (cursor or "0:0").partition(":")
        at_thread = transfer.offset_of(thread_rank, "messages")
        at_message = transfer.offset_of(message_rank or "0", "messages")
        found: list[Record] = []
        while True:
            threads = await self.conn.page(
                *self.index_set(ALL_THREADS, []), offset=at_thread, count=_THREAD_CHUNK
            )
            if not threads.members:
                return found, None
            for member in threads.members:
                thread_id = unpack(member)[0]
                wanted = limit - len(found)
                page = await self.conn.page(
                    *self.index_set(BY_THREAD, [thread_id]),
                    offset=at_message,
                    count=wanted + 1,
                    records=self.keys.record_prefix("messages", thread_id),
                )
                assert page.records is not None
                found.extend(_message(r) for r in page.records[:wanted] if r)
                if len(page.members) > wanted:
                    return found, f"{at_thread}:{at_message + wanted}"
                at_thread, at_message = at_thread + 1, 0
                if len(found) == limit:
                    return found, f"{at_thread}:0"

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        ids = [k[0] for k in keys]
        if table == "threads":
            return await self._fetch_keys([self._thread_key(i) for i in ids], _thread)
        if table == "resources":
            return await self._fetch_keys([self._resource_key(i) for i in ids], _resource)
        return list(await self._get_messages(ids))

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        if table == "messages":
            messages = [r for r in records if isinstance(r, Message)]
            await self._save_messages(messages, now_utc(), touch=False)
            return
        for record in records:
            if isinstance(record, Thread):
                await self._save_thread(record)
            elif isinstance(record, Resource):
                await self._save_resource(record)

    async def _count(self, table: str) -> int:
        # docstring inherited
        if table == "threads":
            return await transfer.count_index(self, ALL_THREADS)
        if table == "resources":
            return await transfer.count_index(self, ALL_RESOURCES)
        threads = await self.conn.page(*self.index_set(ALL_THREADS, []))
        total = 0
        for member in threads.members:
            total += await transfer.count_index(self, BY_THREAD, [unpack(member)[0]])
        return total


def _has_metadata(metadata: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` holds every wanted pair, values compared as JSON (1 is not "1")."""
    return all(
        metadata is not None and k in metadata and dump_json(metadata[k]) == dump_json(v)
        for k, v in wanted.items()
    )


def _resource(fields: dict[str, str]) -> Resource:
    return from_stored(Resource, decode_record(_RESOURCES, fields))
