"""The memory domain on MongoDB: threads, messages and resources."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from pymongo import ASCENDING, DESCENDING, DeleteOne, InsertOne, ReplaceOne, ReturnDocument

from composite_store.domains.memory import UNSET, MemoryDomain, MessageQuery, ThreadQuery
from composite_store.errors import ConflictError, NotFoundError
from composite_store.records.memory import (
    Message,
    Resource,
    Thread,
    message_from_row,
)
from composite_store.schema import table
from composite_store_mongodb.connection import Document, Session
from composite_store_mongodb.documents import NO_ID, document, from_document, literal, literals
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of
from composite_store_mongodb.queries import dated, json_pairs

__all__ = ["MongoMemory"]

THREADS, MESSAGES, RESOURCES = table("threads"), table("messages"), table("resources")
#: Rounds of ``save_messages`` when concurrent writers insert the same new message ids.
SAVE_ATTEMPTS = 5


def _same_working_memory(path: str, expected: Any) -> dict[str, Any]:
    """An ``$expr`` comparing the stored working memory with ``expected`` exactly (a plain
    equality filter would also match arrays containing it); absent counts as null."""
    return {"$eq": [{"$ifNull": [f"${path}", None]}, literal(expected)]}


class MongoMemory(MongoDomain, MemoryDomain):
    """Threads, messages and resources in three collections."""

    # -- threads ---------------------------------------------------------------------------------

    async def _get_thread(self, thread_id: str) -> Thread | None:
        threads = self.c("threads")
        doc = await self.conn.run(lambda _: threads.find_one({"id": thread_id}, NO_ID))
        return from_document(Thread, doc) if doc is not None else None

    async def _save_thread(self, thread: Thread) -> None:
        threads = self.c("threads")
        doc = document(THREADS, thread)
        await self.conn.run(
            lambda _: threads.replace_one({"id": thread.id}, doc, upsert=True)
        )

    async def _update_thread(
        self,
        thread_id: str,
        *,
        title: str | None,
        metadata: dict[str, Any] | None,
        updated_at: Any,
        expected_working_memory: Any,
    ) -> Thread | None:
        threads = self.c("threads")
        changes: dict[str, Any] = {"updatedAt": updated_at}
        if title is not None:
            changes["title"] = literal(title)
        if metadata is not None:
            changes["metadata"] = {
                "$mergeObjects": [{"$ifNull": ["$metadata", {}]}, literal(metadata)]
            }
        query: dict[str, Any] = {"id": thread_id}
        if expected_working_memory is not UNSET:
            query["$expr"] = _same_working_memory(
                "metadata.workingMemory", expected_working_memory
            )

        async def update(_: Session) -> Document | None:
            # One document, one atomic update: the merge happens on the server.
            doc = await threads.find_one_and_update(
                query, [{"$set": changes}], NO_ID, return_document=ReturnDocument.AFTER
            )
            checked = expected_working_memory is not UNSET
            if doc is None and checked and await threads.count_documents({"id": thread_id}):
                raise ConflictError(
                    f"working memory of thread {thread_id!r} changed since it was read"
                )
            return doc

        doc = await self.conn.run(update)
        return from_document(Thread, doc) if doc is not None else None

    async def _delete_thread(self, thread_id: str) -> None:
        threads, messages = self.c("threads"), self.c("messages")

        async def delete(session: Session) -> None:
            # Messages first: without a transaction an interruption leaves the thread, and
            # deleting it again finishes the job.
            await messages.delete_many({"thread_id": thread_id}, session=session)
            await threads.delete_one({"id": thread_id}, session=session)

        await self.conn.run(delete, atomic=True)

    async def _list_threads(self, query: ThreadQuery) -> tuple[list[Thread], int | None]:
        conditions: dict[str, Any] = {}
        if query.resource_id is not None:
            conditions["resourceId"] = query.resource_id
        pairs = json_pairs("metadata", query.metadata)
        if pairs:
            conditions["$and"] = pairs
        direction = DESCENDING if query.descending else ASCENDING
        docs, total = await page_of(
            self.conn,
            self.c("threads"),
            conditions,
            [(query.order_field, direction), ("id", direction)],
            query.window,
            query.count,
        )
        return [from_document(Thread, d) for d in docs], total

    # -- messages --------------------------------------------------------------------------------

    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        ids = query.thread_ids
        conditions: dict[str, Any] = {"thread_id": ids[0] if len(ids) == 1 else {"$in": list(ids)}}
        if query.resource_id is not None:
            conditions["resourceId"] = query.resource_id
        created = dated(query.date_range)
        if created:
            conditions["createdAt"] = created
        direction = DESCENDING if query.descending else ASCENDING
        docs, total = await page_of(
            self.conn,
            self.c("messages"),
            conditions,
            [("createdAt", direction), ("id", direction)],
            query.window,
            query.count,
        )
        return [message_from_row(d) for d in docs], total

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        messages = self.c("messages")

        async def neighbours(
            op: str, direction: int, limit: int, at: Any, thread_id: str
        ) -> list[Document]:
            if not limit:
                return []
            # Two bounded index ranges of (thread_id, createdAt, id), merged in index order.
            query = {
                "thread_id": thread_id,
                "$or": [{"createdAt": {op: at}}, {"createdAt": at, "id": {op: message_id}}],
            }
            cursor = (
                messages.find(query, NO_ID)
                .sort([("createdAt", direction), ("id", direction)])
                .limit(limit)
            )
            return await cursor.to_list()

        async def read(_: Session) -> list[Document]:
            target = await messages.find_one({"id": message_id}, NO_ID)
            if target is None:
                return []
            at, thread_id = target["createdAt"], target["thread_id"]
            earlier, later = await asyncio.gather(
                neighbours("$lt", DESCENDING, before, at, thread_id),
                neighbours("$gt", ASCENDING, after, at, thread_id),
            )
            return [target, *earlier, *later]

        return [message_from_row(d) for d in await self.conn.run(read)]

    async def _get_messages(self, message_ids: Sequence[str]) -> list[Message]:
        messages = self.c("messages")
        docs = await self.conn.run(
            lambda _: messages.find({"id": {"$in": list(message_ids)}}, NO_ID).to_list()
        )
        return [message_from_row(d) for d in docs]

    async def _save_messages(self, messages: Sequence[Message], now: Any) -> None:
        threads, coll = self.c("threads"), self.c("messages")
        targets = sorted({m.thread_id for m in messages})
        docs = [document(MESSAGES, m) for m in messages]

        async def save(session: Session) -> None:
            existing = await threads.find(
                {"id": {"$in": targets}}, {"_id": 0, "id": 1}, session=session
            ).to_list()
            missing = sorted(set(targets) - {d["id"] for d in existing})
            if missing:
                raise NotFoundError(f"thread(s) not found: {missing}")
            stored = await coll.find(
                {"id": {"$in": [d["id"] for d in docs]}},
                {"_id": 0, "id": 1, "thread_id": 1},
                session=session,
            ).to_list()
            previous = {p["id"]: p["thread_id"] for p in stored}
            # New messages are plain inserts (no per-message query); a stored one is replaced in
            # its thread, and a moved one leaves its old thread first. Every write names the
            # thread, so a collection sharded on thread_id routes each to a single shard.
            ops: list[InsertOne[Document] | DeleteOne | ReplaceOne[Document]] = []
            for d in docs:
                old = previous.get(d["id"])
                if old is not None and old != d["thread_id"]:
                    ops.append(DeleteOne({"thread_id": old, "id": d["id"]}))
                if old == d["thread_id"]:
                    ops.append(ReplaceOne({"thread_id": old, "id": d["id"]}, d, upsert=True))
                else:
                    ops.append(InsertOne(dict(d)))
            await coll.bulk_write(ops, ordered=True, session=session)
            touched = sorted(set(targets) | set(previous.values()))
            await threads.update_many(
                {"id": {"$in": touched}}, {"$set": {"updatedAt": now}}, session=session
            )

        for attempt in range(SAVE_ATTEMPTS):
            try:
                await self.conn.run(save, atomic=True)
                return
            except ConflictError:
                # A concurrent writer inserted one of these ids between the read and the
                # insert: read again, and that message is replaced as an upsert would.
                if attempt == SAVE_ATTEMPTS - 1:
                    raise

    async def _delete_messages(self, message_ids: Sequence[str], now: Any) -> None:
        threads, messages = self.c("threads"), self.c("messages")
        ids = list(message_ids)

        async def delete(session: Session) -> None:
            found = await messages.find(
                {"id": {"$in": ids}}, {"_id": 0, "thread_id": 1}, session=session
            ).to_list()
            touched = sorted({d["thread_id"] for d in found})
            if not touched:
                return
            await messages.delete_many({"id": {"$in": ids}}, session=session)
            await threads.update_many(
                {"id": {"$in": touched}}, {"$set": {"updatedAt": now}}, session=session
            )

        await self.conn.run(delete, atomic=True)

    # -- resources -------------------------------------------------------------------------------

    async def _get_resource(self, resource_id: str) -> Resource | None:
        resources = self.c("resources")
        doc = await self.conn.run(lambda _: resources.find_one({"id": resource_id}, NO_ID))
        return from_document(Resource, doc) if doc is not None else None

    async def _save_resource(self, resource: Resource) -> None:
        resources = self.c("resources")
        doc = document(RESOURCES, resource)
        await self.conn.run(
            lambda _: resources.replace_one({"id": resource.id}, doc, upsert=True)
        )

    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        resources = self.c("resources")
        # One pipeline update creates or updates the resource atomically; every field is set so
        # a created document has the full documented shape.
        changes: dict[str, Any] = {
            **literals({"id": resource_id, "updatedAt": now}),
            "createdAt": {"$ifNull": ["$createdAt", now]},
            "workingMemory": (
                literal(working_memory)
                if working_memory is not None
                else {"$ifNull": ["$workingMemory", None]}
            ),
            "metadata": (
                {"$mergeObjects": [{"$ifNull": ["$metadata", {}]}, literal(metadata)]}
                if metadata is not None
                else {"$ifNull": ["$metadata", None]}
            ),
        }
        query: dict[str, Any] = {"id": resource_id}
        checked = expected_working_memory is not UNSET
        if checked:
            query["$expr"] = _same_working_memory("workingMemory", expected_working_memory)
        # Expecting "no working memory" may create the resource; expecting a value may not
        # (a missing resource has none, so that is a conflict).
        upsert = not checked or expected_working_memory is None

        async def update(_: Session) -> Document | None:
            return await resources.find_one_and_update(
                query,
                [{"$set": changes}],
                NO_ID,
                upsert=upsert,
                return_document=ReturnDocument.AFTER,
            )

        for attempt in (1, 2):
            try:
                doc = await self.conn.run(update)
            except ConflictError as exc:
                if not checked and attempt == 1:
                    # Two first upserts raced to insert (MongoDB reports the loser as a
                    # duplicate key): the document exists now, so once more updates it.
                    continue
                if not checked:
                    raise
                # The upsert found no document with the expected working memory and tried to
                # insert one: the resource exists with another value.
                raise ConflictError(
                    f"working memory of resource {resource_id!r} changed since it was read"
                ) from exc
            if doc is not None or checked:
                break
            # An unchecked upsert always finds or creates the document; a server that lost
            # the race without saying so (the test server) gets the same second try.
        if doc is None:
            raise ConflictError(
                f"working memory of resource {resource_id!r} changed since it was read"
            )
        return from_document(Resource, doc)
