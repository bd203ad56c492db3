"""The raw contender on the relational engines, written once: the minimal correct work a skilled
engineer would write by hand on a driver connection (DESIGN.md section 8), with the engine's own
spelling supplied by a subclass.

- A read is one statement in autocommit: no BEGIN/COMMIT around a single SELECT, no locking
  read where no write follows. Reads that must agree (a thread page and its count) share one
  transaction; an include window is one statement (the target, then each side with the
  target's thread and createdAt as scalar subqueries), as the library reads it, and on
  PostgreSQL the newest page is in that statement too (``window_with_page``).
- A write takes the fewest round trips that keep the documented guarantees: one upsert in
  autocommit for a thread, a resource's working memory, a snapshot or a span batch; a message
  batch is atomic (all or nothing), upserts by id, refuses unknown threads, and bumps updatedAt
  of every touched thread, including the one a moved message left (the subclass says how:
  one statement on PostgreSQL, ``UPDATE .. RETURNING`` plus the upsert on SQLite).
- Same columns (PostgreSQL's ``"cZ"`` shadow timestamps included), same encodings, and what is
  read is decoded (JSON parsed, timestamps turned into aware datetimes), as the library must to
  build records. What it leaves out is the library's own machinery: validation, records, the
  statement cache, routing. SQL text is built once per statement shape.

An operation is an ``async def op(tx)`` against :class:`Tx`, run by :meth:`_statement`
(autocommit) or :meth:`_transaction` (one transaction). Synchronous drivers (sqlite3, libsql)
run it with :func:`drive` on the caller's thread, since its awaits never suspend there.
"""

from __future__ import annotations

import asyncio
import json
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from bench.targets.base import Msg, SpanRow, Target
from composite_store.schema import Column, ColumnType, TableSpec, shadow_name, table

T = TypeVar("T")
C = TypeVar("C")

THREADS, MESSAGES, RESOURCES = table("threads"), table("messages"), table("resources")
SNAPSHOTS, SPANS = table("workflow_snapshot"), table("ai_spans")
#: Tables the workloads write (``reset`` empties them).
WORKLOAD_TABLES = (THREADS, MESSAGES, RESOURCES, SNAPSHOTS, SPANS)
#: Ids per ``IN (...)`` and rows per multi-row upsert, as the library chunks them.
CHUNK = 100


def dumps(value: Any) -> str:
    """Compact JSON, as the library writes it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def now() -> datetime:
    return datetime.now(UTC)


class Tx(Protocol):
    """One transaction's statements on one driver connection."""

    async def rows(self, sql: str, args: Sequence[Any]) -> Sequence[Sequence[Any]]: ...

    async def run(self, sql: str, args: Sequence[Any]) -> None: ...


Op = Callable[[Tx], Coroutine[Any, Any, T]]


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine whose awaits never suspend (a synchronous driver's ``Tx``) to its end."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a synchronous transaction suspended")


class Pool(Generic[C]):
    """At most ``size`` connections, opened on demand and kept: the library's pool bound
    (SQLAlchemy's 5 + 10 overflow) without its pre-ping or its closing of overflow ones."""

    def __init__(self, connect: Callable[[], Awaitable[C]], close: Callable[[C], Awaitable[Any]],
                 size: int = 15) -> None:
        self._connect, self._close = connect, close
        self._slots = asyncio.Semaphore(size)
        self._idle: list[C] = []

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[C]:
        async with self._slots:
            conn = self._idle.pop() if self._idle else await self._connect()
            try:
                yield conn
            finally:
                self._idle.append(conn)

    async def close(self) -> None:
        while self._idle:
            await self._close(self._idle.pop())


class RawSqlTarget(Target):
    """The shared logic; subclasses give the driver (:meth:`_transaction`) and the spelling."""

    kind = "raw"
    #: Identifier quote and bind placeholder of the driver.
    quote = '"'
    marker = "?"
    #: PostgreSQL writes each timestamp twice: naive ``c`` and ``"cZ" TIMESTAMPTZ``.
    shadow_timestamps = False

    def __init__(self, prefix: str = "mastra_", schema: str | None = None) -> None:
        self.prefix, self.schema = prefix, schema
        self._sql: dict[Any, str] = {}

    # -- the engine's spelling (overridden where it differs) -------------------------------------

    @abstractmethod
    async def _transaction(self, op: Op[T], *, write: bool) -> T:
        """Run ``op`` in one transaction (a write one: ``write``) and commit it."""

    @abstractmethod
    async def _statement(self, op: Op[T]) -> T:
        """Run ``op`` (one statement, or reads that need no common snapshot) in autocommit."""

    def encode_time(self, value: datetime) -> Any:
        return value.astimezone(UTC).replace(tzinfo=None)

    def decode_time(self, value: Any) -> datetime:
        moment: datetime = value
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

    def decode_json(self, value: Any) -> Any:
        return json.loads(value)

    def read_expr(self, column: Column) -> str:
        """How a documented column is selected."""
        return self.q(column.name)

    def upsert_clause(self, key: Sequence[str], update: Sequence[str]) -> str:
        sets = ", ".join(f"{self.q(c)} = excluded.{self.q(c)}" for c in update)
        return f"ON CONFLICT ({', '.join(self.q(k) for k in key)}) DO UPDATE SET {sets}"

    # -- SQL text, built once per shape ------------------------------------------------------------

    def q(self, name: str) -> str:
        return f"{self.quote}{name}{self.quote}"

    def t(self, spec: TableSpec) -> str:
        name = self.q(spec.name(self.prefix))
        return f"{self.q(self.schema)}.{name}" if self.schema else name

    def order(self, spec: TableSpec, *keys: str) -> str:
        """An ORDER BY list of ``"column DIRECTION"`` keys, each column qualified by its table:
        a bare name would sort by a select-list alias of the same name (PostgreSQL's
        ``COALESCE("createdAtZ", ...) AS "createdAt"``), which no index serves."""
        parts = (key.split(" ") for key in keys)
        return ", ".join(f"{self.t(spec)}.{self.q(name)} {direction}" for name, direction in parts)

    def marks(self, n: int) -> str:
        return ", ".join([self.marker] * n)

    def statement(self, key: Any, build: Callable[[], str]) -> str:
        found = self._sql.get(key)
        if found is None:
            found = self._sql[key] = build()
        return found

    def columns(self, spec: TableSpec, names: Sequence[str] | None = None) -> list[str]:
        """Physical columns written for ``names`` (default: all), shadows next to timestamps."""
        out = []
        for col in spec.columns:
            if names is None or col.name in names:
                out.append(col.name)
                if self.shadow_timestamps and col.type is ColumnType.TIMESTAMP:
                    out.append(shadow_name(col.name))
        return out

    def values(self, spec: TableSpec, row: dict[str, Any]) -> list[Any]:
        """Bind values of ``row`` (documented names) in :meth:`columns` order."""
        out: list[Any] = []
        for col in spec.columns:
            if col.name not in row:
                continue
            value = row[col.name]
            if col.type is ColumnType.TIMESTAMP:
                out.append(None if value is None else self.encode_time(value))
                if self.shadow_timestamps:
                    out.append(value)
            elif col.type is ColumnType.JSON:
                out.append(None if value is None else dumps(value))
            else:
                out.append(value)
        return out

    def stamp(self, spec: TableSpec, name: str, value: datetime) -> tuple[list[str], list[Any]]:
        """SET targets and values writing timestamp ``name`` (and its shadow)."""
        return self.columns(spec, [name]), self.values(spec, {name: value})

    def select(self, spec: TableSpec) -> str:
        return f"SELECT {', '.join(self.read_expr(c) for c in spec.columns)} FROM {self.t(spec)}"

    def upsert(self, spec: TableSpec, names: Sequence[str], key: Sequence[str],
               keep: Sequence[str], rows: int) -> str:
        def build() -> str:
            cols = self.columns(spec, names)
            kept = set(self.columns(spec, keep)) | set(key)
            one = f"({self.marks(len(cols))})"
            return (
                f"INSERT INTO {self.t(spec)} ({', '.join(self.q(c) for c in cols)}) "
                f"VALUES {', '.join([one] * rows)} "
                + self.upsert_clause(key, [c for c in cols if c not in kept])
            )

        return self.statement(("upsert", spec.base_name, tuple(keep), rows), build)

    def ids_in(self, spec: TableSpec, what: str, column: str, n: int) -> str:
        return self.statement(
            ("in", spec.base_name, what, n),
            lambda: f"SELECT DISTINCT {self.q(what)} FROM {self.t(spec)} "
            f"WHERE {self.q(column)} IN ({self.marks(n)})",
        )

    # -- decoding what was read (the library builds records from it) ------------------------------

    def decoders(self, spec: TableSpec) -> list[Callable[[Any], Any] | None]:
        def pick(col: Column) -> Callable[[Any], Any] | None:
            if col.type is ColumnType.TIMESTAMP:
                return self.decode_time
            if col.type is ColumnType.JSON:
                return self.decode_json
            if spec is MESSAGES and col.name == "content":
                return json.loads  # message content is JSON text in a text column
            return None

        return [pick(c) for c in spec.columns]

    def decode(self, spec: TableSpec, rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
        fns = self.decoders(spec)
        return [
            [v if fn is None or v is None else fn(v) for fn, v in zip(fns, row, strict=True)]
            for row in rows
        ]

    # -- lifecycle ---------------------------------------------------------------------------------

    async def reset(self) -> None:
        async def clear(tx: Tx) -> None:
            for spec in WORKLOAD_TABLES:
                await tx.run(f"DELETE FROM {self.t(spec)}", [])

        await self._transaction(clear, write=True)

    # -- memory ------------------------------------------------------------------------------------

    async def save_thread(self, thread_id: str, resource_id: str, created_at: datetime) -> None:
        names = THREADS.column_names
        sql = self.upsert(THREADS, names, ["id"], [], 1)
        args = self.values(THREADS, {
            "id": thread_id, "resourceId": resource_id, "title": "bench", "metadata": None,
            "createdAt": created_at, "updatedAt": created_at,
        })

        async def save(tx: Tx) -> None:
            await tx.run(sql, args)

        await self._statement(save)

    def message_rows(self, messages: list[Msg]) -> list[list[Any]]:
        return [
            self.values(MESSAGES, {
                "id": m.id, "thread_id": m.thread_id, "content": dumps(m.content),
                "role": m.role, "type": "v2", "createdAt": m.created_at,
                "resourceId": m.resource_id,
            })
            for m in messages
        ]

    async def save_messages(self, messages: list[Msg]) -> None:
        """Without ``UPDATE .. RETURNING`` (MariaDB): one transaction of one SELECT (the
        targets that exist and the threads the batch's ids are in now), the upsert and the
        updatedAt bump."""
        names = MESSAGES.column_names
        rows = self.message_rows(messages)
        targets = sorted({m.thread_id for m in messages})
        ids = [m.id for m in messages]
        set_cols, set_args = self.stamp(THREADS, "updatedAt", now())
        probe = self.statement(
            ("probe", len(targets), len(ids)),
            lambda: f"SELECT {self.q('id')}, 0 FROM {self.t(THREADS)} "
            f"WHERE {self.q('id')} IN ({self.marks(len(targets))}) UNION ALL "
            f"SELECT DISTINCT {self.q('thread_id')}, 1 FROM {self.t(MESSAGES)} "
            f"WHERE {self.q('id')} IN ({self.marks(len(ids))})",
        )

        async def save(tx: Tx) -> None:
            found = await tx.rows(probe, [*targets, *ids])
            if sum(1 for r in found if r[1] == 0) != len(targets):
                raise LookupError(f"thread(s) not found among {targets}")
            for start in range(0, len(rows), CHUNK):
                part = rows[start : start + CHUNK]
                sql = self.upsert(MESSAGES, names, ["id"], [], len(part))
                await tx.run(sql, [v for row in part for v in row])
            touched = sorted(set(targets) | {r[0] for r in found if r[1] == 1})
            for chunk in _chunks(touched):
                await tx.run(self._touch_sql(set_cols, len(chunk)), [*set_args, *chunk])

        await self._transaction(save, write=True)

    def _touch_sql(self, set_cols: list[str], n: int) -> str:
        return self.statement(
            ("touch", n),
            lambda: f"UPDATE {self.t(THREADS)} SET "
            + ", ".join(f"{self.q(c)} = {self.marker}" for c in set_cols)
            + f" WHERE {self.q('id')} IN ({self.marks(n)})",
        )

    def _page_text(self) -> str:
        return (
            f"{self.select(MESSAGES)} WHERE {self.q('thread_id')} = {self.marker} "
            f"ORDER BY {self.order(MESSAGES, 'createdAt DESC', 'id DESC')} "
            f"LIMIT {self.marker} OFFSET {self.marker}"
        )

    def _page_sql(self) -> str:
        return self.statement("newest", self._page_text)

    async def newest(self, thread_id: str, n: int) -> list[str]:
        sql = self._page_sql()

        async def read(tx: Tx) -> Sequence[Sequence[Any]]:
            return await tx.rows(sql, [thread_id, n + 1, 0])

        rows = self.decode(MESSAGES, await self._statement(read))
        return [r[0] for r in rows[:n]]

    #: Whether the newest page and an include window are one statement (W2i), as the library
    #: reads them where that saves a round trip and its plans hold (its dialects'
    #: ``one_statement_listing``): not on SQLite (no round trip to save; the one statement
    #: costs the engine more) nor on MariaDB (the one statement costs the server more than
    #: the round trip it saves).
    window_with_page: ClassVar[bool] = False

    def thread_range(self) -> str:
        """What follows the messages table in the ``FROM`` of a window side's id read: an
        index hint where the engine could trade the range from the target for a read of the
        whole thread (MariaDB, as the library's dialect says)."""
        return ""

    def _window_sql(self, before: bool, after: bool) -> str:
        return self.statement(("window", before, after), lambda: self._window_text(before, after))

    def _window_text(self, before: bool, after: bool) -> str:
        """An include window in one statement, as a hand-written read would take it: the
        target, then each side with the target's thread and createdAt as scalar subqueries on
        its id, evaluated once and used as index bounds. A side reads the ids first (a plain
        createdAt range, which the index serves, then the (createdAt, id) tie-break), then
        their rows, as the library does."""

        at, mid, m, tbl = self.q("createdAt"), self.q("id"), self.marker, self.t(MESSAGES)
        thread = self.q("thread_id")
        tid = f"(SELECT w.{thread} FROM {tbl} w WHERE w.{mid} = {m})"
        when = f"(SELECT w.{at} FROM {tbl} w WHERE w.{mid} = {m})"
        parts = [f"SELECT * FROM ({self.select(MESSAGES)} WHERE {mid} = {m}) AS target"]
        for op, wanted in (("<", before), (">", after)):
            if not wanted:
                continue
            order = "DESC" if op == "<" else "ASC"
            ordering = self.order(MESSAGES, f"createdAt {order}", f"id {order}")
            parts.append(
                f"SELECT * FROM ({self.select(MESSAGES)} JOIN (SELECT {tbl}.{mid} AS "
                f"neighbour_id FROM {tbl}{self.thread_range()} WHERE {tbl}.{thread} = {tid} "
                f"AND {tbl}.{at} {op}= {when} AND ({tbl}.{at} {op} {when} OR {tbl}.{mid} {op} {m}) "
                f"ORDER BY {ordering} LIMIT {m}) AS neighbour_ids ON {tbl}.{mid} = "
                f"neighbour_ids.neighbour_id) AS side_{'before' if op == '<' else 'after'}"
            )
        return " UNION ALL ".join(parts)

    async def newest_with_window(
        self, thread_id: str, n: int, message_id: str, before: int, after: int
    ) -> list[str]:
        page_values: list[Any] = [thread_id, n + 1, 0]
        values: list[Any] = [message_id]
        for limit in (before, after):
            if limit:
                values += [message_id] * 4 + [limit]

        if self.window_with_page:
            # One statement: the page's rows, marked 0, then the window's.
            both = self.statement(
                ("page and window", before > 0, after > 0),
                lambda: f"SELECT page.*, 0 AS part FROM ({self._page_text()}) AS page "
                f"UNION ALL SELECT w.*, 1 AS part FROM "
                f"({self._window_text(before > 0, after > 0)}) AS w",
            )

            async def read_both(tx: Tx) -> Sequence[Sequence[Any]]:
                return await tx.rows(both, [*page_values, *values])

            found = await self._statement(read_both)
            rows = self.decode(MESSAGES, [r[:-1] for r in found if r[-1] == 0])[:n]
            extra = self.decode(MESSAGES, [r[:-1] for r in found if r[-1] != 0])
        else:
            # The page, then the window: two autocommit statements.
            page, window = self._page_sql(), self._window_sql(before > 0, after > 0)

            async def read_page(tx: Tx) -> Sequence[Sequence[Any]]:
                return await tx.rows(page, page_values)

            async def read_window(tx: Tx) -> Sequence[Sequence[Any]]:
                return await tx.rows(window, values)

            rows = self.decode(MESSAGES, await self._statement(read_page))[:n]
            extra = self.decode(MESSAGES, await self._statement(read_window))
        merged = {r[0]: r for r in rows}
        for r in extra:
            merged.setdefault(r[0], r)
        ordered = sorted(merged.values(), key=lambda r: (r[5], r[0]), reverse=True)
        return [r[0] for r in ordered]

    async def thread_page(self, resource_id: str, page: int, per_page: int) -> list[str]:
        rid, m = self.q("resourceId"), self.marker
        sql = self.statement(
            "threads",
            lambda: f"{self.select(THREADS)} WHERE {rid} = {m} "
            f"ORDER BY {self.order(THREADS, 'createdAt DESC', 'id DESC')} LIMIT {m} OFFSET {m}",
        )
        count = self.statement(
            "count_threads", lambda: f"SELECT count(*) FROM {self.t(THREADS)} WHERE {rid} = {m}"
        )

        async def read(tx: Tx) -> Sequence[Sequence[Any]]:
            rows = await tx.rows(sql, [resource_id, per_page + 1, page * per_page])
            await tx.rows(count, [resource_id])
            return rows

        # The page and its total must agree: one transaction.
        rows = self.decode(THREADS, await self._transaction(read, write=False))
        return [r[0] for r in rows[:per_page]]

    def _resource_sql(self) -> str:
        return self.statement(
            "resource",
            lambda: f"{self.select(RESOURCES)} WHERE {self.q('id')} = {self.marker}",
        )

    #: ``RETURNING`` on an upsert (PostgreSQL, SQLite): the row written comes back with it.
    upsert_returning = True

    async def update_working_memory(self, resource_id: str, text: str) -> None:
        """One upsert: created when missing, else working memory and updatedAt replaced; the
        stored row comes back (the library returns the resource) where the engine can."""
        stamp = now()
        names = RESOURCES.column_names

        def build() -> str:
            sql = self.upsert(RESOURCES, names, ["id"], ["metadata", "createdAt"], 1)
            if self.upsert_returning:
                sql += " RETURNING " + ", ".join(self.read_expr(c) for c in RESOURCES.columns)
            return sql

        sql = self.statement("update_resource", build)
        args = self.values(RESOURCES, {
            "id": resource_id, "workingMemory": text, "metadata": None,
            "createdAt": stamp, "updatedAt": stamp,
        })

        async def write(tx: Tx) -> Sequence[Sequence[Any]]:
            if self.upsert_returning:
                return await tx.rows(sql, args)
            await tx.run(sql, args)
            return []

        self.decode(RESOURCES, await self._statement(write))

    async def get_working_memory(self, resource_id: str) -> str | None:
        sql = self._resource_sql()

        async def read(tx: Tx) -> Sequence[Sequence[Any]]:
            return await tx.rows(sql, [resource_id])

        rows = self.decode(RESOURCES, await self._statement(read))
        return str(rows[0][1]) if rows and rows[0][1] is not None else None

    # -- workflows ---------------------------------------------------------------------------------

    async def save_snapshot(self, name: str, run_id: str, snapshot: dict[str, Any]) -> None:
        stamp = now()
        sql = self.upsert(SNAPSHOTS, SNAPSHOTS.column_names, ["workflow_name", "run_id"],
                          ["createdAt"], 1)
        args = self.values(SNAPSHOTS, {
            "workflow_name": name, "run_id": run_id, "resourceId": None, "snapshot": snapshot,
            "createdAt": stamp, "updatedAt": stamp,
        })

        async def save(tx: Tx) -> None:
            await tx.run(sql, args)

        await self._statement(save)

    async def load_snapshot(self, name: str, run_id: str) -> dict[str, Any] | None:
        m = self.marker
        sql = self.statement(
            "load_snapshot",
            lambda: f"{self.select(SNAPSHOTS)} WHERE {self.q('run_id')} = {m} AND "
            f"{self.q('workflow_name')} = {m} "
            f"ORDER BY {self.order(SNAPSHOTS, 'createdAt DESC')} LIMIT 1",
        )

        async def read(tx: Tx) -> Sequence[Sequence[Any]]:
            return await tx.rows(sql, [run_id, name])

        rows = self.decode(SNAPSHOTS, await self._statement(read))
        if not rows:
            return None
        value: dict[str, Any] = rows[0][3]
        return value

    # -- observability -----------------------------------------------------------------------------

    async def save_spans(self, spans: list[SpanRow]) -> None:
        stamp = now()
        names = SPANS.column_names
        rows = []
        for sp in spans:
            row: dict[str, Any] = dict.fromkeys(names)
            row.update(
                traceId=sp.trace_id, spanId=sp.span_id, parentSpanId=sp.parent_span_id,
                name=sp.name, spanType=sp.span_type, isEvent=False, startedAt=sp.started_at,
                endedAt=sp.ended_at, attributes=sp.attributes, input=sp.input, output=sp.output,
                createdAt=stamp, updatedAt=stamp,
            )
            rows.append(self.values(SPANS, row))

        async def save(tx: Tx) -> None:
            for start in range(0, len(rows), CHUNK):
                part = rows[start : start + CHUNK]
                sql = self.upsert(SPANS, names, ["traceId", "spanId"], [], len(part))
                await tx.run(sql, [v for row in part for v in row])

        # One multi-row upsert is atomic by itself; more than one chunk needs a transaction.
        if len(rows) <= CHUNK:
            await self._statement(save)
        else:
            await self._transaction(save, write=True)

    async def read_trace(self, trace_id: str) -> int:
        sql = self.statement(
            "trace",
            lambda: f"{self.select(SPANS)} WHERE {self.q('traceId')} = {self.marker} "
            f"ORDER BY {self.order(SPANS, 'startedAt ASC', 'spanId ASC')}",
        )

        async def read(tx: Tx) -> Sequence[Sequence[Any]]:
            return await tx.rows(sql, [trace_id])

        return len(self.decode(SPANS, await self._statement(read)))


def _chunks(values: list[str]) -> list[list[str]]:
    return [values[i : i + CHUNK] for i in range(0, len(values), CHUNK)]
