"""The observability domain in SQL, written once for every relational backend."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Executable

from composite_store.domains.observability import (
    LIGHT_OMITTED,
    NanoRange,
    ObservabilityDomain,
    OtelSpanQuery,
    SpanChange,
    TraceQuery,
)
from composite_store.domains.observability_filters import TraceFilter
from composite_store.errors import NotFoundError
from composite_store.records.observability import OtelSpan, Span
from composite_store.records.trusted import from_row
from composite_store.schema import ColumnType, table
from composite_store.sql.domain import SqlDomain
from composite_store.sql.engine import IN_LIST_LIMIT, in_list, numbered
from composite_store.sql.types import dumps
from composite_store.types import DateRange

__all__ = ["SqlObservability"]

SPANS, OTEL = table("ai_spans"), table("traces")
SPAN_KEY = ["traceId", "spanId"]
#: Record attribute -> stored column name.
_COLUMN = {name: info.serialization_alias or name for name, info in Span.model_fields.items()}
_TIMESTAMPS = frozenset(SPANS.columns_of(ColumnType.TIMESTAMP))


#: Rows per multi-row INSERT.
def _dated(column: Any, rng: DateRange | NanoRange) -> list[Any]:
    conditions = []
    if rng.start is not None:
        conditions.append(column > rng.start if rng.start_exclusive else column >= rng.start)
    if rng.end is not None:
        conditions.append(column < rng.end if rng.end_exclusive else column <= rng.end)
    return conditions


class SqlObservability(SqlDomain, ObservabilityDomain):
    """AI spans and OpenTelemetry spans on a relational backend."""

    # -- helpers ---------------------------------------------------------------------------------

    def _select_spans(self, *, light: bool = False) -> sa.Select[Any]:
        tbl = self.tables["ai_spans"]
        return sa.select(
            *(
                self.db.dialect.read_column(tbl, col)
                for col in SPANS.columns
                if not (light and col.name in LIGHT_OMITTED)
            )
        )

    def _span_where(self, trace_id: str, span_id: str) -> sa.ColumnElement[bool]:
        tbl = self.tables["ai_spans"]
        return sa.and_(tbl.c.traceId == trace_id, tbl.c.spanId == span_id)

    def _set_values(self, change: SpanChange, now: datetime) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for attr, value in change.values.items():
            name = _COLUMN[attr]
            if name in _TIMESTAMPS:
                values.update(self.db.timestamp_values(SPANS, name, value))
            else:
                values[name] = value
        values.update(self.db.timestamp_values(SPANS, "updatedAt", now))
        return values

    def _trace_where(self, f: TraceFilter) -> list[Any]:
        tbl = self.tables["ai_spans"]
        dialect = self.db.dialect
        where: list[Any] = [tbl.c.parentSpanId.is_(None)]
        where.extend(tbl.c[name] == value for name, value in f.columns().items())
        if f.started_at is not None:
            where.extend(_dated(tbl.c.startedAt, f.started_at))
        if f.ended_at is not None:
            # A running trace has no end, so it matches no end range (not even an open one).
            where.append(tbl.c.endedAt.is_not(None))
            where.extend(_dated(tbl.c.endedAt, f.ended_at))
        if f.status == "error":
            where.append(tbl.c.error.is_not(None))
        elif f.status == "running":
            where.extend((tbl.c.error.is_(None), tbl.c.endedAt.is_(None)))
        elif f.status == "success":
            where.extend((tbl.c.error.is_(None), tbl.c.endedAt.is_not(None)))
        if f.has_child_error is not None:
            child = tbl.alias("child")
            failed = sa.exists().where(child.c.traceId == tbl.c.traceId, child.c.error.is_not(None))
            where.append(failed if f.has_child_error else ~failed)
        for tag in f.tags or ():
            where.append(dialect.json_array_contains(tbl.c.tags, tag))
        for column, pairs in (
            ("metadata", f.metadata),
            ("attributes", f.attributes),
            ("scope", f.scope),
        ):
            for key, value in (pairs or {}).items():
                where.append(
                    dialect.json_equals(tbl.c[column], key, sa.literal(dumps(value), sa.Text))
                )
        return where

    # -- writes ----------------------------------------------------------------------------------

    async def _save_spans(self, spans: Sequence[Span]) -> None:
        # The columns read off the records (record_values): model_dump would copy every
        # span's attributes, input and output once more, only to encode them.
        rows = [self.db.record_values(SPANS, s) for s in spans]
        await self.save_rows("ai_spans", rows, SPAN_KEY)

    async def _update_spans(self, changes: Sequence[SpanChange], now: datetime) -> None:
        tbl = self.tables["ai_spans"]
        wanted = sa.or_(*(self._span_where(c.trace_id, c.span_id) for c in changes))
        existing_stmt = sa.select(tbl.c.traceId, tbl.c.spanId).where(wanted)
        updates = [
            tbl.update()
            .where(self._span_where(c.trace_id, c.span_id))
            .values(self._set_values(c, now))
            for c in changes
        ]

        def update(conn: Connection) -> None:
            existing = {(r[0], r[1]) for r in conn.execute(existing_stmt)}
            missing = [
                (c.trace_id, c.span_id) for c in changes if (c.trace_id, c.span_id) not in existing
            ]
            if missing:
                raise NotFoundError(f"spans not found (trace_id, span_id): {missing}")
            for stmt in updates:
                conn.execute(stmt)

        await self.db.run(update, write=True)

    async def _delete_traces(self, trace_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(trace_ids))

        def build(n: int) -> Executable:
            tbl = self.tables["ai_spans"]
            return tbl.delete().where(in_list(tbl.c.traceId, "v", n))

        def delete(conn: Connection) -> None:
            for start in range(0, len(ids), IN_LIST_LIMIT):
                chunk = ids[start : start + IN_LIST_LIMIT]
                self.prepared(build, len(chunk)).execute(conn, numbered("v", chunk))

        await self.db.run(delete, write=True)

    async def _save_otel_spans(self, spans: Sequence[OtelSpan]) -> None:
        rows = [self.db.values(OTEL, s.stored()) for s in spans]
        stmts = self.upsert("traces", rows, ["id"])

        def save(conn: Connection) -> None:
            for stmt, values in stmts:
                stmt.execute(conn, values)

        await self.db.run(save, write=True)

    # -- reads -----------------------------------------------------------------------------------

    async def _get_span(self, trace_id: str, span_id: str) -> Span | None:
        stmt = self._select_spans().where(self._span_where(trace_id, span_id))

        def read(conn: Connection) -> Span | None:
            row = conn.execute(stmt).mappings().first()
            return from_row(Span, row) if row is not None else None

        return await self.db.run(read, single=True, short=True)

    async def _get_root_span(self, trace_id: str) -> Span | None:
        tbl = self.tables["ai_spans"]
        stmt = (
            self._select_spans()
            .where(tbl.c.traceId == trace_id, tbl.c.parentSpanId.is_(None))
            .order_by(tbl.c.startedAt.asc(), tbl.c.spanId.asc())
            .limit(1)
        )

        def read(conn: Connection) -> Span | None:
            row = conn.execute(stmt).mappings().first()
            return from_row(Span, row) if row is not None else None

        return await self.db.run(read, single=True, short=True)

    async def _trace_spans(self, trace_id: str, *, light: bool) -> list[Span]:
        def build(light: bool) -> Executable:
            tbl = self.tables["ai_spans"]
            return (
                self._select_spans(light=light)
                .where(tbl.c.traceId == sa.bindparam("trace_id"))
                .order_by(tbl.c.startedAt.asc(), tbl.c.spanId.asc())
            )

        stmt = self.prepared(build, light)
        values = {"trace_id": trace_id}
        rows = await self.db.fetch(stmt, values)
        if light:  # some of Span's columns are not selected: the general path fills them
            return [from_row(Span, r) for r in stmt.mappings(rows)]
        # The driver's rows straight into the records (no row dict each): half the CPU of a
        # trace read's 10 spans of 42 columns.
        read = stmt.reader(Span)
        return [read(r) for r in rows]

    async def _list_traces(self, query: TraceQuery) -> tuple[list[Span], int | None]:
        tbl = self.tables["ai_spans"]
        where = self._trace_where(query.filter)
        order = tbl.c[query.order_field]
        keys: list[Any] = []
        if query.order_field == "endedAt":
            # A running trace (NULL endedAt) counts as the latest: first in DESC, last in ASC.
            # Portable: not every backend has NULLS FIRST/LAST.
            keys.append(sa.case((order.is_(None), 1), else_=0))
        keys.extend((order, tbl.c.traceId, tbl.c.spanId))
        stmt = (
            self._select_spans()
            .where(*where)
            .order_by(*(k.desc() if query.descending else k.asc() for k in keys))
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        return await self.read_page(Span, stmt, count if query.count else None)

    async def _list_otel_spans(self, query: OtelSpanQuery) -> tuple[list[OtelSpan], int | None]:
        tbl = self.tables["traces"]
        where: list[Any] = [tbl.c[name] == value for name, value in query.filter.columns().items()]
        if query.start_time is not None:
            where.extend(_dated(tbl.c.startTime, query.start_time))
        for key, value in (query.filter.attributes or {}).items():
            where.append(
                self.db.dialect.json_equals(
                    tbl.c.attributes, key, sa.literal(dumps(value), sa.Text)
                )
            )
        stmt = (
            sa.select(*self.db.readable(tbl, OTEL))
            .where(*where)
            .order_by(tbl.c.startTime.desc(), tbl.c.id.desc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        return await self.read_page(OtelSpan, stmt, count if query.count else None)
