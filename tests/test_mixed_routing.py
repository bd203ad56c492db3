"""One CompositeStore, two backends: memory in a SQLite file, observability in MongoDB.

The data is checked raw on both sides (sqlite3 on the file, pymongo on the database): each
domain's records land in its own backend and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from composite_store_conformance.cases import at

from composite_store import CompositeStore, Message, Span, Thread
from tests.support.servers import mongodb


@pytest.fixture(scope="module")
def mongo_url(request: pytest.FixtureRequest) -> str:
    return mongodb.session_url(request)


def _composite(tmp_path: Path, sqlite_path: Path, mongo_url: str) -> CompositeStore:
    empty = tmp_path / "composite-store.toml"
    empty.write_text("", encoding="utf-8")
    return CompositeStore(
        default=f"sqlite:///{sqlite_path}",
        domains={"observability": mongo_url},
        use_environment=False,
        config_file=empty,
    )


def test_memory_in_sqlite_and_observability_in_mongodb(tmp_path: Path, mongo_url: str) -> None:
    sqlite_path = tmp_path / "agent.db"

    async def scenario() -> None:
        async with _composite(tmp_path, sqlite_path, mongo_url) as store:
            routes = store.describe()
            assert routes["memory"].startswith("sqlite") and "agent.db" in routes["memory"]
            assert routes["observability"].startswith("mongodb")
            await store.memory.save_thread(
                thread=Thread(id="t1", resource_id="u1", title="mixed", created_at=at(0))
            )
            await store.memory.save_messages(
                messages=[
                    Message(id="m1", thread_id="t1", role="user", content="hi", created_at=at(1))
                ]
            )
            await store.observability.batch_create_spans(
                records=[
                    Span(
                        trace_id="tr1",
                        span_id="root",
                        name="agent run",
                        span_type="AGENT_RUN",
                        started_at=at(0),
                        ended_at=at(2),
                        thread_id="t1",
                        created_at=at(0),
                    ),
                    Span(
                        trace_id="tr1",
                        span_id="child",
                        parent_span_id="root",
                        name="model call",
                        span_type="MODEL_GENERATION",
                        started_at=at(1),
                        created_at=at(1),
                    ),
                ]
            )
            # Each domain reads back through the composite from its own backend.
            page = await store.observability.list_traces()
            assert [(s.trace_id, s.status) for s in page.items] == [("tr1", "success")]
            messages = await store.memory.list_messages(thread_id="t1")
            assert [m.id for m in messages.items] == ["m1"]

    asyncio.run(scenario())

    # SQLite holds the memory domain, and no span.
    with sqlite3.connect(sqlite_path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"mastra_threads", "mastra_messages"} <= tables
        threads = db.execute('SELECT id, "resourceId" FROM mastra_threads').fetchall()
        assert threads == [("t1", "u1")]
        (content,) = db.execute("SELECT content FROM mastra_messages WHERE id = 'm1'").fetchone()
        assert json.loads(content)["parts"] == [{"type": "text", "text": "hi"}]
        if "mastra_ai_spans" in tables:
            assert db.execute("SELECT COUNT(*) FROM mastra_ai_spans").fetchone() == (0,)

    # MongoDB holds the spans, with BSON dates, and no memory record.
    with mongodb.driver_database(mongo_url) as database:
        names = set(database.list_collection_names())
        assert "mastra_ai_spans" in names
        assert not names & {"mastra_threads", "mastra_messages", "mastra_resources"}
        spans = list(database["mastra_ai_spans"].find({}, {"_id": 0}).sort("spanId", 1))
        assert [(s["traceId"], s["spanId"], s["parentSpanId"]) for s in spans] == [
            ("tr1", "child", "root"),
            ("tr1", "root", None),
        ]
        assert spans[1]["startedAt"] == at(0) and spans[1]["threadId"] == "t1"


def test_memory_in_postgresql_and_observability_in_mongodb(
    request: pytest.FixtureRequest, tmp_path: Path, mongo_url: str
) -> None:
    """The README's routing example: PostgreSQL memory, MongoDB observability, one composite."""
    import psycopg  # the PostgreSQL adapter's driver

    from tests.support.servers import postgres

    pg_url = postgres.session_url(request)
    empty = tmp_path / "composite-store.toml"
    empty.write_text("", encoding="utf-8")

    async def scenario() -> None:
        store = CompositeStore(
            default="memory://",
            domains={"memory": pg_url, "observability": mongo_url},
            use_environment=False,
            config_file=empty,
        )
        async with store:
            routes = store.describe()
            assert routes["memory"].startswith("postgresql")
            assert routes["observability"].startswith("mongodb")
            await store.memory.save_thread(
                thread=Thread(id="pg-t1", resource_id="u1", title="mixed", created_at=at(0))
            )
            await store.memory.save_messages(
                messages=[
                    Message(
                        id="pg-m1", thread_id="pg-t1", role="user", content="hi", created_at=at(1)
                    )
                ]
            )
            await store.observability.create_span(
                span=Span(
                    trace_id="pg-tr1",
                    span_id="root",
                    name="agent run",
                    span_type="AGENT_RUN",
                    started_at=at(0),
                    ended_at=at(2),
                    thread_id="pg-t1",
                    created_at=at(0),
                )
            )
            page = await store.observability.list_traces(filters={"thread_id": "pg-t1"})
            assert [s.trace_id for s in page.items] == ["pg-tr1"]

    asyncio.run(scenario())

    # PostgreSQL holds the thread and message (and no span table rows).
    schema = pg_url.split("schema=", 1)[1].split("&", 1)[0]
    with psycopg.connect(pg_url.split("?", 1)[0].replace("postgresql+psycopg", "postgresql")) as pg:
        rows = pg.execute(
            f'SELECT id, "resourceId" FROM "{schema}".mastra_threads WHERE id = %s', ("pg-t1",)
        ).fetchall()
        assert rows == [("pg-t1", "u1")]
        spans = pg.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = %s AND table_name = 'mastra_ai_spans'",
            (schema,),
        ).fetchone()
        if spans and spans[0]:
            count = pg.execute(f'SELECT count(*) FROM "{schema}".mastra_ai_spans').fetchone()
            assert count == (0,)

    # MongoDB holds the span, and no memory collection.
    with mongodb.driver_database(mongo_url) as database:
        assert database["mastra_ai_spans"].count_documents({"traceId": "pg-tr1"}) == 1
        assert not set(database.list_collection_names()) & {"mastra_threads", "mastra_messages"}
