"""The memory domain in SQL, written once for every relational backend.

Every statement is a prepared one (``SqlDomain.prepared``): built and compiled on first use,
then run on the driver's cursor. A statement whose shape depends on the request (how many ids,
which filters) is built by a function taking that shape as arguments, which key its cache
entry (``sql.engine.cache``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Executable

from composite_store.domains.args import UNSET
from composite_store.domains.memory import (
    IncludeWindows,
    MemoryDomain,
    MessageQuery,
    ThreadQuery,
    resource_after_update,
    thread_after_update,
)
from composite_store.errors import ConflictError, NotFoundError
from composite_store.records.memory import (
    Message,
    MessageContent,
    Resource,
    Thread,
    message_from_row,
)
from composite_store.records.trusted import from_row
from composite_store.schema import table
from composite_store.sql.domain import SHORT_PAGE, UPSERT_CHUNK, SqlDomain
from composite_store.sql.engine import Prepared, RowValues, in_list, numbered, params
from composite_store.sql.totals import TOTAL, with_total
from composite_store.sql.types import dumps
from composite_store.types import DateRange, Include

__all__ = ["SqlMemory"]

THREADS, MESSAGES, RESOURCES = table("threads"), table("messages"), table("resources")
#: The label of the resourceId of the target's thread on an include window's target row.
OWNER = "thread_owner"
#: The label of the part of a listing (``SqlMemory._listing``) a row belongs to: 0 the page,
#: ``w + 1`` include window ``w``.
PART = "listing_part"
#: Include windows read in one statement at most (with the page, where there is one): the
#: statement grows by three ``SELECT`` statements a window, and each count of windows is a
#: statement of its own in the cache. More are read this many at a time.
WINDOWS_PER_STATEMENT = 8
#: The shape of a listing's page (``SqlMemory._listing``): threads, by resource, date bounds,
#: descending, counted.
PageShape = tuple[int, bool, tuple[str, ...], bool, bool]
#: The documented index of messages on (thread_id, createdAt): a window half is a range of it.
THREAD_ORDER = "thread_id_createdat_idx"
#: Ids per ``IN (...)`` statement: bounded so the number of compiled shapes stays small.
IN_CHUNK = 100


def _range_shape(rng: DateRange | None) -> tuple[str, ...]:
    """Which bounds a date range has, and how (the part of a statement's shape it decides)."""
    if rng is None:
        return ()
    shape = []
    if rng.start is not None:
        shape.append(">" if rng.start_exclusive else ">=")
    else:
        shape.append("")
    if rng.end is not None:
        shape.append("<" if rng.end_exclusive else "<=")
    else:
        shape.append("")
    return tuple(shape)


def _range_values(rng: DateRange | None) -> dict[str, Any]:
    if rng is None:
        return {}
    return {"start": rng.start, "end": rng.end}


def _ordered(descending: bool, *columns: Any) -> tuple[Any, ...]:
    """``columns`` as ``ORDER BY`` terms, every one descending or every one ascending (a sort
    key and its id tie-break read one index in one direction)."""
    return tuple(c.desc() if descending else c.asc() for c in columns)


def _refuse_missing(targets: Sequence[str], existing: set[str]) -> None:
    missing = set(targets) - existing
    if missing:
        raise NotFoundError(f"thread(s) not found: {sorted(missing)}")


def _chunks(values: Sequence[str]) -> list[Sequence[str]]:
    return [values[i : i + IN_CHUNK] for i in range(0, len(values), IN_CHUNK)] or [values]


class SqlMemory(SqlDomain, MemoryDomain):
    """Threads, messages and resources on a relational backend."""

    batch_limits: ClassVar[Mapping[str, int]] = {"ids": IN_CHUNK, "rows": UPSERT_CHUNK}

    # -- statements ------------------------------------------------------------------------------

    def _in(self, base: str, column: str, n: int, what: str = "") -> Prepared:
        """``SELECT <what or documented columns> FROM base WHERE column IN (:v0 .. :vN)``."""

        def build(base: str, column: str, n: int, what: str) -> Executable:
            tbl = self.tables[base]
            picked = self.select_all(base) if not what else sa.select(tbl.c[what]).distinct()
            return picked.where(tbl.c[column].in_(params("v", n)))

        return self.prepared(build, base, column, n, what)

    def _ids_in(
        self, conn: Connection, base: str, column: str, ids: Sequence[str], what: str = ""
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for chunk in _chunks(list(ids)):
            rows.extend(self._in(base, column, len(chunk), what).all(conn, numbered("v", chunk)))
        return rows

    def _touch_threads(self, conn: Connection, thread_ids: set[str], now: datetime) -> None:
        stamps = self.db.timestamp_values(THREADS, "updatedAt", now)

        def build(stamped: tuple[str, ...], n: int) -> Executable:
            threads = self.tables["threads"]
            return (
                threads.update()
                .where(threads.c.id.in_(params("v", n)))
                .values(self.set_values("threads", {c: c for c in stamped}))
            )

        ordered = sorted(thread_ids)
        for chunk in _chunks(ordered) if ordered else []:
            self.prepared(build, tuple(stamps), len(chunk)).execute(
                conn, {**stamps, **numbered("v", chunk)}
            )

    def _thread_row(self, conn: Connection, thread_id: str, *, lock: bool = False) -> Thread | None:
        return self.select_by("threads", "id", lock=lock).record(conn, Thread, {"id": thread_id})

    def _upsert(
        self,
        conn: Connection,
        base: str,
        rows: Sequence[Mapping[str, Any]],
        keep: Sequence[str] = (),
    ) -> None:
        for stmt, values in self.upsert(base, rows, ["id"], keep):
            stmt.execute(conn, values)

    # -- threads ---------------------------------------------------------------------------------

    async def _get_thread(self, thread_id: str) -> Thread | None:
        stmt = self.select_by("threads", "id")
        return stmt.record_of(Thread, await self.db.fetch(stmt, {"id": thread_id}))

    async def _save_thread(self, thread: Thread) -> None:
        # record_values, not stored(): model_dump would copy the metadata, only encoded here.
        await self.save_rows("threads", [self.db.record_values(THREADS, thread)], ["id"])

    async def _update_thread(
        self,
        thread_id: str,
        *,
        title: str | None,
        metadata: dict[str, Any] | None,
        updated_at: Any,
        expected_working_memory: Any,
    ) -> Thread | None:
        stamps = self.db.timestamp_values(THREADS, "updatedAt", updated_at)

        def build(stamped: tuple[str, ...]) -> Executable:
            tbl = self.tables["threads"]
            columns = {"title": "title", "metadata": "metadata", **{c: c for c in stamped}}
            return (
                tbl.update()
                .where(tbl.c.id == sa.bindparam("tid"))
                .values(self.set_values("threads", columns))
            )

        def update(conn: Connection) -> Thread | None:
            current = self._thread_row(conn, thread_id, lock=True)
            if current is None:
                return None
            updated = thread_after_update(
                current, title, metadata, updated_at, expected_working_memory
            )
            self.prepared(build, tuple(stamps)).execute(
                conn,
                {
                    "tid": thread_id,
                    "title": updated.title,
                    "metadata": updated.metadata,
                    **stamps,
                },
            )
            return updated

        return await self.db.run(update, write=True, short=True)

    async def _delete_thread(self, thread_id: str) -> None:
        def build_messages() -> Executable:
            messages = self.tables["messages"]
            return messages.delete().where(messages.c.thread_id == sa.bindparam("tid"))

        def build_thread() -> Executable:
            threads = self.tables["threads"]
            return threads.delete().where(threads.c.id == sa.bindparam("tid"))

        def delete(conn: Connection) -> None:
            self.prepared(build_messages).execute(conn, {"tid": thread_id})
            self.prepared(build_thread).execute(conn, {"tid": thread_id})

        await self.db.run(delete, write=True)

    def _thread_conditions(self, by_resource: bool, keys: tuple[str, ...]) -> list[Any]:
        tbl = self.tables["threads"]
        conditions: list[Any] = []
        if by_resource:
            conditions.append(tbl.c.resourceId == sa.bindparam("rid"))
        for i, key in enumerate(keys):
            # The key is part of the SQL (a JSON path); it was validated by the contract.
            conditions.append(
                self.db.dialect.json_equals(
                    tbl.c.metadata, key, sa.bindparam(f"m{i}", type_=sa.Text)
                )
            )
        return conditions

    def _threads_page(
        self,
        by_resource: bool,
        keys: tuple[str, ...],
        field: str,
        descending: bool,
        limited: bool,
        counted: bool = False,
    ) -> Prepared:
        """A page of threads ordered by ``field`` (tie-break: id), filtered by resource and
        metadata ``keys``; ``limited``: from ``:offset``, at most ``:limit``; ``counted``: each
        row carries the total as its last column (``sql.totals``)."""

        def build(
            by_resource: bool,
            keys: tuple[str, ...],
            field: str,
            descending: bool,
            limited: bool,
            counted: bool,
        ) -> Executable:
            tbl = self.tables["threads"]
            stmt = (
                self.select_all("threads")
                .where(*self._thread_conditions(by_resource, keys))
                .order_by(*_ordered(descending, tbl.c[field], tbl.c.id))
            )
            if counted:
                stmt = with_total(stmt, self._threads_counting(by_resource, keys))
            if limited:
                stmt = stmt.offset(sa.bindparam("offset")).limit(sa.bindparam("limit"))
            return stmt

        return self.prepared(build, by_resource, keys, field, descending, limited, counted)

    def _threads_counting(self, by_resource: bool, keys: tuple[str, ...]) -> sa.Select[Any]:
        conditions = self._thread_conditions(by_resource, keys)
        return sa.select(sa.func.count()).select_from(self.tables["threads"]).where(*conditions)

    def _threads_count(self, by_resource: bool, keys: tuple[str, ...]) -> Prepared:
        return self.prepared(self._threads_counting, by_resource, keys)

    async def _list_threads(self, query: ThreadQuery) -> tuple[list[Thread], int | None]:
        keys = tuple(query.metadata)
        by_resource = query.resource_id is not None
        limited = query.window.limit is not None
        page = self._threads_page(
            by_resource, keys, query.order_field, query.descending, limited, query.count
        )
        count = self._threads_count(by_resource, keys)
        values: dict[str, Any] = {"rid": query.resource_id}
        values.update((f"m{i}", dumps(query.metadata[k])) for i, k in enumerate(keys))
        if limited:
            assert query.window.limit is not None
            values.update(offset=query.window.offset, limit=query.window.fetch)

        # One statement, the total in it (sql.totals); a page past the end counts alone.
        found, total = await self.read_counted(
            page, count, values, counted=query.count,
            short=(query.window.fetch or SHORT_PAGE + 1) <= SHORT_PAGE,
        )
        rows = page.mappings(found)
        if query.count:
            for r in rows:
                del r[TOTAL]
        return [from_row(Thread, r) for r in rows], total

    # -- messages --------------------------------------------------------------------------------

    def _message_conditions(self, n: int, by_resource: bool, bounds: tuple[str, ...]) -> list[Any]:
        tbl = self.tables["messages"]
        conditions: list[Any] = [
            tbl.c.thread_id == sa.bindparam("v0") if n == 1 else in_list(tbl.c.thread_id, "v", n)
        ]
        if by_resource:
            conditions.append(tbl.c.resourceId == sa.bindparam("rid"))
        if bounds:
            start, end = bounds
            created = tbl.c.createdAt
            if start:
                lower: Any = sa.bindparam("start")
                conditions.append(created > lower if start == ">" else created >= lower)
            if end:
                upper: Any = sa.bindparam("end")
                conditions.append(created < upper if end == "<" else created <= upper)
        return conditions

    def _page_select(
        self,
        n: int,
        by_resource: bool,
        bounds: tuple[str, ...],
        descending: bool,
        limited: bool,
        counted: bool,
    ) -> sa.Select[Any]:
        """The statement of :meth:`_messages_page`, and the page of :meth:`_listing`."""
        tbl = self.tables["messages"]
        conditions = self._message_conditions(n, by_resource, bounds)
        stmt = (
            self.select_all("messages")
            .where(*conditions)
            .order_by(*_ordered(descending, tbl.c.createdAt, tbl.c.id))
        )
        if counted:
            stmt = with_total(stmt, self._messages_counting(n, by_resource, bounds))
        if limited:
            stmt = stmt.offset(sa.bindparam("offset")).limit(sa.bindparam("limit"))
        return stmt

    def _messages_page(
        self, n: int, by_resource: bool, bounds: tuple[str, ...], descending: bool,
        limited: bool, counted: bool = False,
    ) -> Prepared:
        """A page of the messages of ``n`` threads (``:v0`` ...) by (createdAt, id), filtered
        by resource and date ``bounds`` (``_range_shape``); ``limited``: from ``:offset``, at
        most ``:limit``; ``counted``: each row carries the total as its last column
        (``sql.totals``)."""
        variant = (n, by_resource, bounds, descending, limited, counted)
        return self.prepared(self._page_select, *variant)

    def _messages_counting(
        self, n: int, by_resource: bool, bounds: tuple[str, ...]
    ) -> sa.Select[Any]:
        conditions = self._message_conditions(n, by_resource, bounds)
        return sa.select(sa.func.count()).select_from(self.tables["messages"]).where(*conditions)

    def _messages_count(self, n: int, by_resource: bool, bounds: tuple[str, ...]) -> Prepared:
        return self.prepared(self._messages_counting, n, by_resource, bounds)

    @staticmethod
    def _page_values(query: MessageQuery) -> dict[str, Any]:
        """The values :meth:`_messages_page` binds for ``query``."""
        values: dict[str, Any] = {**numbered("v", query.thread_ids), "rid": query.resource_id}
        values.update(_range_values(query.date_range))
        if query.window.limit is not None:
            values.update(offset=query.window.offset, limit=query.window.fetch)
        return values

    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        n = len(query.thread_ids)
        by_resource = query.resource_id is not None
        bounds = _range_shape(query.date_range)
        limited = query.window.limit is not None
        page = self._messages_page(n, by_resource, bounds, query.descending, limited, query.count)
        count = self._messages_count(n, by_resource, bounds)
        values = self._page_values(query)

        message = page.reader(Message, content=MessageContent.from_stored)
        if not limited:
            # Every message (per_page=False): one statement whose rows are streamed into
            # records, so driver rows never pile up beside them, and no COUNT: the total is
            # what the statement returned (the count's conditions are the page's).
            def read_all(conn: Connection) -> list[Message]:
                return page.each(conn, message, values)

            every = await self.db.run(read_all, single=True)
            return every, len(every) if query.count else None

        # One statement, the total in it (sql.totals); a page past the end counts alone.
        rows, total = await self.read_counted(
            page, count, values, counted=query.count,
            short=(query.window.fetch or SHORT_PAGE + 1) <= SHORT_PAGE,
        )
        return [message(r) for r in rows], total

    def _side(self, direction: str, w: int) -> sa.Select[Any]:
        """The messages just before (``<``) or after (``>``) message ``:mid<w>`` in its own
        thread, at most ``:before<w>`` (``:after<w>``) of them: the neighbours of include
        window ``w`` (:meth:`_window_members`)."""
        tbl, target = self.tables["messages"], self.tables["messages"].alias("target")
        mid: Any = sa.bindparam(f"mid{w}")

        def of_target(column: str) -> Any:
            # Uncorrelated (another alias of the table): evaluated once, before the scan, as a
            # constant the index is searched with (PostgreSQL an InitPlan in the Index Cond,
            # SQLite and MariaDB a constant subquery), so the side is read from the
            # (thread_id, createdAt) index from the target, as a bound value would be.
            picked = sa.select(target.c[column]).where(target.c.id == mid)
            return picked.scalar_subquery()

        thread, at = of_target("thread_id"), of_target("createdAt")
        # A plain range on createdAt first, so the (thread_id, createdAt) index is read in
        # order from the target and the scan stops after ``limit`` rows; the OR alone makes
        # planners gather and sort every earlier (later) message of the thread.
        if direction == "<":
            beyond = sa.and_(tbl.c.createdAt <= at, sa.or_(tbl.c.createdAt < at, tbl.c.id < mid))
            limit, name = f"before{w}", "neighbour_ids_before"
        else:
            beyond = sa.and_(tbl.c.createdAt >= at, sa.or_(tbl.c.createdAt > at, tbl.c.id > mid))
            limit, name = f"after{w}", "neighbour_ids_after"
        ordering = _ordered(direction == "<", tbl.c.createdAt, tbl.c.id)
        # The ids first, then their rows: a query of ids alone is served by the index
        # (InnoDB's secondary indexes carry the primary key), so every planner reads it from
        # the target and stops after ``limit`` entries. Asked for every column at once,
        # MariaDB reads the thread from its far end up to the target instead: half of a
        # 10,000-message thread for a target in the middle (docs/benchmarks.md, plans).
        in_range = self.db.dialect.through_index(
            sa.select(tbl.c.id).where(tbl.c.thread_id == thread, beyond),
            tbl,
            self.index_name("messages", THREAD_ORDER),
        )
        ids = in_range.order_by(*ordering).limit(sa.bindparam(limit)).subquery(name)
        return self.select_all("messages").join_from(tbl, ids, tbl.c.id == ids.c.id)

    def _window_members(self, w: int) -> list[sa.Select[Any]]:
        """The ``SELECT`` statements of include window ``w`` in a listing (:meth:`_listing`):
        message ``:mid<w>`` with the resourceId of its thread as :data:`OWNER` (NULL when the
        thread row does not exist), then at most ``:before<w>`` messages just before it and
        ``:after<w>`` just after it in its thread (:meth:`_side`; a limit of 0 reads none).
        Each row's :data:`PART` is ``w + 1``; none has a total."""
        messages, threads = self.tables["messages"], self.tables["threads"]
        # Correlated with the one target row: the thread by its primary key, once.
        owner = (
            sa.select(threads.c.resourceId)
            .where(threads.c.id == messages.c.thread_id)
            .scalar_subquery()
        )

        def part() -> Any:
            return sa.literal_column(str(w + 1), sa.Integer).label(PART)

        target = (
            self.select_all("messages")
            .add_columns(sa.null().label(TOTAL), owner.label(OWNER), part())
            .where(messages.c.id == sa.bindparam(f"mid{w}"))
        )
        sides = [
            self._side(direction, w).add_columns(
                sa.null().label(TOTAL), sa.null().label(OWNER), part()
            )
            for direction in ("<", ">")
        ]
        return [target, *sides]

    def _listing(self, page: PageShape | None, windows: int) -> Prepared:
        """A page of messages and ``windows`` include windows in one statement (one round
        trip, one snapshot), or the windows alone where ``page`` is None.

        ``page`` is the shape of :meth:`_messages_page`'s limited page (``:offset``,
        ``:limit``), whose rows come first, in its order, with :data:`PART` 0 and, where
        counted, the total in :data:`TOTAL`; then the rows of each window
        (:meth:`_window_members`), in no order. Every row carries both columns and
        :data:`OWNER`, NULL where they do not apply, so the parts can be one ``UNION ALL``."""

        def build(page: PageShape | None, windows: int) -> Executable:
            members: list[sa.Select[Any]] = []
            if page is not None:
                n, by_resource, bounds, descending, counted = page
                rows = self._page_select(n, by_resource, bounds, descending, True, counted)
                found = rows.subquery("page")
                keys = self.select_all("messages").selected_columns.keys()
                members.append(
                    sa.select(
                        *(found.c[k] for k in keys),
                        found.c[TOTAL] if counted else sa.null().label(TOTAL),
                        sa.null().label(OWNER),
                        sa.literal_column("0", sa.Integer).label(PART),
                    )
                )
            for w in range(windows):
                members.extend(self._window_members(w))
            listing = sa.union_all(*members)
            if page is None:
                return listing
            # A UNION ALL keeps no order of its own: the page's is restated over the whole,
            # after the part (the windows' rows, a few, sort along).
            selected = listing.selected_columns
            order = _ordered(descending, selected["createdAt"], selected["id"])
            return listing.order_by(selected[PART], *order)

        return self.prepared(build, page, windows)

    @staticmethod
    def _window_values(includes: Sequence[Include]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for w, include in enumerate(includes):
            values[f"mid{w}"] = include.id
            values[f"before{w}"] = include.with_previous_messages
            values[f"after{w}"] = include.with_next_messages
        return values

    @staticmethod
    def _parts(
        listing: Prepared, rows: Sequence[Any], includes: Sequence[Include]
    ) -> tuple[list[Message], int | None, IncludeWindows]:
        """The rows of a :meth:`_listing` split into the page's messages (in order), the total
        its first row carries (None where it has no row or counts nothing), and the windows of
        ``includes`` with the owners of their targets' threads."""
        message = listing.reader(Message, content=MessageContent.from_stored)
        owner, part = listing.value_reader(OWNER), listing.value_reader(PART)
        total = listing.value_reader(TOTAL)
        page: list[Message] = []
        counted: int | None = None
        windows: list[list[Message]] = [[] for _ in includes]
        owner_of: dict[str, str | None] = {}
        for r in rows:
            p = int(part(r))
            if p == 0:
                if not page and (first := total(r)) is not None:
                    counted = int(first)
                page.append(message(r))
                continue
            m = message(r)
            windows[p - 1].append(m)
            if m.id == includes[p - 1].id:
                owner_of[m.thread_id] = owner(r)
        return page, counted, IncludeWindows(windows, owner_of)

    async def _list_messages_including(
        self, query: MessageQuery, includes: Sequence[Include], *, owners: bool
    ) -> tuple[list[Message], int | None, IncludeWindows]:
        # docstring inherited
        if (
            not self.db.dialect.one_statement_listing
            or query.window.limit is None
            or len(includes) > WINDOWS_PER_STATEMENT
        ):
            return await super()._list_messages_including(query, includes, owners=owners)
        n, by_resource = len(query.thread_ids), query.resource_id is not None
        bounds = _range_shape(query.date_range)
        listing = self._listing(
            (n, by_resource, bounds, query.descending, query.count), len(includes)
        )
        values = {**self._page_values(query), **self._window_values(includes)}
        fetch = query.window.fetch
        found = await self.db.fetch(
            listing, values, short=(fetch or SHORT_PAGE + 1) + 3 * len(includes) <= SHORT_PAGE
        )
        page, total, windows = self._parts(listing, found, includes)
        if query.count and not page:  # past the end, or nothing matched: no row carries it
            [(counted,)] = await self.db.fetch(
                self._messages_count(n, by_resource, bounds), values
            )
            total = int(counted)
        return page, total, windows

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        # docstring inherited
        include = Include(id=message_id, with_previous_messages=before, with_next_messages=after)
        read = await self._include_windows([include], owners=False)
        return read.windows[0]

    async def _include_windows(
        self, includes: Sequence[Include], *, owners: bool
    ) -> IncludeWindows:
        # docstring inherited
        step = WINDOWS_PER_STATEMENT if self.db.dialect.one_statement_listing else 1
        chunks = [includes[i : i + step] for i in range(0, len(includes), step)]
        reads = [
            (self._listing(None, len(chunk)), self._window_values(chunk)) for chunk in chunks
        ]

        def read(conn: Connection) -> list[list[Any]]:
            return [listing.rows(conn, values) for listing, values in reads]

        # Each statement is read from one snapshot. On the servers (READ COMMITTED: each
        # statement of a transaction takes its own snapshot anyway) no BEGIN/COMMIT around
        # several either; on SQLite a transaction keeps one snapshot for them.
        if len(reads) == 1:
            [(listing, values)] = reads
            found = [await self.db.fetch(listing, values)]
        else:
            single = self.db.dialect.autocommit
            found = await self.db.run(read, single=single, short=len(reads) <= 10)
        windows: list[list[Message]] = []
        owner_of: dict[str, str | None] = {}
        for chunk, (listing, _), rows in zip(chunks, reads, found, strict=True):
            _, _, part = self._parts(listing, rows, chunk)
            windows.extend(part.windows)
            owner_of.update(part.owners)
        return IncludeWindows(windows, owner_of)

    async def _get_messages(self, message_ids: Sequence[str]) -> list[Message]:
        few = len(message_ids) <= IN_CHUNK
        rows = await self.db.run(
            lambda conn: self._ids_in(conn, "messages", "id", message_ids), single=few, short=few
        )
        return [message_from_row(r) for r in rows]

    async def _save_messages(self, messages: Sequence[Message], now: Any) -> None:
        rows = []
        for m in messages:
            rows.append(self.db.values(MESSAGES, m.stored_row()))
        targets = sorted({m.thread_id for m in messages})
        ids = [m.id for m in messages]
        dialect = self.db.dialect
        few = len(rows) <= UPSERT_CHUNK and len(targets) <= IN_CHUNK
        if few and dialect.writable_ctes:
            await self._save_messages_in_one(rows, targets, ids, now)
            return
        if few and dialect.update_returning:
            await self._save_messages_returning(rows, targets, ids, now)
            return

        # Where every round trip counts (a server in autocommit: BEGIN is one of its own), the
        # two checks go in one statement.
        probe = self._probe(len(targets), len(ids)) if few and dialect.autocommit else None

        def save(conn: Connection) -> None:
            if probe is not None:
                # One SELECT: the targets that exist (0) and the threads the ids are in (1).
                found = probe.rows(conn, {**numbered("t", targets), **numbered("i", ids)})
                existing = {r[0] for r in found if r[1] == 0}
                previous = {r[0] for r in found if r[1] == 1}
                _refuse_missing(targets, existing)
            else:
                existing = {
                    r["id"]
                    for r in self._ids_in(conn, "threads", "id", targets, what="id")
                }
                _refuse_missing(targets, existing)
                previous = {
                    r["thread_id"]
                    for r in self._ids_in(conn, "messages", "id", ids, what="thread_id")
                }
            self._upsert(conn, "messages", rows)
            self._touch_threads(conn, set(targets) | previous, now)

        await self.db.run(save, write=True, short=few)

    def _probe(self, n_targets: int, n_ids: int) -> Prepared:
        """``SELECT id, 0`` of the target threads that exist ``UNION ALL`` ``SELECT thread_id,
        1`` of the messages with the batch's ids: a message batch's two checks in one."""

        def build(n_targets: int, n_ids: int) -> Executable:
            threads, messages = self.tables["threads"], self.tables["messages"]
            exists = sa.select(threads.c.id.label("tid"), sa.literal_column("0").label("kind"))
            now_in = sa.select(messages.c.thread_id, sa.literal_column("1")).distinct()
            return sa.union_all(
                exists.where(threads.c.id.in_(params("t", n_targets))),
                now_in.where(messages.c.id.in_(params("i", n_ids))),
            )

        return self.prepared(build, n_targets, n_ids)

    async def _save_messages_returning(
        self, rows: list[dict[str, Any]], targets: list[str], ids: list[str], now: Any
    ) -> None:
        """A batch in one transaction of two statements: the updatedAt bump of the target
        threads and of the threads the ids are in now (moved messages leave them), whose
        ``RETURNING`` says which targets exist; then the upsert (rolled back with the bump when
        a target is missing)."""
        stamps = self.db.timestamp_values(THREADS, "updatedAt", now)

        def build(stamped: tuple[str, ...], n_targets: int, n_ids: int) -> Executable:
            threads, messages = self.tables["threads"], self.tables["messages"]
            previous = sa.select(messages.c.thread_id).where(messages.c.id.in_(params("i", n_ids)))
            return (
                threads.update()
                .where(sa.or_(threads.c.id.in_(params("t", n_targets)), threads.c.id.in_(previous)))
                .values(self.set_values("threads", {c: c for c in stamped}))
                .returning(threads.c.id)
            )

        touch = self.prepared(build, tuple(stamps), len(targets), len(ids))
        values = {**stamps, **numbered("t", targets), **numbered("i", ids)}
        [(upsert, upsert_values)] = self.upsert("messages", rows, ["id"])

        def save(conn: Connection) -> None:
            _refuse_missing(targets, {r[0] for r in touch.rows(conn, values)})
            upsert.execute(conn, upsert_values)

        await self.db.run(save, write=True, short=True)

    async def _save_messages_in_one(
        self, rows: list[dict[str, Any]], targets: list[str], ids: list[str], now: Any
    ) -> None:
        """A batch as one statement (PostgreSQL's data-modifying CTEs), atomic by itself and
        so run in autocommit: one round trip (:meth:`_message_batch`). Its form for several
        rows is derived from the one-row form (``Prepared.with_rows``): a batch of a new size
        costs 0.1-0.5 ms, not a compilation (2.3 ms for 2 rows, 7 ms for 50)."""
        stamps = self.db.timestamp_values(THREADS, "updatedAt", now)
        stmt = self.prepared_rows(
            self._message_batch, tuple(rows[0]), tuple(stamps), rows=len(rows)
        )
        values = RowValues(rows, {**stamps, "t": targets, "i": ids, "k": len(targets)})
        found = await self.db.fetch(stmt, values, write=True)
        _refuse_missing(targets, {r[0] for r in found})

    def _message_batch(
        self, columns: tuple[str, ...], stamped: tuple[str, ...], n_rows: int
    ) -> Executable:
        """The message batch of ``n_rows`` rows (binds ``<column>__<i>``) as one statement.
        Every part reads the statement's one snapshot: ``tg`` the target threads (``t``, an
        array) that exist, ``prev`` the threads the rows' ids (``i``, an array) are in now
        (moved messages leave them); the upsert and the updatedAt bump of both happen only
        when all ``k`` targets exist, and the existing targets come back to say which are
        missing. Targets and ids travel as arrays, so the statement changes with the number
        of rows only (its row of values, which ``Prepared.with_rows`` repeats)."""
        threads, messages = self.tables["threads"], self.tables["messages"]
        key = threads.c.id.type
        existing = (
            sa.select(threads.c.id)
            .where(threads.c.id == sa.any_(sa.bindparam("t", type_=sa.ARRAY(key))))
            .cte("tg")
        )
        counted = sa.select(sa.func.count().label("n")).select_from(existing).cte("t")
        previous = (
            sa.select(messages.c.thread_id.label("tid"))
            .where(messages.c.id == sa.any_(sa.bindparam("i", type_=sa.ARRAY(key))))
            .cte("prev")
        )
        complete = sa.select(counted.c.n).scalar_subquery() == sa.bindparam("k")
        batch = sa.values(*[sa.column(c, messages.c[c].type) for c in columns], name="v").data(
            [
                tuple(sa.bindparam(f"{c}__{i}", type_=messages.c[c].type) for c in columns)
                for i in range(n_rows)
            ]
        )
        inserted = self.db.dialect.upsert_from_select(
            messages, columns, sa.select(batch).where(complete), ["id"],
            [c for c in columns if c != "id"],
        ).returning(sa.literal_column("1")).cte("ins")
        # One IN over the union, not an OR of two INs: PostgreSQL can only run the OR as a
        # scan of every thread with the two subqueries hashed in a filter; the union is a join
        # on the thread key, which the key's index serves once there are threads enough for it
        # to pay.
        touched = sa.union(sa.select(existing.c.id), sa.select(previous.c.tid))
        bumped = (
            threads.update()
            .where(complete, threads.c.id.in_(touched))
            .values(self.set_values("threads", {c: c for c in stamped}))
            .returning(threads.c.id)
            .cte("upd")
        )
        # Planned for every call (PLAN_EACH_CALL) where the planner may choose a scan: its
        # best plan then depends on how many messages and threads there are, which a store's
        # first batches keep changing.
        return (
            sa.select(existing.c.id)
            .add_cte(inserted, bumped)
            .execution_options(plan_each_call=True)
        )

    async def _delete_messages(self, message_ids: Sequence[str], now: Any) -> None:
        ids = list(message_ids)

        def build(n: int) -> Executable:
            tbl = self.tables["messages"]
            return tbl.delete().where(tbl.c.id.in_(params("v", n)))

        def delete(conn: Connection) -> None:
            touched = {
                r["thread_id"]
                for r in self._ids_in(conn, "messages", "id", ids, what="thread_id")
            }
            for chunk in _chunks(ids):
                self.prepared(build, len(chunk)).execute(conn, numbered("v", chunk))
            self._touch_threads(conn, touched, now)

        await self.db.run(delete, write=True)

    # -- resources -------------------------------------------------------------------------------

    def _resource_row(
        self, conn: Connection, resource_id: str, *, lock: bool = False
    ) -> Resource | None:
        stmt = self.select_by("resources", "id", lock=lock)
        return stmt.record(conn, Resource, {"id": resource_id})

    async def _get_resource(self, resource_id: str) -> Resource | None:
        stmt = self.select_by("resources", "id")
        return stmt.record_of(Resource, await self.db.fetch(stmt, {"id": resource_id}))

    async def _save_resource(self, resource: Resource) -> None:
        await self.save_rows("resources", [self.db.values(RESOURCES, resource.stored())], ["id"])

    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        set_memory, set_metadata = working_memory is not None, metadata is not None
        stamps = self.db.timestamp_values(RESOURCES, "updatedAt", now)

        def build_update(
            stamped: tuple[str, ...], set_memory: bool, set_metadata: bool
        ) -> Executable:
            tbl = self.tables["resources"]
            columns = {c: c for c in stamped}
            if set_memory:
                columns["workingMemory"] = "wm"
            if set_metadata:
                columns["metadata"] = "metadata"
            return (
                tbl.update()
                .where(tbl.c.id == sa.bindparam("rid"))
                .values(self.set_values("resources", columns))
            )

        def build_insert() -> Executable:
            columns = self.db.values(RESOURCES, {})
            return (
                self.tables["resources"]
                .insert()
                .values(self.set_values("resources", {c: c for c in columns}))
            )

        if (
            metadata is None
            and expected_working_memory is UNSET
            and self.db.dialect.upsert_returning()
        ):
            return await self._upsert_resource(resource_id, working_memory, now)

        inserted = False

        def update(conn: Connection) -> Resource:
            nonlocal inserted
            current = self._resource_row(conn, resource_id, lock=True)
            updated = resource_after_update(
                current,
                resource_id,
                working_memory=working_memory,
                metadata=metadata,
                now=now,
                expected_working_memory=expected_working_memory,
            )
            if current is None:
                inserted = True
                self.prepared(build_insert).execute(
                    conn, self.db.values(RESOURCES, updated.stored())
                )
            else:
                shape = (tuple(stamps), set_memory, set_metadata)
                self.prepared(build_update, *shape).execute(
                    conn,
                    {
                        "rid": resource_id,
                        "wm": working_memory,
                        "metadata": updated.metadata,
                        **stamps,
                    },
                )
            return updated

        try:
            return await self.db.run(update, write=True, short=True)
        except ConflictError:
            if not inserted:
                raise  # a failed compare-and-set
            # A concurrent first update created the row between our read and our insert (there
            # was no row to lock yet): run once more, now updating the row that exists.
            inserted = False
            return await self.db.run(update, write=True, short=True)

    async def _upsert_resource(
        self, resource_id: str, working_memory: str | None, now: Any
    ) -> Resource:
        """``update_resource`` without a metadata merge or an expected working memory, as one
        upsert (autocommit: one round trip): inserted as ``resource_after_update`` creates it
        when missing, else its working memory (when given) and updatedAt replaced; the stored
        row comes back with ``RETURNING``."""
        # The row resource_after_update(None, ...) creates, without building the record.
        created = {
            "id": resource_id, "workingMemory": working_memory, "metadata": None,
            "createdAt": now, "updatedAt": now,
        }
        row = self.db.values(RESOURCES, created)
        replaced = {"workingMemory"} if working_memory is not None else set()
        replaced.update(self.db.timestamp_values(RESOURCES, "updatedAt", now))
        columns = tuple(row)
        update = tuple(c for c in columns if c in replaced)

        def build(columns: tuple[str, ...], update: tuple[str, ...]) -> Executable:
            tbl = self.tables["resources"]
            bound = {c: sa.bindparam(c, type_=tbl.c[c].type) for c in columns}
            upsert: Any = self.db.dialect.upsert(tbl, [bound], ["id"], update)
            return upsert.returning(*self.db.readable(tbl, RESOURCES))  # type: ignore[no-any-return]

        stmt = self.prepared(build, columns, update)
        [stored] = stmt.mappings(await self.db.fetch(stmt, row, write=True))  # always its row
        return from_row(Resource, stored)
