"""The observability domain on MongoDB: AI spans and traces, and OpenTelemetry spans."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING, ReplaceOne, UpdateOne

from composite_store.domains.observability import (
    LIGHT_OMITTED,
    ObservabilityDomain,
    OtelSpanQuery,
    SpanChange,
    TraceQuery,
)
from composite_store.domains.observability_filters import TraceFilter
from composite_store.errors import NotFoundError
from composite_store.records.observability import OtelSpan, Span
from composite_store.schema import table
from composite_store_mongodb.connection import Document, Session
from composite_store_mongodb.documents import NO_ID, document, from_document, literals
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of
from composite_store_mongodb.queries import dated, json_pairs, range_condition

__all__ = ["MongoObservability"]

SPANS, OTEL = table("ai_spans"), table("traces")
#: Span attribute -> stored field name.
_STORED = {name: info.serialization_alias or name for name, info in Span.model_fields.items()}
_LIGHT_PROJECTION = {"_id": False, **dict.fromkeys(LIGHT_OMITTED, False)}
_LIGHT_NONE = {name: None for name, info in Span.model_fields.items()
               if (info.serialization_alias or name) in LIGHT_OMITTED}


def _root_conditions(f: TraceFilter) -> dict[str, Any]:
    """The ``$match`` of the root spans ``f`` selects (everything but ``has_child_error``)."""
    conditions: dict[str, Any] = {"parentSpanId": None, **f.columns()}
    more: list[dict[str, Any]] = []
    if f.started_at is not None and (started := dated(f.started_at)):
        conditions["startedAt"] = started
    if f.ended_at is not None:
        # A running trace (no endedAt) is in no endedAt range, not even an unbounded one.
        conditions["endedAt"] = dated(f.ended_at) or {"$ne": None}
    if f.status == "error":
        more.append({"error": {"$ne": None}})
    elif f.status == "running":
        more.append({"error": None, "endedAt": None})
    elif f.status == "success":
        more.append({"error": None, "endedAt": {"$ne": None}})
    if f.tags:
        conditions["tags"] = {"$all": list(f.tags)}
    for name in ("metadata", "attributes", "scope"):
        more.extend(json_pairs(name, getattr(f, name)))
    if more:
        conditions["$and"] = more
    return conditions


class MongoObservability(MongoDomain, ObservabilityDomain):
    """AI spans keyed by (traceId, spanId); OpenTelemetry spans keyed by id."""

    # -- writes ----------------------------------------------------------------------------------

    async def _save_spans(self, spans: Sequence[Span]) -> None:
        coll = self.c("ai_spans")
        ops = [
            ReplaceOne(
                {"traceId": s.trace_id, "spanId": s.span_id}, document(SPANS, s), upsert=True
            )
            for s in spans
        ]
        await self.conn.run(
            lambda session: coll.bulk_write(ops, ordered=True, session=session), atomic=True
        )

    async def _update_spans(self, changes: Sequence[SpanChange], now: datetime) -> None:
        coll = self.c("ai_spans")
        keys = [{"traceId": c.trace_id, "spanId": c.span_id} for c in changes]
        ops = [
            UpdateOne(
                key,
                [{"$set": {**literals({_STORED[k]: v for k, v in c.values.items()}),
                           "updatedAt": now}}],
            )
            for key, c in zip(keys, changes, strict=True)
        ]

        async def update(session: Session) -> None:
            found = await coll.find(
                {"$or": keys}, {"_id": 0, "traceId": 1, "spanId": 1}, session=session
            ).to_list()
            present = {(d["traceId"], d["spanId"]) for d in found}
            missing = [(k["traceId"], k["spanId"]) for k in keys if
                       (k["traceId"], k["spanId"]) not in present]
            if missing:
                raise NotFoundError(f"spans not found (trace_id, span_id): {missing}")
            await coll.bulk_write(ops, ordered=True, session=session)

        await self.conn.run(update, atomic=True)

    async def _delete_traces(self, trace_ids: Sequence[str]) -> None:
        coll = self.c("ai_spans")
        await self.conn.run(lambda _: coll.delete_many({"traceId": {"$in": list(trace_ids)}}))

    async def _save_otel_spans(self, spans: Sequence[OtelSpan]) -> None:
        coll = self.c("traces")
        ops = [ReplaceOne({"id": s.id}, document(OTEL, s), upsert=True) for s in spans]
        await self.conn.run(
            lambda session: coll.bulk_write(ops, ordered=True, session=session), atomic=True
        )

    # -- reads -----------------------------------------------------------------------------------

    async def _get_span(self, trace_id: str, span_id: str) -> Span | None:
        coll = self.c("ai_spans")
        doc = await self.conn.run(
            lambda _: coll.find_one({"traceId": trace_id, "spanId": span_id}, NO_ID)
        )
        return from_document(Span, doc) if doc is not None else None

    async def _get_root_span(self, trace_id: str) -> Span | None:
        coll = self.c("ai_spans")
        doc = await self.conn.run(
            lambda _: coll.find_one(
                {"traceId": trace_id, "parentSpanId": None},
                NO_ID,
                sort=[("startedAt", ASCENDING), ("spanId", ASCENDING)],
            )
        )
        return from_document(Span, doc) if doc is not None else None

    async def _trace_spans(self, trace_id: str, *, light: bool) -> list[Span]:
        coll = self.c("ai_spans")
        projection = _LIGHT_PROJECTION if light else NO_ID
        docs = await self.conn.run(
            lambda _: coll.find({"traceId": trace_id}, projection)
            .sort([("startedAt", ASCENDING), ("spanId", ASCENDING)])
            .to_list()
        )
        extra = _LIGHT_NONE if light else {}
        return [from_document(Span, d, **extra) for d in docs]

    async def _list_traces(self, query: TraceQuery) -> tuple[list[Span], int | None]:
        coll = self.c("ai_spans")
        direction = DESCENDING if query.descending else ASCENDING
        match = _root_conditions(query.filter)
        sort: dict[str, int] = {}
        ordering: list[dict[str, Any]] = []
        if query.order_field == "endedAt":
            # A running trace (no endedAt) counts as the latest: first in DESC, last in ASC.
            ordering.append(
                {"$addFields": {"_running": {"$eq": [{"$ifNull": ["$endedAt", None]}, None]}}}
            )
            sort["_running"] = direction
        sort.update({query.order_field: direction, "traceId": direction, "spanId": direction})
        ordering.append({"$sort": sort})
        errors = self._child_error_stages(query.filter.has_child_error)
        w = query.window
        page: list[dict[str, Any]] = [{"$match": match}, *ordering, *errors]
        if w.offset:
            page.append({"$skip": w.offset})
        if w.fetch is not None:
            page.append({"$limit": w.fetch})
        page.append({"$project": {"_id": 0, "_running": 0, "_errors": 0}})

        async def read(_: Session) -> tuple[list[Document], int | None]:
            docs = await (await coll.aggregate(page)).to_list()
            if not query.count:
                return docs, None
            if not errors:
                return docs, await coll.count_documents(match)
            counted = await (
                await coll.aggregate([{"$match": match}, *errors, {"$count": "n"}])
            ).to_list()
            return docs, int(counted[0]["n"]) if counted else 0

        docs, total = await self.conn.run(read)
        return [from_document(Span, d) for d in docs], total

    def _child_error_stages(self, has_child_error: bool | None) -> list[dict[str, Any]]:
        """Stages keeping the root spans whose trace has (or has not) a span with an error:
        one indexed lookup of at most one span per trace."""
        if has_child_error is None:
            return []
        lookup = {
            "$lookup": {
                "from": SPANS.name(self.conn.prefix),
                "let": {"trace": "$traceId"},
                "pipeline": [
                    {"$match": {"$expr": {"$eq": ["$traceId", "$$trace"]}}},
                    {"$match": {"error": {"$ne": None}}},
                    {"$limit": 1},
                    {"$project": {"_id": 1}},
                ],
                "as": "_errors",
            }
        }
        wanted: dict[str, Any] = {"$ne": []} if has_child_error else {"$size": 0}
        return [lookup, {"$match": {"_errors": wanted}}]

    async def _list_otel_spans(self, query: OtelSpanQuery) -> tuple[list[OtelSpan], int | None]:
        conditions: dict[str, Any] = dict(query.filter.columns())
        rng = query.start_time
        if rng is not None and (
            started := range_condition(
                rng.start, rng.end,
                start_exclusive=rng.start_exclusive, end_exclusive=rng.end_exclusive,
            )
        ):
            conditions["startTime"] = started
        pairs = json_pairs("attributes", query.filter.attributes)
        if pairs:
            conditions["$and"] = pairs
        docs, total = await page_of(
            self.conn,
            self.c("traces"),
            conditions,
            [("startTime", DESCENDING), ("id", DESCENDING)],
            query.window,
            query.count,
        )
        return [from_document(OtelSpan, d) for d in docs], total
