"""The memory domain in SQL, written once for every relational backend."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from composite_store.domains.memory import UNSET, MemoryDomain, MessageQuery, ThreadQuery
from composite_store.errors import ConflictError, NotFoundError
from composite_store.merge import shallow_merge
from composite_store.records.memory import Message, MessageContent, Resource, Thread
from composite_store.schema import table
from composite_store.sql.domain import SqlDomain, from_row
from composite_store.types import DateRange

__all__ = ["SqlMemory"]

THREADS, MESSAGES, RESOURCES = table("threads"), table("messages"), table("resources")


def _message(row: RowMapping) -> Message:
    return from_row(Message, row, content=MessageContent.from_stored(row["content"]))


def _dated(column: Any, rng: DateRange | None) -> list[Any]:
    conditions = []
    if rng is not None:
        if rng.start is not None:
            conditions.append(column > rng.start if rng.start_exclusive else column >= rng.start)
        if rng.end is not None:
            conditions.append(column < rng.end if rng.end_exclusive else column <= rng.end)
    return conditions


class SqlMemory(SqlDomain, MemoryDomain):
    """Threads, messages and resources on a relational backend."""

    # -- helpers ---------------------------------------------------------------------------------

    def _select(self, base: str) -> sa.Select[Any]:
        tbl = self.t(base)
        return sa.select(*self.db.readable(tbl, table(base)))

    def _locked(self, stmt: sa.Select[Any]) -> sa.Select[Any]:
        return stmt.with_for_update() if self.db.dialect.supports_for_update else stmt

    def _thread_row(self, conn: Connection, thread_id: str, *, lock: bool = False) -> Thread | None:
        stmt = self._select("threads").where(self.t("threads").c.id == thread_id)
        row = conn.execute(self._locked(stmt) if lock else stmt).mappings().first()
        return from_row(Thread, row) if row is not None else None

    def _touch_threads(self, conn: Connection, thread_ids: set[str], now: datetime) -> None:
        if thread_ids:
            threads = self.t("threads")
            conn.execute(
                threads.update()
                .where(threads.c.id.in_(sorted(thread_ids)))
                .values(self.db.timestamp_values(THREADS, "updatedAt", now))
            )

    # -- threads ---------------------------------------------------------------------------------

    async def _get_thread(self, thread_id: str) -> Thread | None:
        return await self.db.run(lambda conn: self._thread_row(conn, thread_id))

    async def _save_thread(self, thread: Thread) -> None:
        stored = thread.stored()
        tbl = self.t("threads")
        row = self.db.values(THREADS, stored)
        stmt = self.db.dialect.upsert(tbl, [row], ["id"], [c for c in row if c != "id"])
        await self.db.run(lambda conn: conn.execute(stmt), write=True)

    async def _update_thread(
        self,
        thread_id: str,
        *,
        title: str | None,
        metadata: dict[str, Any] | None,
        updated_at: Any,
        expected_working_memory: Any,
    ) -> Thread | None:
        def update(conn: Connection) -> Thread | None:
            current = self._thread_row(conn, thread_id, lock=True)
            if current is None:
                return None
            if expected_working_memory is not UNSET:
                stored_wm = (current.metadata or {}).get("workingMemory")
                if stored_wm != expected_working_memory:
                    raise ConflictError(
                        f"working memory of thread {thread_id!r} changed since it was read"
                    )
            merged = shallow_merge(current.metadata, metadata)
            new_title = title if title is not None else current.title
            tbl = self.t("threads")
            conn.execute(
                tbl.update()
                .where(tbl.c.id == thread_id)
                .values(
                    title=new_title,
                    metadata=merged,
                    **self.db.timestamp_values(THREADS, "updatedAt", updated_at),
                )
            )
            return current.model_copy(
                update={"title": new_title, "metadata": merged, "updated_at": updated_at}
            )

        return await self.db.run(update, write=True)

    async def _delete_thread(self, thread_id: str) -> None:
        messages, threads = self.t("messages"), self.t("threads")

        def delete(conn: Connection) -> None:
            conn.execute(messages.delete().where(messages.c.thread_id == thread_id))
            conn.execute(threads.delete().where(threads.c.id == thread_id))

        await self.db.run(delete, write=True)

    async def _list_threads(self, query: ThreadQuery) -> tuple[list[Thread], int | None]:
        tbl = self.t("threads")
        where = []
        if query.resource_id is not None:
            where.append(tbl.c.resourceId == query.resource_id)
        for key, value in query.metadata.items():
            where.append(self.db.dialect.json_equals(tbl.c.metadata, key, value))
        order = tbl.c[query.order_field]
        stmt = (
            self._select("threads")
            .where(*where)
            .order_by(
                order.desc() if query.descending else order.asc(),
                tbl.c.id.desc() if query.descending else tbl.c.id.asc(),
            )
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.limit + 1)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        def read(conn: Connection) -> tuple[list[Thread], int | None]:
            rows = [from_row(Thread, r) for r in conn.execute(stmt).mappings()]
            total = conn.execute(count).scalar_one() if query.count else None
            return rows, total

        return await self.db.run(read)

    # -- messages --------------------------------------------------------------------------------

    async def _list_messages(self, query: MessageQuery) -> tuple[list[Message], int | None]:
        tbl = self.t("messages")
        where = [
            tbl.c.thread_id == query.thread_ids[0]
            if len(query.thread_ids) == 1
            else tbl.c.thread_id.in_(query.thread_ids)
        ]
        if query.resource_id is not None:
            where.append(tbl.c.resourceId == query.resource_id)
        where.extend(_dated(tbl.c.createdAt, query.date_range))
        if query.descending:
            ordering = (tbl.c.createdAt.desc(), tbl.c.id.desc())
        else:
            ordering = (tbl.c.createdAt.asc(), tbl.c.id.asc())
        stmt = self._select("messages").where(*where).order_by(*ordering)
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.limit + 1)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        def read(conn: Connection) -> tuple[list[Message], int | None]:
            rows = [_message(r) for r in conn.execute(stmt).mappings()]
            total = conn.execute(count).scalar_one() if query.count else None
            return rows, total

        return await self.db.run(read)

    async def _message_window(self, message_id: str, before: int, after: int) -> list[Message]:
        tbl = self.t("messages")

        def read(conn: Connection) -> list[Message]:
            target = (
                conn.execute(self._select("messages").where(tbl.c.id == message_id))
                .mappings()
                .first()
            )
            if target is None:
                return []
            found = [_message(target)]
            at, tid = found[0].created_at, found[0].thread_id
            same = tbl.c.thread_id == tid
            if before:
                earlier = sa.or_(
                    tbl.c.createdAt < at, sa.and_(tbl.c.createdAt == at, tbl.c.id < message_id)
                )
                stmt = (
                    self._select("messages")
                    .where(same, earlier)
                    .order_by(tbl.c.createdAt.desc(), tbl.c.id.desc())
                    .limit(before)
                )
                found.extend(_message(r) for r in conn.execute(stmt).mappings())
            if after:
                later = sa.or_(
                    tbl.c.createdAt > at, sa.and_(tbl.c.createdAt == at, tbl.c.id > message_id)
                )
                stmt = (
                    self._select("messages")
                    .where(same, later)
                    .order_by(tbl.c.createdAt.asc(), tbl.c.id.asc())
                    .limit(after)
                )
                found.extend(_message(r) for r in conn.execute(stmt).mappings())
            return found

        return await self.db.run(read)

    async def _get_messages(self, message_ids: Sequence[str]) -> list[Message]:
        tbl = self.t("messages")
        stmt = self._select("messages").where(tbl.c.id.in_(list(message_ids)))
        return await self.db.run(lambda conn: [_message(r) for r in conn.execute(stmt).mappings()])

    async def _save_messages(self, messages: Sequence[Message], now: Any) -> None:
        tbl, threads = self.t("messages"), self.t("threads")
        rows = []
        for m in messages:
            stored = m.stored()
            stored["content"] = m.content.to_json()
            rows.append(self.db.values(MESSAGES, stored))
        targets = {m.thread_id for m in messages}
        ids = [m.id for m in messages]
        stmt = self.db.dialect.upsert(tbl, rows, ["id"], [c for c in rows[0] if c != "id"])

        def save(conn: Connection) -> None:
            existing = set(
                conn.execute(
                    sa.select(threads.c.id).where(threads.c.id.in_(sorted(targets)))
                ).scalars()
            )
            missing = targets - existing
            if missing:
                raise NotFoundError(f"thread(s) not found: {sorted(missing)}")
            previous = set(
                conn.execute(
                    sa.select(tbl.c.thread_id).where(tbl.c.id.in_(ids)).distinct()
                ).scalars()
            )
            conn.execute(stmt)
            self._touch_threads(conn, targets | previous, now)

        await self.db.run(save, write=True)

    async def _delete_messages(self, message_ids: Sequence[str], now: Any) -> None:
        tbl = self.t("messages")
        ids = list(message_ids)

        def delete(conn: Connection) -> None:
            touched = set(
                conn.execute(
                    sa.select(tbl.c.thread_id).where(tbl.c.id.in_(ids)).distinct()
                ).scalars()
            )
            conn.execute(tbl.delete().where(tbl.c.id.in_(ids)))
            self._touch_threads(conn, touched, now)

        await self.db.run(delete, write=True)

    # -- resources -------------------------------------------------------------------------------

    def _resource_row(
        self, conn: Connection, resource_id: str, *, lock: bool = False
    ) -> Resource | None:
        stmt = self._select("resources").where(self.t("resources").c.id == resource_id)
        row = conn.execute(self._locked(stmt) if lock else stmt).mappings().first()
        return from_row(Resource, row) if row is not None else None

    async def _get_resource(self, resource_id: str) -> Resource | None:
        return await self.db.run(lambda conn: self._resource_row(conn, resource_id))

    async def _save_resource(self, resource: Resource) -> None:
        row = self.db.values(RESOURCES, resource.stored())
        stmt = self.db.dialect.upsert(
            self.t("resources"), [row], ["id"], [c for c in row if c != "id"]
        )
        await self.db.run(lambda conn: conn.execute(stmt), write=True)

    async def _update_resource(
        self,
        resource_id: str,
        *,
        working_memory: str | None,
        metadata: dict[str, Any] | None,
        now: Any,
        expected_working_memory: Any,
    ) -> Resource:
        tbl = self.t("resources")

        def update(conn: Connection) -> Resource:
            current = self._resource_row(conn, resource_id, lock=True)
            stored_wm = current.working_memory if current is not None else None
            if expected_working_memory is not UNSET and stored_wm != expected_working_memory:
                raise ConflictError(
                    f"working memory of resource {resource_id!r} changed since it was read"
                )
            if current is None:
                created = Resource.model_construct(
                    id=resource_id,
                    working_memory=working_memory,
                    metadata=metadata,
                    created_at=now,
                    updated_at=now,
                )
                conn.execute(tbl.insert().values(self.db.values(RESOURCES, created.stored())))
                return created
            values: dict[str, Any] = self.db.timestamp_values(RESOURCES, "updatedAt", now)
            if working_memory is not None:
                values["workingMemory"] = working_memory
            merged = shallow_merge(current.metadata, metadata)
            if metadata is not None:
                values["metadata"] = merged
            conn.execute(tbl.update().where(tbl.c.id == resource_id).values(values))
            return current.model_copy(
                update={
                    "working_memory": working_memory if working_memory is not None else stored_wm,
                    "metadata": merged,
                    "updated_at": now,
                }
            )

        return await self.db.run(update, write=True)
