"""``composite-store inspect``: routing, reachability, versions, drift with working fixes, rows.

The fixes it prints are run as printed, and inspect must then report no drift.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from composite_store import cli, open_store
from composite_store.records import Thread


def _inspect(target: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    status = cli.main(["inspect", target, "--json"])
    return status, json.loads(capsys.readouterr().out)


def _fresh(url: str) -> None:
    async def create() -> None:
        async with open_store(url) as store:
            await store.memory.save_thread(thread=Thread(id="t1", resource_id="u", title="x"))

    asyncio.run(create())


def test_a_current_store_is_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'ok.db'}"
    _fresh(url)
    assert cli.main(["inspect", url]) == 0
    text = capsys.readouterr().out
    assert "schema version  4, current" in text
    assert "rows            threads 1, messages 0, resources 0" in text
    assert "7 of 7 domain(s) reachable, initialized, current and without drift" in text
    status, report = _inspect(url, capsys)
    assert status == 0 and report["ok"]
    memory = report["domains"]["memory"]
    assert memory["reachable"] and memory["schema_version"] == 4 and memory["drift"] == []
    assert memory["rows"] == {"threads": 1, "messages": 0, "resources": 0}


def _damaged(path: Path, *statements: str) -> str:
    """The URL of a fresh SQLite store at ``path`` after ``statements`` ran on it."""
    url = f"sqlite:///{path}"
    _fresh(url)
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    return url


def _fixed(url: str, fixes: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Run the printed ``fixes`` as printed: inspect must then find no drift."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        for fix in fixes:
            db.executescript(fix)
    status, report = _inspect(url, capsys)
    assert status == 0, report


def test_drift_is_reported_with_fixes_that_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = _damaged(
        tmp_path / "drift.db",
        "DROP INDEX mastra_ai_spans_started_at_idx",
        "ALTER TABLE mastra_threads DROP COLUMN metadata",
        "ALTER TABLE mastra_threads ADD COLUMN colour TEXT",
    )
    status, report = _inspect(url, capsys)
    assert status == 1 and not report["ok"]
    memory = {d["kind"]: d for d in report["domains"]["memory"]["drift"]}
    assert set(memory) == {"missing column", "extra column"}
    assert memory["missing column"]["fix"] == "ALTER TABLE mastra_threads ADD COLUMN metadata TEXT"
    assert memory["extra column"]["fix"].startswith("ALTER TABLE mastra_threads DROP COLUMN colour")
    [index] = report["domains"]["observability"]["drift"]
    assert index["kind"] == "missing index"
    assert index["fix"] == (
        'CREATE INDEX mastra_ai_spans_started_at_idx ON mastra_ai_spans ("startedAt" DESC)'
    )
    _fixed(url, [finding["fix"] for finding in [*memory.values(), index]], capsys)


def test_a_missing_message_index_is_fixed_with_mastras_on_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # On SQLite the documented (thread_id, createdAt DESC) index is Mastra's
    # idx_messages_thread_created_at: without it, the fix creates that one, not a second.
    url = _damaged(tmp_path / "no-message-index.db", "DROP INDEX idx_messages_thread_created_at")
    status, report = _inspect(url, capsys)
    [finding] = report["domains"]["memory"]["drift"]
    assert status == 1 and finding["kind"] == "missing index"
    assert finding["fix"] == (
        'CREATE INDEX idx_messages_thread_created_at ON mastra_messages (thread_id, "createdAt")'
    )
    _fixed(url, [finding["fix"]], capsys)


def test_sqlite_says_what_alter_table_cannot_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "strict.db"
    with sqlite3.connect(path) as db:
        # A threads table whose metadata refuses NULL (documented nullable).
        db.execute(
            'CREATE TABLE mastra_threads (id TEXT PRIMARY KEY, "resourceId" TEXT NOT NULL, '
            'title TEXT NOT NULL, metadata TEXT NOT NULL, "createdAt" TEXT NOT NULL, '
            '"updatedAt" TEXT NOT NULL)'
        )
    status, report = _inspect(f"sqlite:///{path}", capsys)
    assert status == 1
    drift = {(d["kind"], d["table"]): d for d in report["domains"]["memory"]["drift"]}
    assert drift[("nullability", "threads")]["fix"].startswith(
        "-- sqlite cannot change the type or nullability of metadata of an existing table"
    )
    assert drift[("missing table", "messages")]["fix"].startswith("CREATE TABLE mastra_messages")
    # Inspecting created nothing: the missing tables are still missing.
    with sqlite3.connect(path) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert names == {"mastra_threads"}
    assert report["domains"]["memory"]["rows"] == {
        "threads": 0,
        "messages": None,
        "resources": None,
    }


def test_a_config_file_shows_routing_and_hides_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory_url = f"sqlite:///{tmp_path / 'memory.db'}"
    _fresh(memory_url)
    config = tmp_path / "composite-store.toml"
    config.write_text(
        f'default = "memory://"\n[domains]\nmemory = "{memory_url}"\n'
        'scores = "postgresql://agent:s3cret@127.0.0.1:1/db?connect_timeout=2"\n'
    )
    status = cli.main(["inspect", str(config)])
    text = capsys.readouterr().out
    assert status == 1
    assert "s3cret" not in text and "***" in text
    assert f"  memory                sqlite {memory_url}" in text
    assert "scores  (postgresql" in text and "reachable       NO" in text
    assert "6 of 7 domain(s) reachable, initialized, current and without drift" in text


def test_a_database_mastra_created_is_not_drift(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """Mastra's PostgreSQL tables (naive timestamps plus TIMESTAMPTZ shadows, its index names)
    are the documented schema: inspect reports no drift for them."""
    import psycopg

    from tests.support.servers import postgres

    url = postgres.session_url(request)
    schema = url.split("schema=")[1].split("&")[0]
    found = postgres.find()
    assert not isinstance(found, str)
    ddl = f"""
    CREATE TABLE "{schema}".mastra_threads (id TEXT NOT NULL PRIMARY KEY,
      "resourceId" TEXT NOT NULL, title TEXT NOT NULL, metadata JSONB,
      "createdAt" TIMESTAMP NOT NULL, "updatedAt" TIMESTAMP NOT NULL,
      "createdAtZ" TIMESTAMPTZ DEFAULT NOW(), "updatedAtZ" TIMESTAMPTZ DEFAULT NOW());
    CREATE TABLE "{schema}".mastra_messages (id TEXT NOT NULL PRIMARY KEY,
      thread_id TEXT NOT NULL, content TEXT NOT NULL, role TEXT NOT NULL, type TEXT NOT NULL,
      "createdAt" TIMESTAMP NOT NULL, "resourceId" TEXT,
      "createdAtZ" TIMESTAMPTZ DEFAULT NOW());
    CREATE TABLE "{schema}".mastra_resources (id TEXT NOT NULL PRIMARY KEY,
      "workingMemory" TEXT, metadata JSONB, "createdAt" TIMESTAMP NOT NULL,
      "updatedAt" TIMESTAMP NOT NULL, "createdAtZ" TIMESTAMPTZ DEFAULT NOW(),
      "updatedAtZ" TIMESTAMPTZ DEFAULT NOW());
    CREATE INDEX mastra_threads_resourceid_createdat_idx
      ON "{schema}".mastra_threads ("resourceId", "createdAt" DESC);
    CREATE INDEX mastra_messages_thread_id_createdat_idx
      ON "{schema}".mastra_messages (thread_id, "createdAt" DESC);
    """
    with psycopg.connect(found.url.split("?")[0], autocommit=True) as conn:
        conn.execute(ddl)
    status, report = _inspect(url, capsys)
    memory = report["domains"]["memory"]
    assert memory["drift"] == [], memory["drift"]
    # No version recorded yet: read from the tables, which lack only composite-store's own
    # (thread_id, createdAt DESC, id DESC) index, an advisory step of version 3 (issue 19:
    # include windows whatever the statistics) that `composite-store migrate` creates.
    assert memory["schema_version"] == 0 and not memory["version_recorded"]
    # The other domains' tables do not exist: not initialized (not drift), and not ok.
    assert status == 1
    workflows = report["domains"]["workflows"]
    assert workflows["initialized"] is False and workflows["drift"] == []


# -- inspect creates and changes nothing, and says why -----------------------------------------


def test_a_missing_sqlite_file_is_not_created_and_reads_not_initialized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.db"
    status, report = _inspect(f"sqlite:///{path}", capsys)
    assert status == 1
    assert {d["initialized"] for d in report["domains"].values()} == {False}
    assert all(d["drift"] == [] and d["reachable"] for d in report["domains"].values())
    assert list(tmp_path.iterdir()) == []


def test_an_existing_sqlite_file_stays_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "kept.db"
    url = f"sqlite:///{path}"
    _fresh(url)
    # A file as another program leaves it: rollback journal, not WAL.
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=DELETE")
    before = path.read_bytes()
    status, _ = _inspect(url, capsys)
    assert status == 0
    assert path.read_bytes() == before


def test_an_unreachable_backend_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    status, report = _inspect(f"redis://:secret@127.0.0.1:{port}/0", capsys)
    memory = report["domains"]["memory"]
    assert status == 1 and memory["reachable"] is False
    assert "connect" in memory["unreachable_reason"].lower()
    assert "secret" not in json.dumps(report)
    assert cli.main(["inspect", f"redis://127.0.0.1:{port}/0"]) == 1
    assert "reachable       NO: " in capsys.readouterr().out


def test_a_running_redis_is_reachable_and_untouched(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.servers import redis as redis_server

    url = redis_server.session_url(request)
    import redis as redis_client

    found = redis_server.find()
    assert not isinstance(found, str)
    client = redis_client.Redis.from_url(found.url.split("?")[0])
    keys_before = sorted(client.keys("*"))
    status, report = _inspect(url, capsys)
    memory = report["domains"]["memory"]
    assert memory["reachable"] is True, memory["unreachable_reason"]
    assert memory["initialized"] is False and status == 1
    assert sorted(client.keys("*")) == keys_before
    client.close()


def test_routes_show_where_they_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from composite_store.config import ENV_DEFAULT, env_var

    for name in (ENV_DEFAULT, *(env_var(d) for d in ("memory", "workflows", "scores"))):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "composite-store.toml"
    config.write_text(f'default = "sqlite:///{tmp_path / "file.db"}"\n')
    monkeypatch.setenv(env_var("workflows"), "memory://")
    monkeypatch.chdir(tmp_path)
    _, report = _inspect(str(config), capsys)
    assert report["domains"]["memory"]["source"] == f"{config} (file)"
    assert report["domains"]["workflows"]["source"] == "COMPOSITE_STORE_WORKFLOWS_URL (environment)"
    # Without a target: the environment and the file of the current directory.
    assert cli.main(["inspect", "--json"]) in (0, 1)
    report = json.loads(capsys.readouterr().out)
    assert report["domains"]["workflows"]["source"].endswith("(environment)")
    assert report["domains"]["scores"]["source"].endswith("composite-store.toml (file)")
    assert not (tmp_path / "file.db").exists()


def test_json_goes_to_stdout_or_to_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'o.db'}"
    _fresh(url)
    out = tmp_path / "report.json"
    assert cli.main(["inspect", url, "--json", "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert "reachable       yes" in captured.out and "report.json" in captured.err
    assert json.loads(out.read_text())["ok"] is True


def test_runs_without_a_resource_stay_out_of_the_resource_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The resource index of workflow runs is partial (``resourceId`` not NULL): a run saved
    without a resource writes no entry in it, one with a resource does, and the resource's run
    list reads it. A file built when it covered every row (version 4 as first released) keeps
    that index, which serves the same reads: not drift."""
    path = tmp_path / "runs.db"
    url = f"sqlite:///{path}"
    index = "mastra_workflow_snapshot_resourceid_created_at_idx"

    async def write() -> list[str]:
        async with open_store(url) as store:
            runs = store.workflows
            for i in range(6):
                await runs.persist_workflow_snapshot(
                    workflow_name="wf",
                    run_id=f"r{i}",
                    snapshot={"i": i},
                    resource_id="owner" if i % 3 == 0 else None,
                )
            page = await runs.list_workflow_runs(resource_id="owner")
            return [run.run_id for run in page.items]

    assert sorted(asyncio.run(write())) == ["r0", "r3"]
    with sqlite3.connect(path) as db:
        [(sql,)] = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (index,))
        assert sql.endswith('WHERE "resourceId" IS NOT NULL'), sql
        # The index's own entries (a covering count reads only them).
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM mastra_workflow_snapshot INDEXED BY "
            f'{index} WHERE "resourceId" IS NOT NULL'
        ).fetchall()
        assert index in str(plan), plan
        [(entries,)] = db.execute(
            f"SELECT count(*) FROM mastra_workflow_snapshot INDEXED BY {index} "
            'WHERE "resourceId" IS NOT NULL'
        )
        assert entries == 2
        db.execute(f"DROP INDEX {index}")
        db.execute(
            f"CREATE INDEX {index} ON mastra_workflow_snapshot "
            '("resourceId", "createdAt" DESC, run_id DESC)'
        )
    status, report = _inspect(url, capsys)
    assert status == 0, report
    assert report["domains"]["workflows"]["drift"] == []
