"""``copy_domains`` and ``composite-store copy``: every pair of backends, record for record.

Each backend gets two namespaces for the session: a source filled once with every domain it
offers (``copy_data.fill``: a 2,000-message thread, working memory, snapshots, definitions with
versions, scores and keyless evals, spans, dataset history, experiments) and a destination,
cleared before each copy. A copy must write every source record, pass the count check, leave
the destination reading exactly like the source through the public API (``copy_data.snapshot``,
domain by domain), and a second copy must write nothing. Unreachable backends are skipped
through ``backends.unreachable`` (or fail where required).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from composite_store import cli, open_store
from composite_store.admin.copy import CopyReport, Progress, copy_domains, shared_domains
from composite_store.errors import ValidationError
from composite_store.inmemory import InMemoryStore
from composite_store.records.tables import key_of
from composite_store.schema import tables_for
from composite_store.store import Store
from tests.support.backends import ran, unreachable
from tests.support.copy_data import BIG_THREAD, fill, snapshot

BACKENDS = ("sqlite", "memory", "libsql", "postgres", "mariadb", "redis", "mongodb")
PAIRS = [
    pytest.param(src, dst, id=f"{src}-to-{dst}")
    for src in BACKENDS
    for dst in BACKENDS
    if src != dst
]


class Namespaces:
    """Per backend and role (``src``/``dst``), one namespace for the whole session."""

    def __init__(self, request: pytest.FixtureRequest, tmp: pytest.TempPathFactory) -> None:
        self._request = request
        self._tmp = tmp
        self._urls: dict[tuple[str, str], str] = {}
        self._memory: dict[str, InMemoryStore] = {}
        #: Source backend -> domain -> its contents read through the public API (the source
        #: never changes once filled, so it is read once).
        self.expected: dict[str, dict[str, Any]] = {}

    def open(self, backend: str, role: str) -> Store:
        if backend == "memory":
            ran("inmemory", "in-process")
            return self._memory.setdefault(role, InMemoryStore())
        key = (backend, role)
        if key not in self._urls:
            self._urls[key] = self._provision(backend)
        return open_store(self._urls[key])

    def _provision(self, backend: str) -> str:
        if backend == "sqlite":
            ran("sqlite", "temporary file")
            return f"sqlite:///{self._tmp.mktemp('copy-sqlite') / 'store.db'}"
        if backend == "libsql":
            try:
                from composite_store_libsql import provision
            except ImportError as exc:
                unreachable("libsql", f"composite-store-libsql is not installed ({exc})")
            base = "libsql:///copy.db"
            name = asyncio.run(provision.create_namespace(base))
            self._request.addfinalizer(
                lambda: asyncio.run(provision.drop_namespace(base, name))
            )
            ran("libsql", "embedded libSQL engine, temporary file")
            return provision.store_url(base, name)
        from tests.support.servers import mariadb, mongodb, postgres, redis

        servers = {"postgres": postgres, "mariadb": mariadb, "redis": redis, "mongodb": mongodb}
        url: str = servers[backend].session_url(self._request)
        return url


@pytest.fixture(scope="session")
def namespaces(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Namespaces:
    return Namespaces(request, tmp_path_factory)


async def _prepare(ns: Namespaces, source: str, src: Store, dst: Store) -> dict[str, Any]:
    """Fill the source once per session and return its contents; empty the destination."""
    if source not in ns.expected:
        await fill(src)
        ns.expected[source] = {d: await snapshot(src, d) for d in src.domains}
    for dom in dst.domains.values():
        await dom.dangerously_clear_all()
    return ns.expected[source]


def _check_fresh_copy(report: CopyReport, src: Store, dst: Store) -> None:
    shared = shared_domains(src, dst)
    assert [t.table for t in report.tables] == [
        s.base_name for d in shared for s in tables_for(d)
    ]
    for t in report.tables:
        assert t.counts_match, t
        assert t.read == t.source_count == t.written == t.destination_count, t
        assert t.unchanged == 0, t
    tables = {t.table: t for t in report.tables}
    if "messages" in tables:
        assert tables["messages"].source_count == BIG_THREAD + 15
    if "evals" in tables:
        assert tables["evals"].source_count == 4  # two of them identical
    if "dataset_items" in tables:
        # 6 inserted rows, 2 updates and 1 deletion each close a row and add one.
        assert tables["dataset_items"].source_count == 9


@pytest.mark.parametrize(("source", "destination"), PAIRS)
def test_copy_between_backends(namespaces: Namespaces, source: str, destination: str) -> None:
    src, dst = namespaces.open(source, "src"), namespaces.open(destination, "dst")

    async def scenario() -> None:
        async with src, dst:
            expected = await _prepare(namespaces, source, src, dst)
            report = await copy_domains(src, dst)
            _check_fresh_copy(report, src, dst)
            for domain in shared_domains(src, dst):
                copied = await snapshot(dst, domain)
                assert copied == expected[domain], f"{domain} differs after copy"
            # Nothing new: the second run reads everything and writes nothing.
            again = await copy_domains(src, dst)
            assert again.ok
            assert again.written == 0, [(t.table, t.written) for t in again.tables if t.written]
            assert all(t.unchanged == t.read == t.source_count for t in again.tables)

    asyncio.run(scenario())


# -- behaviour on the embedded backends (fast) --------------------------------------------------


@pytest.fixture
def filled_sqlite(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'source.db'}"

    async def write() -> None:
        async with open_store(url) as store:
            await fill(store)

    asyncio.run(write())
    yield url


def test_small_pages_cover_every_record_once(filled_sqlite: str) -> None:
    """Export pages of 7 records (keyset on SQL, several composite keys, offsets for the
    keyless evals) and the in-memory store's pages return each record exactly once."""

    async def scenario() -> None:
        src, dst = open_store(filled_sqlite), InMemoryStore()
        async with src, dst:
            report = await copy_domains(src, dst, batch=7)
            assert report.ok and all(t.written == t.source_count for t in report.tables)
            for dom in dst.domains.values():
                for spec in tables_for(dom.domain):
                    seen: list[Any] = []
                    cursor = None
                    while True:
                        page = await dom.export_records(table=spec.base_name, cursor=cursor,
                                                        limit=7)
                        seen += [key_of(spec.base_name, r) or r.stored() for r in page.records]
                        cursor = page.cursor
                        if cursor is None:
                            break
                    count = await dom.count_records(table=spec.base_name)
                    assert len(seen) == count, spec.base_name
                    if spec.key_columns:
                        assert len(set(seen)) == count, spec.base_name

    asyncio.run(scenario())


@pytest.mark.parametrize("destination", ["sqlite", "postgres"])
def test_a_rerun_writes_exactly_what_changed(
    filled_sqlite: str, namespaces: Namespaces, destination: str
) -> None:
    """"Nothing new" is precise: a destination record that differs in one value is written
    again, and only it. On PostgreSQL the first copy goes straight into the tables by COPY,
    the rerun's changed records (whose keys exist) through the staging table's upsert."""

    dst = namespaces.open(destination, "rerun")  # provisions with asyncio.run: not inside

    async def scenario() -> None:
        src = open_store(filled_sqlite)
        async with src, dst:
            for dom in dst.domains.values():
                await dom.dangerously_clear_all()
            await copy_domains(src, dst)
            await dst.memory.update_messages(
                messages=[{"id": "big-00042", "content": {"metadata": {"edited": True}}}]
            )
            await dst.datasets.update_dataset(id="ds-1", description="changed downstream")
            again = await copy_domains(src, dst)
            written = {t.table: t.written for t in again.tables if t.written}
            # The edited message, and its thread (update_messages bumped its updatedAt).
            assert written == {"threads": 1, "messages": 1, "datasets": 1}
            for domain in shared_domains(src, dst):
                assert await snapshot(dst, domain) == await snapshot(src, domain)

    asyncio.run(scenario())


def test_an_interrupted_copy_resumes(filled_sqlite: str, tmp_path: Path) -> None:
    dst_url = f"sqlite:///{tmp_path / 'dst.db'}"

    class Interrupted(Exception):
        pass

    def stop_in_messages(event: Progress) -> None:
        if event.table == "messages" and event.read >= 300:
            raise Interrupted

    async def scenario() -> None:
        src, dst = open_store(filled_sqlite), open_store(dst_url)
        async with src, dst:
            with pytest.raises(Interrupted):
                await copy_domains(src, dst, batch=100, on_progress=stop_in_messages)
            partial = await dst.memory.count_records(table="messages")
            assert partial == 300
            resumed = await copy_domains(src, dst, batch=100)
            tables = {t.table: t for t in resumed.tables}
            assert tables["messages"].written == BIG_THREAD + 15 - 300
            assert tables["messages"].unchanged == 300
            assert tables["threads"].written == 0
            assert resumed.ok
            assert await snapshot(dst, "memory") == await snapshot(src, "memory")

    asyncio.run(scenario())


def test_domains_must_be_offered_by_both_stores(filled_sqlite: str) -> None:
    from composite_store.store import Store as Plain

    async def scenario() -> None:
        src = open_store(filled_sqlite)
        memory_only = Plain({"memory": InMemoryStore().memory})
        async with src, memory_only:
            with pytest.raises(ValidationError, match="does not offer the datasets domain"):
                await copy_domains(src, memory_only, domains=["datasets"])
            with pytest.raises(ValidationError, match="batch must be an integer >= 1"):
                await copy_domains(src, memory_only, batch=0)
            report = await copy_domains(src, memory_only)
            assert {t.domain for t in report.tables} == {"memory"}

    asyncio.run(scenario())


def test_command_line_copy(
    filled_sqlite: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dst_url = f"sqlite:///{tmp_path / 'dst.db'}"
    report = tmp_path / "copy.json"
    argv = ["copy", filled_sqlite, dst_url, "--domain", "memory", "--domain", "datasets"]
    assert cli.main([*argv, "--batch", "250", "--json", "--output", str(report)]) == 0
    out = capsys.readouterr().out
    assert "memory.messages" in out and "every count matches" in out
    data = json.loads(report.read_text())
    tables = {t["table"]: t for t in data["tables"]}
    assert set(tables) == {"threads", "messages", "resources", "datasets", "dataset_items",
                           "dataset_versions"}
    assert tables["messages"]["written"] == tables["messages"]["source"] == BIG_THREAD + 15
    assert cli.main([*argv, "--json", "--output", str(report)]) == 0
    again = json.loads(report.read_text())
    assert all(t["written"] == 0 and t["counts_match"] for t in again["tables"])
    assert cli.main(["copy", dst_url, dst_url]) == 1
    assert "source and destination are the same store" in capsys.readouterr().err


def test_without_rich_the_command_says_how_to_get_progress_bars(
    filled_sqlite: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from composite_store.cli import copy as copy_command

    real = importlib.util.find_spec
    monkeypatch.setattr(
        copy_command.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "rich" else real(name, *a),
    )
    dst_url = f"sqlite:///{tmp_path / 'plain.db'}"
    assert cli.main(["copy", filled_sqlite, dst_url, "--domain", "workflows"]) == 0
    captured = capsys.readouterr()
    assert 'pip install "composite-store[cli]"' in captured.err
    assert "  workflows.workflow_snapshot: 5 read, 5 written" in captured.err
