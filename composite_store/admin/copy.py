"""Copy domains from one store to another, record for record: ``copy_domains``.

The source is read through ``Transferable.export_records`` (every record of every table,
history rows included) and the destination written through ``Transferable.import_records``
(upserts that keep ids, timestamps and SCD-2 versions exactly), one batch at a time, the next
batch read while one is written when either store waits on a server (between two embedded
files the reads and writes are all this process's work, and a read ahead only competes with
the write); backends write a batch through their bulk path where they have one (PostgreSQL:
``COPY``). Nothing is deleted and the source is never written.

Between two relational stores (``StoredRows`` domains: their tables are the documented
schema), a table both move as stored rows (messages) whose destination is empty when its copy
starts goes as rows instead of records: the same values, converted and checked by the
destination's bind conversions as the records' import converts and checks them, without a
record built per row.

Reruns are idempotent and resume an interrupted copy. A source record is *unchanged* when the
destination holds a record with the same key whose stored form equals it: every documented
column, compared as values (JSON by value, timestamps at millisecond precision). Unchanged
records are not written, so a second run writes nothing and changes nothing (a destination
table that is empty when its copy starts is not looked up: all its records are new). Mastra's
``evals`` table has no key: there a source record counts as present when the destination holds
an equal record not already matched by another (a multiset comparison).

Every table ends with a count check: the source's count and the destination's, reported side
by side (they differ when the destination held other records before).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from composite_store.domains.hooks import (
    ExportPage,
    StoredRows,
    Transferable,
    outstanding,
    recorded_version,
    require,
)
from composite_store.errors import CompositeStoreError, ValidationError
from composite_store.records.base import Record
from composite_store.records.tables import key_of
from composite_store.schema import DOMAINS, tables_for
from composite_store.schema import table as spec_of
from composite_store.schema.migrations import pending
from composite_store.store import Store

__all__ = ["CopyReport", "Progress", "TableCopy", "copy_domains", "shared_domains"]

#: Records per export page and per import batch: large enough that the per-batch round trips
#: (the read, the lookup of existing records, the write) are a small part of the copy.
DEFAULT_BATCH = 5000


@dataclass(frozen=True)
class Progress:
    """Where the copy of one table stands: ``read`` of ``total`` source records read so far,
    ``written`` of them new or changed at the destination."""

    domain: str
    table: str
    read: int
    total: int
    written: int
    done: bool = False


@dataclass
class TableCopy:
    """The outcome of copying one table."""

    domain: str
    table: str
    #: Source records at the start (``count_records``) and read during the copy.
    source_count: int
    read: int = 0
    written: int = 0
    unchanged: int = 0
    #: Destination records after the copy.
    destination_count: int = 0
    seconds: float = 0.0

    @property
    def counts_match(self) -> bool:
        """The final count check: as many records at the destination as at the source."""
        return self.source_count == self.destination_count


@dataclass
class CopyReport:
    """The outcome of ``copy_domains``: one entry per table, in copy order."""

    tables: list[TableCopy] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every table passed the count check."""
        return all(t.counts_match for t in self.tables)

    @property
    def written(self) -> int:
        return sum(t.written for t in self.tables)


def shared_domains(src: Store, dst: Store) -> list[str]:
    """The domains both stores offer, in the documented order."""
    return [d for d in DOMAINS if src.get(d) is not None and dst.get(d) is not None]


async def copy_domains(
    src: Store,
    dst: Store,
    *,
    domains: Sequence[str] | None = None,
    batch: int = DEFAULT_BATCH,
    on_progress: Callable[[Progress], None] | None = None,
) -> CopyReport:
    """Copy every record of ``domains`` (default: every domain both stores offer) from ``src``
    to ``dst`` and return what happened, table by table.

    ``dst``'s domains are initialized (tables created, versions recorded); ``src``'s are only
    attached: the source is never written, not even a missing table. A source domain whose
    listing indexes are not built yet (a Redis store an older release wrote) is refused with
    its fix, ``composite-store migrate``. ``on_progress`` is called after every batch and once
    per finished table. Raises ``ValidationError`` for a domain one of the stores does not
    offer, ``UnsupportedOperationError`` for one whose backend cannot export or import records
    (its domain is not ``Transferable``).
    """
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValidationError(f"batch must be an integer >= 1, got {batch!r}")
    chosen = _chosen(src, dst, domains)
    started = time.monotonic()
    report = CopyReport()
    pairs: list[tuple[Transferable, Transferable]] = []
    for name in chosen:
        found, into = src.get(name), dst.get(name)
        assert found is not None and into is not None
        source = require(found, Transferable, f"export the {name} domain")
        target = require(into, Transferable, f"import the {name} domain")
        await source.attach()
        await _check_source(source)
        await target.init()
        pairs.append((source, target))
    for source, target in pairs:
        for spec in tables_for(source.domain):
            report.tables.append(
                await _copy_table(source, target, spec.base_name, batch, on_progress)
            )
    report.seconds = time.monotonic() - started
    return report


def _chosen(src: Store, dst: Store, domains: Sequence[str] | None) -> list[str]:
    if domains is None:
        return shared_domains(src, dst)
    if isinstance(domains, str):
        raise ValidationError("domains must be a list of domain names, not a string")
    chosen = list(dict.fromkeys(domains))
    for name in chosen:
        if name not in DOMAINS:
            raise ValidationError(f"unknown domain {name!r}; known: {', '.join(DOMAINS)}")
        for side, store in (("source", src), ("destination", dst)):
            if store.get(name) is None:
                raise ValidationError(
                    f"the {side} ({store.backend}) does not offer the {name} domain; domains "
                    f"both stores offer: {', '.join(shared_domains(src, dst)) or 'none'}"
                )
    return chosen


async def _check_source(source: Transferable) -> None:
    """Refuse a source whose listings would miss records (indexes not yet built)."""
    version = await recorded_version(source)
    if version is None:
        return
    todo = await outstanding(source, pending(source.domain, version))
    if any(statement.export_incomplete for statement in todo):
        raise CompositeStoreError(
            f"cannot copy the {source.domain} domain from {source.describe()}: it is at schema "
            f"version {version} and cannot list every record until it is migrated; run "
            "`composite-store migrate SRC_URL` on the source first"
        )


async def _copy_table(
    source: Transferable,
    target: Transferable,
    table: str,
    batch: int,
    on_progress: Callable[[Progress], None] | None,
) -> TableCopy:
    started = time.monotonic()
    result = TableCopy(source.domain, table, await source.count_records(table=table))
    keyless = not spec_of(table).key_columns
    # Keyless table: the destination's records, as a multiset, matched against the source's.
    present = await _multiset(target, table, batch) if keyless else None
    # A destination table that starts empty holds nothing to compare with: every record is
    # new (the import still upserts, should another writer add one of its keys meanwhile).
    fresh = not keyless and await target.count_records(table=table) == 0
    if fresh and _by_rows(source, target, table):
        assert isinstance(source, StoredRows) and isinstance(target, StoredRows)
        await _copy_rows(source, target, table, batch, result, on_progress)
    else:
        await _copy_records(source, target, table, batch, result, on_progress, present, fresh)
    result.destination_count = await target.count_records(table=table)
    result.seconds = time.monotonic() - started
    if on_progress is not None:
        on_progress(_progress(result, done=True))
    return result


def _by_rows(source: Transferable, target: Transferable, table: str) -> bool:
    """Whether ``table`` goes as stored rows: both domains move it so."""
    return (
        isinstance(source, StoredRows)
        and isinstance(target, StoredRows)
        and table in source.row_tables
        and table in target.row_tables
    )


async def _copy_records(
    source: Transferable,
    target: Transferable,
    table: str,
    batch: int,
    result: TableCopy,
    on_progress: Callable[[Progress], None] | None,
    present: collections.Counter[str] | None,
    fresh: bool,
) -> None:
    def read(cursor: str | None) -> Awaitable[ExportPage]:
        return source.export_records(table=table, cursor=cursor, limit=batch)

    pages = _pages(read, lambda page: page.cursor, _read_ahead(source, target))
    async with contextlib.aclosing(pages):
        async for page in pages:
            if present is not None:
                changed = _unmatched(table, page.records, present)
            elif fresh:
                changed = page.records
            else:
                changed = await _changed(target, table, page.records)
            if changed:
                await target.import_records(table=table, records=changed)
            result.read += len(page.records)
            result.written += len(changed)
            result.unchanged += len(page.records) - len(changed)
            if page.cursor is not None and on_progress is not None:
                on_progress(_progress(result))


async def _copy_rows(
    source: StoredRows,
    target: StoredRows,
    table: str,
    batch: int,
    result: TableCopy,
    on_progress: Callable[[Progress], None] | None,
) -> None:
    """``_copy_records`` into a fresh table, as stored rows: every row read is written."""

    # Timestamps as text only into a store that keeps that text. Into another, the
    # destination would parse the text itself, on the write that waits for its server,
    # where the source's parse overlaps that wait (PostgreSQL's copy measured 0.66-0.68x of
    # raw so, against 0.75-0.82x).
    text = target.timestamp_text

    def read(cursor: str | None) -> Awaitable[tuple[list[tuple[Any, ...]], str | None]]:
        return source.export_stored_rows(
            table=table, cursor=cursor, limit=batch, timestamp_text=text
        )

    pages = _pages(read, lambda page: page[1], _read_ahead(source, target))
    async with contextlib.aclosing(pages):
        async for rows, cursor in pages:
            if rows:
                await target.import_stored_rows(table=table, rows=rows)
            result.read += len(rows)
            result.written += len(rows)
            if cursor is not None and on_progress is not None:
                on_progress(_progress(result))


def _read_ahead(source: Transferable, target: Transferable) -> bool:
    """Whether the next page is read while one is written: when either store waits on a
    server, the read and the write overlap instead of taking turns. Between two embedded
    databases both are this process's work on worker threads that share the interpreter's
    lock, which sqlite3 gives up and takes back at every row it steps. Without the read
    ahead a SQLite-to-SQLite copy of 100,000 messages ran 0.97x, 1.27x and 1.07x as fast as
    with it in three interleaved runs (docs/benchmarks.md, 2026-12-06)."""
    return not (source.embedded and target.embedded)


PageT = TypeVar("PageT")


async def _pages(
    read: Callable[[str | None], Awaitable[PageT]],
    cursor_of: Callable[[PageT], str | None],
    ahead: bool,
) -> AsyncGenerator[PageT, None]:
    """Every page of a table in order: ``read(None)``, then ``read`` of each page's cursor
    (``cursor_of``) until one is None. With ``ahead`` the next page is being read while the
    caller works on the one yielded; a read ahead nobody takes (the caller failed) is
    cancelled, never left to fail unobserved."""
    following = asyncio.ensure_future(read(None))
    try:
        while True:
            page = await following
            cursor = cursor_of(page)
            if cursor is not None and ahead:
                following = asyncio.ensure_future(read(cursor))
            yield page
            if cursor is None:
                return
            if not ahead:
                following = asyncio.ensure_future(read(cursor))
    finally:
        if not following.done():
            following.cancel()
            with contextlib.suppress(BaseException):
                await following


def _progress(result: TableCopy, *, done: bool = False) -> Progress:
    return Progress(
        result.domain,
        result.table,
        result.read,
        max(result.source_count, result.read),
        result.written,
        done,
    )


def _same(a: Record, b: Record) -> bool:
    """Whether two records of one table hold the same stored values. A NaN is not equal to
    itself, so records that differ by ``==`` are compared once more by their JSON text, in
    which a NaN is the same ``NaN`` on both sides (a copy into MongoDB, which keeps one,
    would otherwise write the record again on every rerun)."""
    return a.stored() == b.stored() or _fingerprint(a) == _fingerprint(b)


async def _changed(target: Transferable, table: str, records: list[Record]) -> list[Record]:
    """The records the destination lacks or holds with other values."""
    if not records:
        return []
    keys = [key_of(table, r) for r in records]
    existing = {key_of(table, r): r for r in await target.fetch_records(table=table, keys=keys)}
    return [
        r for r, k in zip(records, keys, strict=True)
        if k not in existing or not _same(existing[k], r)
    ]


def _fingerprint(record: Record) -> str:
    return json.dumps(record.stored(), sort_keys=True, default=str)


async def _multiset(target: Transferable, table: str, batch: int) -> collections.Counter[str]:
    present: collections.Counter[str] = collections.Counter()
    cursor: str | None = None
    while True:
        page = await target.export_records(table=table, cursor=cursor, limit=batch)
        present.update(_fingerprint(r) for r in page.records)
        cursor = page.cursor
        if cursor is None:
            return present


def _unmatched(
    table: str, records: list[Record], present: collections.Counter[str]
) -> list[Record]:
    """Source records without an equal destination record left to match them."""
    missing: list[Record] = []
    for record in records:
        fingerprint = _fingerprint(record)
        if present[fingerprint] > 0:
            present[fingerprint] -= 1
        else:
            missing.append(record)
    return missing
