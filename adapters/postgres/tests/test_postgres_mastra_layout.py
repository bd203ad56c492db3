"""PostgreSQL's physical layout, read with raw SQL and held to DESIGN.md section 9 (sharing a
database with Mastra): column types, shadow timestamps, index and constraint names, content
and JSON forms, rows Mastra wrote, and values PostgreSQL cannot store.

The store's session runs in Asia/Tokyo, so timestamps stored in anything but UTC show up.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
import pytest
from composite_store_postgres import PostgresStore
from composite_store_postgres.dialect import PostgresDialect
from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

from composite_store import Message, Thread, ValidationError
from composite_store.schema import TABLES, ColumnType, tables_for
from tests.support.backends import unreachable
from tests.support.servers import postgres

T = TypeVar("T")
SESSION_TZ = "Asia/Tokyo"
WHEN = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


class Env:
    """The module's schema, store (on its own event loop) and raw connection."""

    def __init__(
        self, url: str, schema: str, store: PostgresStore, raw: psycopg.Connection
    ) -> None:
        self.url, self.schema, self.store, self.raw = url, schema, store, raw
        self.runner = asyncio.Runner()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.runner.run(coro)

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.raw.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def table(self, base: str) -> str:
        return f'"{self.schema}"."mastra_{base}"'


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    found = postgres.find()
    if isinstance(found, str):
        unreachable(postgres.BACKEND, found)
    schema = asyncio.run(create_namespace(found.url))
    url = store_url(found.url, schema) + f"&options=-c%20timezone%3D{SESSION_TZ}"
    raw = psycopg.connect(found.url.replace("postgresql+psycopg://", "postgresql://"),
                          autocommit=True)
    env = Env(url, schema, PostgresStore(url), raw)
    try:
        env.run(env.store.init())
        yield env
    finally:
        env.run(env.store.close())
        env.runner.close()
        raw.close()
        asyncio.run(drop_namespace(found.url, schema))


@pytest.fixture(autouse=True)
def empty(env: Env) -> None:
    for name in ("memory", "workflows"):
        env.run(env.store.domains[name].dangerously_clear_all())


def columns(env: Env, base: str) -> dict[str, tuple[str, str | None]]:
    """column -> (data_type, column_default) from information_schema."""
    rows = env.rows(
        "SELECT column_name, data_type, column_default FROM information_schema.columns "
        "WHERE table_schema = %s AND table_name = %s",
        env.schema,
        f"mastra_{base}",
    )
    return {name: (kind, default) for name, kind, default in rows}


# -- DDL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", ["memory", "workflows"])
def test_timestamps_are_naive_with_timestamptz_shadows(env: Env, domain: str) -> None:
    for spec in tables_for(domain):
        found = columns(env, spec.base_name)
        for name in spec.columns_of(ColumnType.TIMESTAMP):
            assert found[name][0] == "timestamp without time zone", (spec.base_name, name)
            shadow = ("timestamp with time zone", "now()")
            assert found[f"{name}Z"] == shadow, (spec.base_name, name)


@pytest.mark.parametrize("domain", ["memory", "workflows"])
def test_json_columns_are_jsonb_and_content_is_text(env: Env, domain: str) -> None:
    for spec in tables_for(domain):
        found = columns(env, spec.base_name)
        for name in spec.columns_of(ColumnType.JSON):
            assert found[name][0] == "jsonb", (spec.base_name, name)
        for name in spec.columns_of(ColumnType.TEXT):
            assert found[name][0] == "text", (spec.base_name, name)


def test_index_names_carry_the_schema_as_mastras_do(env: Env) -> None:
    # Outside schema public Mastra prefixes its index names with the schema (its idx_...
    # ones excepted); in public they carry none (tests/test_mastra_golden_schema.py).
    indexes = dict(env.rows(
        "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", env.schema
    ))
    assert 'USING btree ("resourceId", "createdAt" DESC)' in indexes[
        f"{env.schema}_mastra_threads_resourceid_createdat_idx"
    ]
    assert 'USING btree (thread_id, "createdAt" DESC)' in indexes[
        f"{env.schema}_mastra_messages_thread_id_createdat_idx"
    ]
    dialect = PostgresDialect()
    documented = {
        dialect.index_name(index, spec.name(), "mastra_", env.schema)
        for spec in TABLES
        if spec.domain in env.store.domains
        for index in spec.indexes_for("postgresql")
    } | {
        name
        for spec in TABLES
        if spec.domain in env.store.domains
        for key in spec.unique
        if (name := spec.unique_index_name(key)) is not None
    }
    # Primary keys and unique constraints own an index of their name; the rest are ours.
    constraints = {name for (name,) in env.rows(
        "SELECT c.conname FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
        "WHERE n.nspname = %s",
        env.schema,
    )}
    assert set(indexes) - constraints == documented


def test_snapshot_key_is_a_unique_constraint_named_after_the_schema(env: Env) -> None:
    rows = env.rows(
        "SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c "
        "JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
        "WHERE n.nspname = %s AND t.relname = 'mastra_workflow_snapshot' AND c.contype = 'u'",
        env.schema,
    )
    # Cut to PostgreSQL's 63 bytes, as PostgreSQL (and Mastra) cut a long schema's name.
    name = f"{env.schema}_mastra_workflow_snapshot_workflow_name_run_id_key"[:63]
    assert rows == [(name, "UNIQUE (workflow_name, run_id)")]
    # The name Mastra gives it in the default schema, as DESIGN.md section 9 quotes it.
    key = ("workflow_name", "run_id")
    assert (
        PostgresDialect().unique_name("mastra_workflow_snapshot", key, "public")
        == "public_mastra_workflow_snapshot_workflow_name_run_id_key"
    )


def test_schema_is_written_out_in_statements(env: Env) -> None:
    default = PostgresStore("postgresql://u@h/db")
    assert default.database.schema == "public"
    select = default.database.table("threads").select().compile(default.database.engine)
    assert "FROM public.mastra_threads" in str(select)


# -- rows --------------------------------------------------------------------------------------


def test_timestamps_hold_utc_whatever_the_session_time_zone(env: Env) -> None:
    session_tz = env.run(env.store.memory.db.run(
        lambda conn: conn.exec_driver_sql("SHOW timezone").scalar()
    ))
    assert session_tz == SESSION_TZ
    env.run(env.store.memory.save_thread(
        thread=Thread(id="t1", resource_id="u1", created_at=WHEN, updated_at=WHEN)
    ))
    naive, shadow = env.rows(
        f'SELECT "createdAt"::text, "createdAtZ" AT TIME ZONE \'UTC\' FROM {env.table("threads")}'
    )[0]
    assert naive == "2024-01-02 03:04:05.678"
    assert shadow == WHEN.replace(tzinfo=None)
    got = env.run(env.store.memory.get_thread_by_id(thread_id="t1"))
    assert got is not None and got.created_at == WHEN


def test_updates_write_both_timestamps(env: Env) -> None:
    env.run(env.store.memory.save_thread(
        thread=Thread(id="t1", resource_id="u1", created_at=WHEN, updated_at=WHEN)
    ))
    updated = env.run(env.store.memory.update_thread(id="t1", title="new", metadata={}))
    naive, shadow = env.rows(
        f'SELECT "updatedAt", "updatedAtZ" AT TIME ZONE \'UTC\' FROM {env.table("threads")}'
    )[0]
    assert naive == shadow == updated.updated_at.replace(tzinfo=None)
    assert updated.updated_at > WHEN


def test_content_is_compact_json_text_and_metadata_a_jsonb_object(env: Env) -> None:
    env.run(env.store.memory.save_thread(
        thread=Thread(id="t1", resource_id="u1", metadata={"tag": "ünï", "n": [1, 2]})
    ))
    content = {"format": 2, "parts": [{"type": "text", "text": "héllo 🙂, \"quoted\""}]}
    env.run(env.store.memory.save_messages(messages=[
        Message(id="m1", thread_id="t1", resource_id="u1", role="user", content=content)
    ]))
    stored, kind = env.rows(f"SELECT content, type FROM {env.table('messages')}")[0]
    assert stored == json.dumps(json.loads(stored), separators=(",", ":"), ensure_ascii=False)
    assert "héllo 🙂" in stored and json.loads(stored)["parts"] == content["parts"]
    assert kind == "v2"
    [(typeof, metadata)] = env.rows(
        f"SELECT jsonb_typeof(metadata), metadata FROM {env.table('threads')}"
    )
    assert (typeof, metadata) == ("object", {"tag": "ünï", "n": [1, 2]})


def test_reads_rows_mastra_wrote(env: Env) -> None:
    # Mastra's shapes: no shadow value, resource metadata as a JSONB string holding JSON text,
    # a legacy message whose content is a plain string.
    env.rows(
        f'INSERT INTO {env.table("threads")} (id, "resourceId", title, metadata, "createdAt", '
        '"updatedAt", "createdAtZ", "updatedAtZ") VALUES '
        "('t1', 'u1', 'from mastra', to_jsonb('{\"a\":1}'::text), %s, %s, NULL, NULL) "
        "RETURNING id",
        WHEN.replace(tzinfo=None),
        WHEN.replace(tzinfo=None),
    )
    env.rows(
        f'INSERT INTO {env.table("messages")} (id, thread_id, content, role, type, '
        '"createdAt", "createdAtZ", "resourceId") VALUES '
        "('m1', 't1', 'plain words', 'user', 'v2', %s, NULL, 'u1') RETURNING id",
        WHEN.replace(tzinfo=None),
    )
    thread = env.run(env.store.memory.get_thread_by_id(thread_id="t1"))
    assert thread is not None
    assert thread.metadata == {"a": 1} and thread.created_at == WHEN
    [message] = env.run(env.store.memory.list_messages(thread_id="t1")).items
    assert message.created_at == WHEN
    assert message.content.parts == [{"type": "text", "text": "plain words"}]


# -- values PostgreSQL cannot store --------------------------------------------------------------


@pytest.mark.parametrize(
    ("thread", "message"),
    [
        # Dicts: a Thread record refuses them itself (docs/input.md), before any store.
        ({"id": "t1", "resourceId": "u1", "metadata": {"k": "a\x00b"}}, r"U\+0000"),
        ({"id": "t1", "resourceId": "u1", "metadata": {"k\x00": 1}}, r"U\+0000"),
        ({"id": "t1", "resourceId": "u1", "title": "a\x00b"}, r"U\+0000"),
        ({"id": "t1", "resourceId": "u1", "metadata": {"k": "\ud83d"}}, r"lone surrogate U\+D83D"),
    ],
    ids=["nul-in-json-value", "nul-in-json-key", "nul-in-text", "lone-surrogate-in-json"],
)
def test_unstorable_text_is_refused_before_writing(
    env: Env, thread: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        env.run(env.store.memory.save_thread(thread=thread))
    assert env.rows(f"SELECT count(*) FROM {env.table('threads')}") == [(0,)]


def test_a_batch_with_an_unstorable_message_writes_nothing(env: Env) -> None:
    env.run(env.store.memory.save_thread(thread=Thread(id="t1", resource_id="u1")))
    good = Message(id="m1", thread_id="t1", resource_id="u1", role="user", content="fine")
    bad = {"id": "m2", "threadId": "t1", "resourceId": "u1", "role": "user", "content": "x \udc80"}
    with pytest.raises(ValidationError, match="lone surrogate"):
        env.run(env.store.memory.save_messages(messages=[good, bad]))  # type: ignore[list-item]
    assert env.rows(f"SELECT count(*) FROM {env.table('messages')}") == [(0,)]
    # NUL inside message text is escaped in the JSON text, which TEXT stores: not refused.
    nul = Message(id="m3", thread_id="t1", resource_id="u1", role="user", content="a\x00b")
    env.run(env.store.memory.save_messages(messages=[nul]))
    [got] = env.run(env.store.memory.list_messages(thread_id="t1")).items
    assert got.content.parts == [{"type": "text", "text": "a\x00b"}]


# -- dangerously_clear_all -----------------------------------------------------------------------


def _relfilenode(env: Env, base: str) -> int:
    [(node,)] = env.rows(f"SELECT pg_relation_filenode('{env.table(base)}')")
    return int(node)


def _fill_messages(env: Env, count: int) -> None:
    env.run(env.store.memory.save_thread(thread=Thread(id="t1", resource_id="u1")))
    env.run(
        env.store.memory.save_messages(
            messages=[
                Message(id=f"m{i:05d}", thread_id="t1", resource_id="u1", role="user", content="x")
                for i in range(count)
            ]
        )
    )


def test_clearing_truncates_large_tables_and_deletes_small_ones(env: Env) -> None:
    """A table of TRUNCATE_FROM_ROWS rows or more is truncated (a new file: no dead rows left
    for the next reads of the same keys), a smaller one keeps its file (rows deleted)."""
    from composite_store_postgres.dialect import TRUNCATE_FROM_ROWS

    _fill_messages(env, TRUNCATE_FROM_ROWS)
    messages, threads = _relfilenode(env, "messages"), _relfilenode(env, "threads")
    env.run(env.store.memory.dangerously_clear_all())
    assert env.rows(f"SELECT count(*) FROM {env.table('messages')}") == [(0,)]
    assert env.rows(f"SELECT count(*) FROM {env.table('threads')}") == [(0,)]
    assert _relfilenode(env, "messages") != messages  # truncated
    assert _relfilenode(env, "threads") == threads  # one row: deleted


def test_clearing_behind_another_sessions_lock_deletes_instead_of_waiting(env: Env) -> None:
    """TRUNCATE waits for every other session's lock on the table; behind a reader's open
    transaction the clear gives up waiting after lock_timeout and deletes the rows."""
    from composite_store_postgres.dialect import TRUNCATE_FROM_ROWS

    _fill_messages(env, TRUNCATE_FROM_ROWS)
    messages = _relfilenode(env, "messages")
    reader = psycopg.connect(env.raw.info.dsn)
    try:
        reader.execute(f"SELECT 1 FROM {env.table('messages')} LIMIT 1")  # holds ACCESS SHARE
        env.run(asyncio.wait_for(env.store.memory.dangerously_clear_all(), timeout=20))
    finally:
        reader.close()
    assert env.rows(f"SELECT count(*) FROM {env.table('messages')}") == [(0,)]
    assert _relfilenode(env, "messages") == messages  # deleted, not truncated
