"""The raw contender on MongoDB: pymongo's ``AsyncMongoClient`` doing the adapter's logical
work by hand.

Same layout as ``composite_store_mongodb`` (collections and indexes created by it, in a
database of their own): one document per record holding every documented field, timestamps as
BSON dates read back as aware UTC datetimes, message content as JSON text. Same commands: a
message batch checks its threads and the messages' previous threads, then bulk-writes them
(inserts for new messages, replacements for stored ones) and bumps updatedAt, in one
transaction where the deployment has them (as a span batch is one bulk upsert); a
working-memory write is one pipeline ``find_one_and_update`` upsert; a snapshot save one
pipeline ``update_one`` upsert keeping ``createdAt``; a thread page sends its find and its
count together; an include window reads the target, then both neighbour ranges together.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from bson.codec_options import CodecOptions
from pymongo import (
    ASCENDING,
    DESCENDING,
    AsyncMongoClient,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    ReturnDocument,
)
from pymongo.asynchronous.client_session import AsyncClientSession

from bench.targets.base import Msg, SpanRow, Target
from composite_store.schema import table

T = TypeVar("T")
Doc = dict[str, Any]
NO_ID = {"_id": False}
_TABLES = ("threads", "messages", "resources", "workflow_snapshot", "ai_spans")
_SPAN_FIELDS = table("ai_spans").column_names


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _lit(value: Any) -> Doc:
    return {"$literal": value}


class RawMongoTarget(Target):
    kind = "raw"

    def __init__(self, url: str, database: str, prefix: str = "mastra_") -> None:
        self.url, self.database, self.p = url, database, prefix
        self.client: AsyncMongoClient[Doc] | None = None
        self.transactions = False

    async def open(self) -> None:
        self.client = AsyncMongoClient(self.url)
        self.db = self.client.get_database(
            self.database, codec_options=CodecOptions(tz_aware=True, tzinfo=UTC)
        )
        hello = await self.db.command("hello")
        self.transactions = bool(hello.get("setName") or hello.get("msg") == "isdbgrid")
        self.threads, self.messages = self.db[f"{self.p}threads"], self.db[f"{self.p}messages"]
        self.resources = self.db[f"{self.p}resources"]
        self.runs = self.db[f"{self.p}workflow_snapshot"]
        self.spans = self.db[f"{self.p}ai_spans"]

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()
            self.client = None

    async def reset(self) -> None:
        for name in _TABLES:
            await self.db[f"{self.p}{name}"].delete_many({})

    async def _atomic(self, fn: Callable[[AsyncClientSession | None], Awaitable[T]]) -> T:
        """``fn`` in one transaction where the deployment has them, as the adapter runs it."""
        if not self.transactions:
            return await fn(None)
        assert self.client is not None
        async with self.client.start_session() as session:
            return await session.with_transaction(fn)

    # -- memory ------------------------------------------------------------------------------------

    async def save_thread(self, thread_id: str, resource_id: str, created_at: datetime) -> None:
        doc = {"id": thread_id, "resourceId": resource_id, "title": "bench", "metadata": None,
               "createdAt": created_at, "updatedAt": created_at}
        await self.threads.replace_one({"id": thread_id}, doc, upsert=True)

    async def save_messages(self, messages: list[Msg]) -> None:
        targets = sorted({m.thread_id for m in messages})
        docs = [
            {"id": m.id, "thread_id": m.thread_id, "content": dumps(m.content), "role": m.role,
             "type": "v2", "createdAt": m.created_at, "resourceId": m.resource_id}
            for m in messages
        ]
        stamp = datetime.now(UTC)

        async def save(session: AsyncClientSession | None) -> None:
            found = await self.threads.find(
                {"id": {"$in": targets}}, {"_id": 0, "id": 1}, session=session
            ).to_list()
            if len(found) != len(targets):
                raise LookupError(f"thread(s) not found among {targets}")
            stored = await self.messages.find(
                {"id": {"$in": [d["id"] for d in docs]}}, {"_id": 0, "id": 1, "thread_id": 1},
                session=session,
            ).to_list()
            previous = {p["id"]: p["thread_id"] for p in stored}
            # New messages are plain inserts; a stored one is replaced in its thread, a moved
            # one leaves its old thread first (as the adapter writes them).
            ops: list[Any] = []
            for d in docs:
                old = previous.get(d["id"])
                if old is not None and old != d["thread_id"]:
                    ops.append(DeleteOne({"thread_id": old, "id": d["id"]}))
                if old == d["thread_id"]:
                    ops.append(ReplaceOne({"thread_id": old, "id": d["id"]}, d, upsert=True))
                else:
                    ops.append(InsertOne(dict(d)))
            await self.messages.bulk_write(ops, ordered=True, session=session)
            await self.threads.update_many(
                {"id": {"$in": sorted(set(targets) | set(previous.values()))}},
                {"$set": {"updatedAt": stamp}}, session=session,
            )

        await self._atomic(save)

    def _decode(self, docs: list[Doc]) -> list[Doc]:
        for d in docs:
            d["content"] = json.loads(d["content"])
        return docs

    async def _newest(self, thread_id: str, n: int) -> list[Doc]:
        cursor = (
            self.messages.find({"thread_id": thread_id}, NO_ID)
            .sort([("createdAt", DESCENDING), ("id", DESCENDING)])
            .limit(n + 1)
        )
        return self._decode(await cursor.to_list())[:n]

    async def newest(self, thread_id: str, n: int) -> list[str]:
        return [d["id"] for d in await self._newest(thread_id, n)]

    async def newest_with_window(
        self, thread_id: str, n: int, message_id: str, before: int, after: int
    ) -> list[str]:
        merged = {d["id"]: d for d in await self._newest(thread_id, n)}
        target = await self.messages.find_one({"id": message_id}, NO_ID)
        if target is not None:
            at, tid = target["createdAt"], target["thread_id"]

            async def side(op: str, direction: int, limit: int) -> list[Doc]:
                beyond = [{"createdAt": {op: at}}, {"createdAt": at, "id": {op: message_id}}]
                query = {"thread_id": tid, "$or": beyond}
                cursor = self.messages.find(query, NO_ID).sort(
                    [("createdAt", direction), ("id", direction)]
                ).limit(limit)
                return await cursor.to_list()

            earlier, later = await asyncio.gather(
                side("$lt", DESCENDING, before), side("$gt", ASCENDING, after)
            )
            for d in self._decode([target, *earlier, *later]):
                merged.setdefault(d["id"], d)
        ordered = sorted(merged.values(), key=lambda d: (d["createdAt"], d["id"]), reverse=True)
        return [d["id"] for d in ordered]

    async def thread_page(self, resource_id: str, page: int, per_page: int) -> list[str]:
        query = {"resourceId": resource_id}
        cursor = (
            self.threads.find(query, NO_ID)
            .sort([("createdAt", DESCENDING), ("id", DESCENDING)])
            .skip(page * per_page)
            .limit(per_page + 1)
        )
        docs, _ = await asyncio.gather(cursor.to_list(), self.threads.count_documents(query))
        return [d["id"] for d in docs[:per_page]]

    async def update_working_memory(self, resource_id: str, text: str) -> None:
        stamp = datetime.now(UTC)
        changes = {
            "id": _lit(resource_id),
            "updatedAt": stamp,
            "createdAt": {"$ifNull": ["$createdAt", stamp]},
            "workingMemory": _lit(text),
            "metadata": {"$ifNull": ["$metadata", None]},
        }
        await self.resources.find_one_and_update(
            {"id": resource_id}, [{"$set": changes}], NO_ID, upsert=True,
            return_document=ReturnDocument.AFTER,
        )

    async def get_working_memory(self, resource_id: str) -> str | None:
        doc = await self.resources.find_one({"id": resource_id}, NO_ID)
        return doc.get("workingMemory") if doc is not None else None

    # -- workflows ---------------------------------------------------------------------------------

    async def save_snapshot(self, name: str, run_id: str, snapshot: dict[str, Any]) -> None:
        stamp = datetime.now(UTC)
        changes = {
            "workflow_name": _lit(name), "run_id": _lit(run_id), "resourceId": _lit(None),
            "snapshot": _lit(snapshot), "updatedAt": stamp,
            "createdAt": {"$ifNull": ["$createdAt", stamp]},
        }
        await self.runs.update_one(
            {"workflow_name": name, "run_id": run_id}, [{"$set": changes}], upsert=True
        )

    async def load_snapshot(self, name: str, run_id: str) -> dict[str, Any] | None:
        doc = await self.runs.find_one(
            {"run_id": run_id, "workflow_name": name}, NO_ID, sort=[("createdAt", DESCENDING)]
        )
        return doc["snapshot"] if doc is not None else None

    # -- observability -----------------------------------------------------------------------------

    async def save_spans(self, spans: list[SpanRow]) -> None:
        stamp = datetime.now(UTC)
        ops = []
        for s in spans:
            doc: Doc = dict.fromkeys(_SPAN_FIELDS)
            doc.update(
                traceId=s.trace_id, spanId=s.span_id, parentSpanId=s.parent_span_id,
                name=s.name, spanType=s.span_type, isEvent=False, startedAt=s.started_at,
                endedAt=s.ended_at, attributes=s.attributes, input=s.input, output=s.output,
                createdAt=stamp, updatedAt=stamp,
            )
            ops.append(ReplaceOne({"traceId": s.trace_id, "spanId": s.span_id}, doc, upsert=True))

        async def save(session: AsyncClientSession | None) -> None:
            await self.spans.bulk_write(ops, ordered=True, session=session)

        await self._atomic(save)

    async def read_trace(self, trace_id: str) -> int:
        cursor = self.spans.find({"traceId": trace_id}, NO_ID).sort(
            [("startedAt", ASCENDING), ("spanId", ASCENDING)]
        )
        return len(await cursor.to_list())
