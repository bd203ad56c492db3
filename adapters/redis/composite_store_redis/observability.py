"""The observability domain on Redis: AI spans grouped by trace, OpenTelemetry spans by id.

AI spans: a span is ``mastra_ai_spans:{<trace id>}:<span id>``; its trace's sets (all spans
by startedAt, root spans, spans with an error) and the trace's revision counter
(``trace_rev``, bumped by every write, guarding concurrent writers) share the trace's slot.
Traces are listed from sets of root spans, one per filter facet and value (a text column, the
entity pair, the status, has-child-error, one tag), each in two orders: startedAt, and endedAt
with running traces at ``+inf``. Filters no single set serves (two facets, several tags) are
served by the intersection of their one-facet sets (``composite_store_redis.intersect``); a
date range on the other order field and JSON key/value filters raise
``UnsupportedOperationError`` instead of scanning.

OpenTelemetry spans: ``mastra_traces:{<id>}``, listed from lexicographic sets (members are the
20-digit start time in nanoseconds, then the id) for every combination of the equality filters,
so nanosecond order and bounds are exact.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from composite_store.domains.base import Capabilities
from composite_store.domains.observability import (
    LIGHT_OMITTED,
    NanoRange,
    ObservabilityDomain,
    OtelSpanQuery,
    SpanChange,
    TraceQuery,
)
from composite_store.domains.observability_filters import TEXT_FILTER_COLUMNS
from composite_store.errors import NotFoundError, UnsupportedOperationError
from composite_store.records.base import Record
from composite_store.records.observability import OtelSpan, Span
from composite_store.records.trusted import stored_view
from composite_store.schema import table
from composite_store.types import DateRange
from composite_store_redis import transfer
from composite_store_redis.batch import Batch
from composite_store_redis.codec import decode_record, encode_record, from_stored, millis
from composite_store_redis.domain import RedisDomain
from composite_store_redis.intersect import intersect_page
from composite_store_redis.keys import GLOBAL_TAG, SortedIndex, pack, sorted_index, unpack

__all__ = ["RedisObservability"]

_SPANS, _OTEL = table("ai_spans"), table("traces")
_ROOT, _ERROR, _ENDED = "_root", "_error", "_ended"
_STATUS, _HCE, _TAG, _DONE = "_status", "_hasChildError", "_tag", "_hasEnded"
_DERIVED = (_ROOT, _ERROR, _ENDED, _STATUS, _HCE, _TAG, _DONE)

BY_TRACE = sorted_index("ai_spans", ["traceId"], "startedAt", ["spanId"])
ROOTS = sorted_index("ai_spans", ["traceId", _ROOT], "startedAt", ["spanId"], derived=_DERIVED)
ERRORS = sorted_index("ai_spans", ["traceId", _ERROR], "startedAt", ["spanId"], derived=_DERIVED)
#: Every span (the documented ``started_at_idx``), so that export lists them all, roots or
#: not (schema version 1).
ALL_SPANS = sorted_index("ai_spans", [], "startedAt", ["traceId", "spanId"])
TRACE_INDEXES = (BY_TRACE, ROOTS, ERRORS, ALL_SPANS)
TRACE_REV = "trace_rev"

#: Every text filter of list_traces, traceId last (the order of the catalog's index list).
_TEXT_FACETS = (*(c for c in TEXT_FILTER_COLUMNS if c != "traceId"), "traceId")
#: Filter facets served together, beyond one facet alone.
_PAIRS = (("entityType", "entityId"), ("entityType", "entityName"))
_FACET_SETS: tuple[tuple[str, ...], ...] = (
    (),
    *((f,) for f in (*_TEXT_FACETS, _STATUS, _HCE, _TAG, _DONE)),
    *_PAIRS,
)
#: (facets, order field) -> the set of root spans serving exactly that listing.
TRACE_LISTINGS: dict[tuple[frozenset[str], str], SortedIndex] = {
    (frozenset(facets), order): sorted_index(
        "ai_spans",
        facets,
        order if order == "startedAt" else _ENDED,
        ["traceId", "spanId"],
        derived=_DERIVED,
        kind="roots",
    )
    for facets in _FACET_SETS
    for order in ("startedAt", "endedAt")
}
LISTING_INDEXES = tuple(TRACE_LISTINGS.values())

_OTEL_FILTERS = ("traceId", "parentSpanId", "name", "scope", "kind")
#: The set of equality filters given -> the lexicographic set serving them.
OTEL_LISTINGS: dict[frozenset[str], SortedIndex] = {
    frozenset(combo): sorted_index("traces", combo, "startTime", ["id"], lex=True)
    for n in range(len(_OTEL_FILTERS) + 1)
    for combo in itertools.combinations(_OTEL_FILTERS, n)
}
OTEL_INDEXES = tuple(OTEL_LISTINGS.values())


def _span(fields: dict[str, str]) -> Span:
    return from_stored(Span, decode_record(_SPANS, fields))


def _trace_facets(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A span's stored values plus the derived ones its trace-local sets use."""
    return {
        **stored,
        _ROOT: "1" if stored.get("parentSpanId") is None else None,
        _ERROR: "1" if stored.get("error") is not None else None,
    }


def _root_facets(stored: Mapping[str, Any], has_child_error: bool) -> dict[str, Any]:
    """A root span's stored values plus the derived facets the listing sets use."""
    error, ended = stored.get("error"), stored.get("endedAt")
    return {
        **stored,
        _ENDED: "+inf" if ended is None else ended,
        _STATUS: "error" if error is not None else ("running" if ended is None else "success"),
        _HCE: "true" if has_child_error else "false",
        _DONE: "false" if ended is None else "true",
        _TAG: list(dict.fromkeys(stored.get("tags") or [])) or None,
    }


def _lex_bounds(rng: NanoRange | None) -> tuple[str, str]:
    """ZRANGE BYLEX bounds over members ``<20-digit nanos>\\0<id>`` for a nanosecond range."""
    if rng is None:
        return "-", "+"
    low = (
        "-"
        if rng.start is None
        else (f"({rng.start:020d}\x01" if rng.start_exclusive else f"[{rng.start:020d}")
    )
    high = (
        "+"
        if rng.end is None
        else (f"({rng.end:020d}" if rng.end_exclusive else f"({rng.end:020d}\x01")
    )
    return low, high


def _range(rng: DateRange | None, *, ended: bool) -> tuple[str, str]:
    """Score bounds of a date range; on the endedAt order running traces (``+inf``) never
    match, even an open range."""
    low = (
        "-inf"
        if rng is None or rng.start is None
        else (f"{'(' if rng.start_exclusive else ''}{millis(rng.start)}")
    )
    high = (
        "+inf"
        if rng is None or rng.end is None
        else (f"{'(' if rng.end_exclusive else ''}{millis(rng.end)}")
    )
    if ended and rng is not None and high == "+inf":
        high = "(+inf"
    return low, high


_NO_ATTRIBUTE_INDEX = (
    "span attributes and metadata have no sorted-set index; filtering on them would scan "
    "every span (docs/redis.md)"
)

class RedisObservability(RedisDomain, ObservabilityDomain):
    """AI spans and OpenTelemetry spans on Redis (standalone or cluster)."""

    tables = ("ai_spans", "traces")
    indexes = (*TRACE_INDEXES, *LISTING_INDEXES, *OTEL_INDEXES)
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True,
        concurrent_updates=True,
        transactions=True,
        reasons={"span_attribute_filters": _NO_ATTRIBUTE_INDEX},
    )
    # A trace's spans change in one guarded script; the listing sets follow in their slots.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(
        concurrent_updates=True,
        reasons={
            "atomic_batches": (
                "on Redis Cluster a batch over several traces spans hash slots: each trace's "
                "part is atomic, the whole is not"
            ),
            "span_attribute_filters": _NO_ATTRIBUTE_INDEX,
        },
    )

    # -- keys --------------------------------------------------------------------------------------

    def _span_key(self, trace_id: str, span_id: str) -> str:
        return self.keys.record("ai_spans", trace_id, pack(span_id))

    def _rev_key(self, trace_id: str) -> str:
        return self.keys.pointer("ai_spans", TRACE_REV, trace_id)

    def _otel_key(self, span_id: str) -> str:
        return self.keys.record("traces", span_id)

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        if table == "ai_spans":
            return await self._raw(table, self._span_key(key["traceId"], key["spanId"]))
        return await self._raw(table, self._otel_key(key["id"]))

    # -- writing AI spans --------------------------------------------------------------------------

    async def _save_spans(self, spans: Sequence[Span]) -> None:
        # docstring inherited
        await self._write_spans([(s.trace_id, s.span_id) for s in spans], lambda _old: spans)

    async def _update_spans(self, changes: Sequence[SpanChange], now: datetime) -> None:
        # docstring inherited
        def updated(old: Mapping[tuple[str, str], dict[str, str]]) -> list[Span]:
            missing = [
                f"{c.trace_id}/{c.span_id}" for c in changes if not old[(c.trace_id, c.span_id)]
            ]
            if missing:
                raise NotFoundError(f"spans not found: {missing}")
            return [
                _span(old[(c.trace_id, c.span_id)]).model_copy(
                    update={**c.values, "updated_at": now}
                )
                for c in changes
            ]

        await self._write_spans([(c.trace_id, c.span_id) for c in changes], updated)

    async def _write_spans(
        self,
        keys: Sequence[tuple[str, str]],
        build: Callable[[Mapping[tuple[str, str], dict[str, str]]], Sequence[Span]],
    ) -> None:
        """Write the spans ``build(old records)`` returns, keeping every set in step; guarded by
        the revision of each touched trace."""
        traces = list(dict.fromkeys(t for t, _ in keys))

        async def attempt() -> bool | None:
            reads: list[list[str]] = [["HGETALL", self._span_key(t, s)] for t, s in keys]
            for trace_id in traces:
                reads.append(["GET", self._rev_key(trace_id)])
                reads.append(["ZRANGE", self.keys.index(ERRORS, [trace_id, "1"]), "0", "-1"])
                reads.append(["ZRANGE", self.keys.index(ROOTS, [trace_id, "1"]), "0", "-1"])
            found = await self.conn.read(reads)
            old = dict(zip(keys, found[: len(keys)], strict=True))
            spans = build(old)
            state = {
                t: (
                    found[len(keys) + 3 * i],
                    found[len(keys) + 3 * i + 1],
                    found[len(keys) + 3 * i + 2],
                )
                for i, t in enumerate(traces)
            }
            batch = self.batch()
            for trace_id, (rev, errors, roots) in state.items():
                mine = {s.span_id: stored_view(s) for s in spans if s.trace_id == trace_id}
                before = {
                    sid: decode_record(_SPANS, old[(trace_id, sid)])
                    for sid in mine
                    if old[(trace_id, sid)]
                }
                errors_after = (set(unpack_all(errors)) - set(mine)) | {
                    sid for sid, st in mine.items() if st.get("error") is not None
                }
                hce_before, hce_after = bool(errors), bool(errors_after)
                # Roots this write leaves alone still move when has-child-error flips.
                others = [unpack(r)[0] for r in roots if unpack(r)[0] not in mine]
                other_roots = []
                if others and hce_before != hce_after:
                    raws = await self.conn.read(
                        [["HGETALL", self._span_key(trace_id, sid)] for sid in others]
                    )
                    other_roots = [decode_record(_SPANS, r) for r in raws if r]
                batch.expect_value(self._rev_key(trace_id), rev)
                batch.command("INCR", self._rev_key(trace_id))
                batch.expire(self._rev_key(trace_id))
                for sid, stored in mine.items():
                    previous = before.get(sid)
                    batch.put_record(self._span_key(trace_id, sid), encode_record(_SPANS, stored))
                    self.reindex(
                        batch,
                        TRACE_INDEXES,
                        _trace_facets(previous) if previous else None,
                        _trace_facets(stored),
                    )
                    self._relist(batch, previous, hce_before, stored, hce_after)
                for stored in other_roots:
                    self._relist(batch, stored, hce_before, stored, hce_after)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, "write spans")

    def _relist(
        self,
        batch: Batch,
        old: Mapping[str, Any] | None,
        old_hce: bool,
        new: Mapping[str, Any] | None,
        new_hce: bool,
    ) -> None:
        """Move a span's entries in the listing sets (roots only are listed)."""
        before = _root_facets(old, old_hce) if old and old.get("parentSpanId") is None else None
        after = _root_facets(new, new_hce) if new and new.get("parentSpanId") is None else None
        self.reindex(batch, LISTING_INDEXES, before, after)

    async def _delete_traces(self, trace_ids: Sequence[str]) -> None:
        # docstring inherited
        for trace_id in trace_ids:
            await self._delete_trace(trace_id)

    async def _delete_trace(self, trace_id: str) -> None:
        rev_key = self._rev_key(trace_id)

        async def attempt() -> bool | None:
            [rev] = await self.conn.read([["GET", rev_key]])
            page = await self.conn.page(
                *self.index_set(BY_TRACE, [trace_id]),
                records=self.keys.record_prefix("ai_spans", trace_id),
            )
            assert page.records is not None
            spans = [decode_record(_SPANS, r) for r in page.records if r]
            hce = any(s.get("error") is not None for s in spans)
            batch = self.batch()
            batch.expect_value(rev_key, rev)
            batch.delete(rev_key)
            for stored in spans:
                batch.delete(self._span_key(trace_id, stored["spanId"]))
                self.reindex(batch, TRACE_INDEXES, _trace_facets(stored), None)
                self._relist(batch, stored, hce, None, hce)
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"batch_delete_traces({trace_id!r})")

    # -- reading AI spans --------------------------------------------------------------------------

    async def _get_span(self, trace_id: str, span_id: str) -> Span | None:
        # docstring inherited
        [found] = await self.conn.read([["HGETALL", self._span_key(trace_id, span_id)]])
        return _span(found) if found else None

    async def _get_root_span(self, trace_id: str) -> Span | None:
        # docstring inherited
        page = await self.conn.page(
            *self.index_set(ROOTS, [trace_id, "1"]),
            count=1,
            records=self.keys.record_prefix("ai_spans", trace_id),
        )
        assert page.records is not None
        return next((_span(r) for r in page.records if r), None)

    async def _trace_spans(self, trace_id: str, *, light: bool) -> list[Span]:
        # docstring inherited
        fields = [c for c in _SPANS.column_names if c not in LIGHT_OMITTED] if light else []
        page = await self.conn.page(
            *self.index_set(BY_TRACE, [trace_id]),
            records=self.keys.record_prefix("ai_spans", trace_id),
            fields=fields,
        )
        assert page.records is not None
        return [_span(r) for r in page.records if r]

    async def _list_traces(self, query: TraceQuery) -> tuple[list[Span], int | None]:
        # docstring inherited
        f = query.filter
        facets: dict[str, str] = dict(f.columns())
        if f.status is not None:
            facets[_STATUS] = f.status
        if f.has_child_error is not None:
            facets[_HCE] = "true" if f.has_child_error else "false"
        tags = list(dict.fromkeys(f.tags or []))
        if len(tags) == 1:
            facets[_TAG] = tags[0]
        ended = query.order_field == "endedAt"
        other = f.started_at if ended else f.ended_at
        if not ended and other is not None and other.start is None and other.end is None:
            # An open endedAt range only says "has ended": a facet of its own.
            facets[_DONE], other = "true", None
        if other is not None:
            raise UnsupportedOperationError(
                f"redis bounds traces by the field they are ordered by; order by "
                f"{'startedAt' if ended else 'endedAt'} to filter on it"
            )
        low, high = _range(f.ended_at if ended else f.started_at, ended=ended)
        w = query.window
        bounds: dict[str, Any] = {
            "low": low,
            "high": high,
            "reverse": query.descending,
            "offset": w.offset,
            "count": w.fetch,
            "total": query.count,
        }
        index = TRACE_LISTINGS.get((frozenset(facets), query.order_field))
        if index is not None and len(tags) <= 1:
            page = await self.conn.page(
                *self.index_set(index, [facets[c] for c in index.partition]), **bounds
            )
        else:
            # Several facets or tags: the intersection of their one-facet sets.
            wanted_sets = [(name, value) for name, value in facets.items() if name != _TAG]
            wanted_sets += [(_TAG, tag) for tag in tags]
            page = await intersect_page(
                self.conn,
                [
                    self.keys.index(TRACE_LISTINGS[(frozenset([name]), query.order_field)], [v])
                    for name, v in wanted_sets
                ],
                self.keys.scratch("ai_spans", GLOBAL_TAG),
                **bounds,
            )
        pairs = [unpack(m) for m in page.members]
        found = await self.conn.read([["HGETALL", self._span_key(t, s)] for t, s in pairs])
        spans = [_span(raw) for raw in found if raw]
        # An entry a partly applied cluster write left behind no longer matches its set.
        wanted = f.columns()
        spans = [
            s
            for s in spans
            if s.parent_span_id is None
            and all(s.stored().get(k) == v for k, v in wanted.items())
            and (f.status is None or s.status == f.status)
            and all(tag in (s.tags or []) for tag in tags)
        ]
        return spans, page.total

    # -- OpenTelemetry spans -----------------------------------------------------------------------

    async def _save_otel_spans(self, spans: Sequence[OtelSpan]) -> None:
        # docstring inherited
        indexed = [*_OTEL_FILTERS, "startTime", "id"]

        async def attempt() -> bool | None:
            found = await self.conn.read([["HMGET", self._otel_key(s.id), *indexed] for s in spans])
            batch = self.batch()
            for span, old in zip(spans, found, strict=True):
                key = self._otel_key(span.id)
                before = dict(zip(indexed, old, strict=True)) if old[-1] is not None else None
                if before is None:
                    batch.expect_exists(key, False)
                else:
                    for name, value in before.items():
                        batch.expect_field(key, name, value)
                stored = span.stored()
                batch.put_record(key, encode_record(_OTEL, stored))
                self.reindex(
                    batch, OTEL_INDEXES, decode_record(_OTEL, before) if before else None, stored
                )
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, "batch_insert_otel_spans")

    async def _list_otel_spans(self, query: OtelSpanQuery) -> tuple[list[OtelSpan], int | None]:
        # docstring inherited
        wanted = query.filter.columns()
        index = OTEL_LISTINGS[frozenset(wanted)]
        low, high = _lex_bounds(query.start_time)
        w = query.window
        page = await self.conn.page(
            *self.index_set(index, [str(wanted[c]) for c in index.partition]),
            low=low,
            high=high,
            lex=True,
            reverse=True,
            offset=w.offset,
            count=w.fetch,
            total=query.count,
        )
        found = await self.conn.read(
            [["HGETALL", self._otel_key(unpack(m)[1])] for m in page.members]
        )
        spans = [from_stored(OtelSpan, decode_record(_OTEL, raw)) for raw in found if raw]
        return [s for s in spans if all(s.stored().get(k) == v for k, v in wanted.items())], (
            page.total
        )

    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        if table == "ai_spans":
            return await self._export_from(
                ALL_SPANS, cursor, limit, lambda m: self._span_key(*unpack(m)), _span
            )
        return await self._export_from(
            OTEL_LISTINGS[frozenset()], cursor, limit,
            lambda m: self._otel_key(unpack(m)[1]), _otel,
        )

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        if table == "ai_spans":
            return await self._fetch_keys([self._span_key(t, s) for t, s in keys], _span)
        return await self._fetch_keys([self._otel_key(k[0]) for k in keys], _otel)

    async def _import(self, table: str, records: list[Record]) -> None:
        # docstring inherited
        if table == "ai_spans":
            await self._save_spans([r for r in records if isinstance(r, Span)])
        else:
            await self._save_otel_spans([r for r in records if isinstance(r, OtelSpan)])

    async def _count(self, table: str) -> int:
        # docstring inherited
        index = ALL_SPANS if table == "ai_spans" else OTEL_LISTINGS[frozenset()]
        return await transfer.count_index(self, index)


def unpack_all(members: Iterable[str]) -> list[str]:
    """The first packed value of each member."""
    return [unpack(m)[0] for m in members]


def _otel(fields: dict[str, str]) -> OtelSpan:
    return from_stored(OtelSpan, decode_record(_OTEL, fields))
