"""The raw contender on SQLite: stdlib ``sqlite3`` doing the library's logical work by hand.

Same file layout (tables created by the library), same pragmas (WAL, busy timeout,
synchronous=NORMAL), same transactions (BEGIN IMMEDIATE for writes), same statements' shape
(upsert, thread existence check, previous-thread lookup, updatedAt bumps), the same JSON and
timestamp encodings, and the same async mode: one hop to one worker thread per operation.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from bench.targets.base import Msg, SpanRow, Target
from composite_store.schema import ColumnType, table

T = TypeVar("T")


def ts(value: datetime) -> str:
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def now() -> str:
    return ts(datetime.now(UTC))


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


_SPANS = table("ai_spans")
SPAN_COLUMNS = _SPANS.column_names
SPAN_JSON = set(_SPANS.columns_of(ColumnType.JSON))
SPAN_TIMES = set(_SPANS.columns_of(ColumnType.TIMESTAMP))
MESSAGE_COLUMNS = '"id", "thread_id", "content", "role", "type", "createdAt", "resourceId"'


class RawSqliteTarget(Target):
    kind = "raw"

    def __init__(self, path: str, prefix: str = "mastra_") -> None:
        self.path = path
        self.p = prefix
        self.conn: sqlite3.Connection | None = None
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="raw-sqlite")

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        assert self.conn is not None
        conn = self.conn
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, conn)

    async def open(self) -> None:
        def connect(_: Any) -> sqlite3.Connection:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=5000")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn

        self.conn = await asyncio.get_running_loop().run_in_executor(self.executor, connect, None)

    async def close(self) -> None:
        if self.conn is not None:
            await self._run(lambda c: c.close())
        self.executor.shutdown()

    async def reset(self) -> None:
        def clear(c: sqlite3.Connection) -> None:
            c.execute("BEGIN IMMEDIATE")
            existing = {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
            for table in ("threads", "messages", "resources", "workflow_snapshot", "ai_spans"):
                if f"{self.p}{table}" in existing:
                    c.execute(f'DELETE FROM "{self.p}{table}"')
            c.execute("COMMIT")

        await self._run(clear)

    async def save_thread(self, thread_id: str, resource_id: str, created_at: datetime) -> None:
        sql = (
            f'INSERT INTO "{self.p}threads" ("id", "resourceId", "title", "metadata", "createdAt",'
            ' "updatedAt") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT ("id") DO UPDATE SET'
            ' "resourceId" = excluded."resourceId", "title" = excluded."title",'
            ' "metadata" = excluded."metadata", "createdAt" = excluded."createdAt",'
            ' "updatedAt" = excluded."updatedAt"'
        )
        stamp = ts(created_at)

        def save(c: sqlite3.Connection) -> None:
            c.execute("BEGIN IMMEDIATE")
            c.execute(sql, (thread_id, resource_id, "bench", None, stamp, stamp))
            c.execute("COMMIT")

        await self._run(save)

    async def save_messages(self, messages: list[Msg]) -> None:
        rows = [
            (m.id, m.thread_id, dumps(m.content), m.role, "v2", ts(m.created_at), m.resource_id)
            for m in messages
        ]
        ids = [m.id for m in messages]
        threads = sorted({m.thread_id for m in messages})
        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(rows))
        insert = (
            f'INSERT INTO "{self.p}messages" ({MESSAGE_COLUMNS}) VALUES {values} '
            'ON CONFLICT ("id") DO UPDATE SET "thread_id" = excluded."thread_id", '
            '"content" = excluded."content", "role" = excluded."role", "type" = excluded."type", '
            '"createdAt" = excluded."createdAt", "resourceId" = excluded."resourceId"'
        )
        flat = [v for row in rows for v in row]
        marks = lambda n: ", ".join("?" * n)  # noqa: E731

        def save(c: sqlite3.Connection) -> None:
            c.execute("BEGIN IMMEDIATE")
            try:
                found = {
                    r[0]
                    for r in c.execute(
                        f'SELECT "id" FROM "{self.p}threads" WHERE "id" IN ({marks(len(threads))})',
                        threads,
                    )
                }
                if len(found) != len(threads):
                    raise LookupError("thread not found")
                previous = {
                    r[0]
                    for r in c.execute(
                        f'SELECT DISTINCT "thread_id" FROM "{self.p}messages" '
                        f'WHERE "id" IN ({marks(len(ids))})',
                        ids,
                    )
                }
                c.execute(insert, flat)
                touched = sorted(set(threads) | previous)
                c.execute(
                    f'UPDATE "{self.p}threads" SET "updatedAt" = ? '
                    f'WHERE "id" IN ({marks(len(touched))})',
                    [now(), *touched],
                )
            except BaseException:
                c.execute("ROLLBACK")
                raise
            c.execute("COMMIT")

        await self._run(save)

    def _rows(self, c: sqlite3.Connection, sql: str, args: list[Any]) -> list[tuple[Any, ...]]:
        rows = c.execute(sql, args).fetchall()
        for row in rows:
            json.loads(row[2])  # the library parses content; so does the baseline
            datetime.fromisoformat(row[5])
        return rows

    async def newest(self, thread_id: str, n: int) -> list[str]:
        sql = (
            f'SELECT {MESSAGE_COLUMNS} FROM "{self.p}messages" WHERE "thread_id" = ? '
            'ORDER BY "createdAt" DESC, "id" DESC LIMIT ? OFFSET 0'
        )

        def read(c: sqlite3.Connection) -> list[str]:
            c.execute("BEGIN")
            rows = self._rows(c, sql, [thread_id, n + 1])
            c.execute("COMMIT")
            return [r[0] for r in rows[:n]]

        return await self._run(read)

    async def newest_with_window(
        self, thread_id: str, n: int, message_id: str, before: int, after: int
    ) -> list[str]:
        p = self.p
        page_sql = (
            f'SELECT {MESSAGE_COLUMNS} FROM "{p}messages" WHERE "thread_id" = ? '
            'ORDER BY "createdAt" DESC, "id" DESC LIMIT ? OFFSET 0'
        )
        target_sql = f'SELECT {MESSAGE_COLUMNS} FROM "{p}messages" WHERE "id" = ?'
        before_sql = (
            f'SELECT {MESSAGE_COLUMNS} FROM "{p}messages" WHERE "thread_id" = ? AND '
            '("createdAt" < ? OR ("createdAt" = ? AND "id" < ?)) '
            'ORDER BY "createdAt" DESC, "id" DESC LIMIT ?'
        )
        after_sql = (
            f'SELECT {MESSAGE_COLUMNS} FROM "{p}messages" WHERE "thread_id" = ? AND '
            '("createdAt" > ? OR ("createdAt" = ? AND "id" > ?)) '
            'ORDER BY "createdAt" ASC, "id" ASC LIMIT ?'
        )

        def read(c: sqlite3.Connection) -> list[str]:
            c.execute("BEGIN")
            rows = self._rows(c, page_sql, [thread_id, n + 1])[:n]
            c.execute("COMMIT")
            c.execute("BEGIN")
            extra = self._rows(c, target_sql, [message_id])
            if extra:
                _, tid, _, _, _, at, _ = extra[0]
                extra += self._rows(c, before_sql, [tid, at, at, message_id, before])
                extra += self._rows(c, after_sql, [tid, at, at, message_id, after])
            c.execute("COMMIT")
            merged = {r[0]: r for r in rows}
            for r in extra:
                merged.setdefault(r[0], r)
            ordered = sorted(merged.values(), key=lambda r: (r[5], r[0]), reverse=True)
            return [r[0] for r in ordered]

        return await self._run(read)

    async def thread_page(self, resource_id: str, page: int, per_page: int) -> list[str]:
        p = self.p
        sql = (
            f'SELECT "id", "resourceId", "title", "metadata", "createdAt", "updatedAt" '
            f'FROM "{p}threads" WHERE "resourceId" = ? ORDER BY "createdAt" DESC, "id" DESC '
            "LIMIT ? OFFSET ?"
        )
        count = f'SELECT count(*) FROM "{p}threads" WHERE "resourceId" = ?'

        def read(c: sqlite3.Connection) -> list[str]:
            c.execute("BEGIN")
            rows = c.execute(sql, [resource_id, per_page + 1, page * per_page]).fetchall()
            for r in rows:
                datetime.fromisoformat(r[4])
                datetime.fromisoformat(r[5])
            c.execute(count, [resource_id]).fetchone()
            c.execute("COMMIT")
            return [r[0] for r in rows[:per_page]]

        return await self._run(read)

    async def update_working_memory(self, resource_id: str, text: str) -> None:
        p = self.p

        def update(c: sqlite3.Connection) -> None:
            stamp = now()
            c.execute("BEGIN IMMEDIATE")
            row = c.execute(
                f'SELECT "id", "workingMemory", "metadata", "createdAt", "updatedAt" '
                f'FROM "{p}resources" WHERE "id" = ?',
                [resource_id],
            ).fetchone()
            if row is None:
                c.execute(
                    f'INSERT INTO "{p}resources" ("id", "workingMemory", "metadata", "createdAt",'
                    ' "updatedAt") VALUES (?, ?, ?, ?, ?)',
                    [resource_id, text, None, stamp, stamp],
                )
            else:
                c.execute(
                    f'UPDATE "{p}resources" SET "updatedAt" = ?, "workingMemory" = ? '
                    'WHERE "id" = ?',
                    [stamp, text, resource_id],
                )
            c.execute("COMMIT")

        await self._run(update)

    async def get_working_memory(self, resource_id: str) -> str | None:
        sql = (
            f'SELECT "id", "workingMemory", "metadata", "createdAt", "updatedAt" '
            f'FROM "{self.p}resources" WHERE "id" = ?'
        )

        def read(c: sqlite3.Connection) -> str | None:
            c.execute("BEGIN")
            row = c.execute(sql, [resource_id]).fetchone()
            c.execute("COMMIT")
            if row is None:
                return None
            datetime.fromisoformat(row[3])
            return str(row[1]) if row[1] is not None else None

        return await self._run(read)

    async def save_snapshot(self, name: str, run_id: str, snapshot: dict[str, Any]) -> None:
        sql = (
            f'INSERT INTO "{self.p}workflow_snapshot" ("workflow_name", "run_id", "resourceId", '
            '"snapshot", "createdAt", "updatedAt") VALUES (?, ?, ?, ?, ?, ?) '
            'ON CONFLICT ("workflow_name", "run_id") DO UPDATE SET '
            '"resourceId" = excluded."resourceId", "snapshot" = excluded."snapshot", '
            '"updatedAt" = excluded."updatedAt"'
        )
        body = dumps(snapshot)

        def save(c: sqlite3.Connection) -> None:
            stamp = now()
            c.execute("BEGIN IMMEDIATE")
            c.execute(sql, [name, run_id, None, body, stamp, stamp])
            c.execute("COMMIT")

        await self._run(save)

    async def load_snapshot(self, name: str, run_id: str) -> dict[str, Any] | None:
        sql = (
            f'SELECT "workflow_name", "run_id", "resourceId", "snapshot", "createdAt", '
            f'"updatedAt" FROM "{self.p}workflow_snapshot" WHERE "run_id" = ? '
            'AND "workflow_name" = ? ORDER BY "createdAt" DESC LIMIT 1'
        )

        def read(c: sqlite3.Connection) -> dict[str, Any] | None:
            c.execute("BEGIN")
            row = c.execute(sql, [run_id, name]).fetchone()
            c.execute("COMMIT")
            if row is None:
                return None
            value: dict[str, Any] = json.loads(row[3])
            return value

        return await self._run(read)

    async def save_spans(self, spans: list[SpanRow]) -> None:
        names = SPAN_COLUMNS
        values = ", ".join(["(" + ", ".join("?" * len(names)) + ")"] * len(spans))
        quoted = ", ".join(f'"{n}"' for n in names)
        updates = ", ".join(
            f'"{n}" = excluded."{n}"' for n in names if n not in ("traceId", "spanId")
        )
        sql = (
            f'INSERT INTO "{self.p}ai_spans" ({quoted}) VALUES {values} '
            f'ON CONFLICT ("traceId", "spanId") DO UPDATE SET {updates}'
        )
        stamp = now()
        params: list[Any] = []
        for sp in spans:
            row = dict.fromkeys(names)
            row.update(
                traceId=sp.trace_id, spanId=sp.span_id, parentSpanId=sp.parent_span_id,
                name=sp.name, spanType=sp.span_type, isEvent=0, startedAt=ts(sp.started_at),
                endedAt=ts(sp.ended_at) if sp.ended_at else None,
                attributes=dumps(sp.attributes), input=dumps(sp.input), output=dumps(sp.output),
                createdAt=stamp, updatedAt=stamp,
            )
            params.extend(row[n] for n in names)

        def save(c: sqlite3.Connection) -> None:
            c.execute("BEGIN IMMEDIATE")
            c.execute(sql, params)
            c.execute("COMMIT")

        await self._run(save)

    async def read_trace(self, trace_id: str) -> int:
        quoted = ", ".join(f'"{n}"' for n in SPAN_COLUMNS)
        sql = (
            f'SELECT {quoted} FROM "{self.p}ai_spans" WHERE "traceId" = ? '
            'ORDER BY "startedAt" ASC, "spanId" ASC'
        )
        json_at = [i for i, n in enumerate(SPAN_COLUMNS) if n in SPAN_JSON]
        time_at = [i for i, n in enumerate(SPAN_COLUMNS) if n in SPAN_TIMES]

        def read(c: sqlite3.Connection) -> int:
            c.execute("BEGIN")
            rows = c.execute(sql, [trace_id]).fetchall()
            c.execute("COMMIT")
            for row in rows:
                for i in json_at:
                    if row[i] is not None:
                        json.loads(row[i])
                for i in time_at:
                    if row[i] is not None:
                        datetime.fromisoformat(row[i])
            return len(rows)

        return await self._run(read)
