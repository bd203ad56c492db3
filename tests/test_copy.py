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
import contextlib
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from composite_store import cli, open_store
from composite_store.admin.copy import CopyReport, Progress, copy_domains, shared_domains
from composite_store.domains.hooks import StoredRows
from composite_store.errors import ValidationError
from composite_store.inmemory import InMemoryStore
from composite_store.records.base import iso_ms
from composite_store.records.tables import key_of, row_of
from composite_store.schema import table as spec_of
from composite_store.schema import tables_for
from composite_store.schema.documented import ColumnType
from composite_store.sql import transfer
from composite_store.sql.domain import SqlDomain
from composite_store.sql.types import parse_iso
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
        return open_store(self.url(backend, role))

    def url(self, backend: str, role: str) -> str:
        """The URL of ``backend``'s namespace for ``role`` (not the in-memory store's),
        provisioned on first use."""
        key = (backend, role)
        if key not in self._urls:
            self._urls[key] = self._provision(backend)
        return self._urls[key]

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


async def _emptied(*stores: Store) -> None:
    """Empty every domain of each of ``stores`` (open)."""
    for store in stores:
        for dom in store.domains.values():
            await dom.dangerously_clear_all()


async def _prepare(ns: Namespaces, source: str, src: Store, dst: Store) -> dict[str, Any]:
    """Fill the source once per session and return its contents; empty the destination."""
    if source not in ns.expected:
        await fill(src)
        ns.expected[source] = {d: await snapshot(src, d) for d in src.domains}
    await _emptied(dst)
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
            await _emptied(dst)
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


# -- the row path between relational stores -----------------------------------------------------

#: Stored content as other writers leave it (raw rows in the source file): what the records'
#: copy normalises (a legacy string becomes format 2, spaces and null fields go, extra keys
#: stay), and the row path must write the same text for.
_ODD_CONTENT = {
    "odd-legacy": "just a plain string",
    "odd-legacy-nul": "a plain string with a \x00 NUL",
    "odd-spaces": '{"format": 2, "parts": [{"type": "text", "text": "spaced"}]}',
    "odd-null-fields": '{"format":2,"parts":[],"content":null,"metadata":null}',
    "odd-extra": '{"format":2,"parts":[],"toolInvocations":[{"a":1}],"metadata":{"k":null}}',
    "odd-no-parts": '{"format":2,"content":"no parts"}',
    "odd-escaped": '{"format":2,"parts":[{"type":"text","text":"\\u00e9\\/"}]}',
    "odd-not-object": "[1, 2]",
    "odd-escapes": '{"format":2,"parts":[{"t":"\\u2028 \\ud83d\\ude00 \\" \\\\ \\n \\u0000"}]}',
    "odd-numbers": '{"format":2,"parts":[{"n":[1.5,1e10,-0.0,12345678901234567890,1E2]}]}',
}


def _add_raw_messages(
    url: str, contents: dict[str, str], created: str = "2026-03-01T12:00:00.000Z"
) -> None:
    """Messages of thread ``big`` written straight into the source file, content and
    createdAt text as given."""
    import sqlite3

    with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
        conn.executemany(
            'INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", '
            '"resourceId") VALUES (?, ?, ?, ?, ?, ?, ?)',
            [(mid, "big", text, "user", "v2", created, "u1") for mid, text in contents.items()],
        )


#: Where a stored message row holds a timestamp.
_STAMPS = [i for i, c in enumerate(spec_of("messages").columns) if c.type is ColumnType.TIMESTAMP]


async def _stored_messages(store: Store) -> list[tuple[Any, ...]]:
    dom = store.memory
    assert isinstance(dom, StoredRows)
    rows: list[tuple[Any, ...]] = []
    cursor = None
    while True:
        page, cursor = await dom.export_stored_rows(table="messages", cursor=cursor, limit=700)
        rows += page
        if cursor is None:
            return rows


@pytest.fixture
def records_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The relational domains move no table as stored rows: copy takes the records' path."""
    monkeypatch.setattr(SqlDomain, "row_tables", frozenset())


def _copy_counting_rows(
    src_url: str, dst: Store, monkeypatch: pytest.MonkeyPatch
) -> tuple[CopyReport, int]:
    calls = []
    real = transfer.import_stored

    async def counted(dom: Any, base: str, rows: Any) -> None:
        calls.append(len(rows))
        await real(dom, base, rows)

    monkeypatch.setattr(transfer, "import_stored", counted)

    async def run() -> CopyReport:
        async with open_store(src_url) as src, dst:
            return await copy_domains(src, dst, domains=["memory"], batch=500)

    report = asyncio.run(run())
    monkeypatch.setattr(transfer, "import_stored", real)
    return report, sum(calls)


@pytest.mark.parametrize("destination", ["sqlite", "postgres"])
def test_the_row_path_writes_what_the_records_path_writes(
    filled_sqlite: str,
    namespaces: Namespaces,
    destination: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Into a fresh relational destination messages go as stored rows; every stored value,
    content text included (odd content normalised as the records' copy normalises it), equals
    what the records' path writes, and the destination reads like the source."""
    _add_raw_messages(filled_sqlite, _ODD_CONTENT)
    by_rows = namespaces.open(destination, "rows")
    by_records = open_store(f"sqlite:///{tmp_path / 'records.db'}")

    async def clear(store: Store) -> None:
        async with store:
            await _emptied(store)

    asyncio.run(clear(by_rows))
    report, rows_written = _copy_counting_rows(filled_sqlite, by_rows, monkeypatch)
    tables = {t.table: t for t in report.tables}
    messages = BIG_THREAD + 15 + len(_ODD_CONTENT)
    assert rows_written == messages == tables["messages"].written
    assert report.ok and tables["messages"].read == messages

    with monkeypatch.context() as patched:
        patched.setattr(SqlDomain, "row_tables", frozenset())
        report, rows_written = _copy_counting_rows(filled_sqlite, by_records, patched)
    assert rows_written == 0 and report.ok

    async def compare() -> None:
        src = open_store(filled_sqlite)
        rows_dst = namespaces.open(destination, "rows")
        records_dst = open_store(f"sqlite:///{tmp_path / 'records.db'}")
        async with src, rows_dst, records_dst:
            assert await _stored_messages(rows_dst) == await _stored_messages(records_dst)
            legacy = (await rows_dst.memory.list_messages_by_id(message_ids=["odd-legacy"]))[0]
            assert legacy.content.parts == [{"type": "text", "text": "just a plain string"}]
            assert await snapshot(rows_dst, "memory") == await snapshot(src, "memory")
            # The rerun compares records: nothing differs, nothing is written.
            again = await copy_domains(src, rows_dst, domains=["memory"])
            assert again.written == 0 and again.ok

    asyncio.run(compare())


#: createdAt text another writer may have stored: other spellings of an instant (a space for
#: the T, an offset, an ISO week date in iso_ms's length, microseconds), each stored as
#: ``iso_ms`` spells it; a date that does not exist in iso_ms's very spelling; no date at all.
_ODD_CREATED = {
    "2026-03-01 12:00:00Z": "2026-03-01T12:00:00.000Z",
    "2026-03-01T13:00:00.5+01:00": "2026-03-01T12:00:00.500Z",
    "2026-W09-1T12:00:00.123Z": "2026-02-23T12:00:00.123Z",
    "2026-03-01T12:00:00.123456Z": "2026-03-01T12:00:00.123Z",
}
_BAD_CREATED = ["2026-02-30T12:00:00.000Z", "2026-13-01T12:00:00.000Z", "yesterday"]


async def _copy_reading(src_url: str, dst: Store, ids: list[str]) -> list[Any]:
    """Copy the memory domain from ``src_url`` into ``dst`` (emptied first) and read the
    stored rows of messages ``ids`` there."""
    async with open_store(src_url) as src, dst:
        await _emptied(dst)
        assert (await copy_domains(src, dst, domains=["memory"])).ok
        return [await dst.memory.read_raw("messages", {"id": i}) for i in ids]


async def _copy_refused(src_url: str, dst: Store) -> str:
    """The ValueError a copy of the memory domain from ``src_url`` into ``dst`` (emptied
    first) raises, as ``"Type: message"``, once no message was written."""
    async with open_store(src_url) as src, dst:
        await _emptied(dst)
        with pytest.raises(ValueError) as raised:
            await copy_domains(src, dst, domains=["memory"], batch=5000)
        assert await dst.memory.count_records(table="messages") == 0
        return f"{type(raised.value).__name__}: {raised.value}"


@pytest.mark.parametrize("destination", ["sqlite", "postgres"])
def test_timestamps_in_other_spellings_are_stored_as_the_records_path_stores_them(
    filled_sqlite: str, namespaces: Namespaces, destination: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row path passes iso_ms text through unparsed (``StoredRows``); text spelled
    otherwise is read as the records read it, and stored as the records' path stores it."""
    for n, created in enumerate(_ODD_CREATED):
        _add_raw_messages(filled_sqlite, {f"odd-time-{n}": '{"format":2,"parts":[]}'}, created)
    ids = [f"odd-time-{n}" for n in range(len(_ODD_CREATED))]
    by_rows = asyncio.run(
        _copy_reading(filled_sqlite, namespaces.open(destination, "odd-time-rows"), ids)
    )
    with monkeypatch.context() as patched:
        patched.setattr(SqlDomain, "row_tables", frozenset())
        by_records = asyncio.run(
            _copy_reading(filled_sqlite, namespaces.open(destination, "odd-time-records"), ids)
        )
    assert by_rows == by_records
    created = [row["createdAt"] for row in by_rows if row is not None]
    if destination == "sqlite":
        assert created == list(_ODD_CREATED.values())
    else:  # the UTC wall clock, to the microsecond as the records' path stores it
        assert created == [parse_iso(text).replace(tzinfo=None) for text in _ODD_CREATED]


@pytest.mark.parametrize(
    ("destination", "text"), [("sqlite", True), ("libsql", True), ("postgres", False)]
)
def test_timestamps_go_as_text_only_into_a_store_that_keeps_text(
    filled_sqlite: str, namespaces: Namespaces, destination: str, text: bool
) -> None:
    """The row path asks the source for its timestamp text only where the destination keeps
    that text too (``StoredRows.timestamp_text``): elsewhere the destination would parse it."""
    dst = namespaces.open(destination, "stamp-form")
    asked: list[bool] = []

    async def run() -> None:
        async with open_store(filled_sqlite) as src, dst:
            await _emptied(dst)
            source = src.memory
            assert isinstance(source, StoredRows) and isinstance(dst.memory, StoredRows)
            assert dst.memory.timestamp_text is text
            export = source.export_stored_rows

            async def spied(**kwargs: Any) -> Any:
                asked.append(kwargs["timestamp_text"])
                return await export(**kwargs)

            source.export_stored_rows = spied  # type: ignore[method-assign]
            assert (await copy_domains(src, dst, domains=["memory"], batch=700)).ok

    asyncio.run(run())
    assert len(asked) > 1 and set(asked) == {text}


@pytest.mark.parametrize("bad", _BAD_CREATED)
@pytest.mark.parametrize("destination", ["sqlite", "postgres"])
def test_a_timestamp_that_is_no_instant_is_refused_on_either_path(
    filled_sqlite: str,
    namespaces: Namespaces,
    destination: str,
    bad: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """createdAt text that names no instant, even spelled as iso_ms spells one (the row path
    does not parse that spelling on the way out: the destination checks it), stops the copy
    on either path with the same error, and nothing of its batch is written."""
    _add_raw_messages(filled_sqlite, {"bad-time": '{"format":2,"parts":[]}'}, bad)
    by_rows = asyncio.run(_copy_refused(filled_sqlite, namespaces.open(destination, "bad-rows")))
    with monkeypatch.context() as patched:
        patched.setattr(SqlDomain, "row_tables", frozenset())
        by_records = asyncio.run(
            _copy_refused(filled_sqlite, namespaces.open(destination, "bad-records"))
        )
    assert by_rows == by_records


@pytest.mark.parametrize("path", ["rows", "records"])
def test_content_a_record_cannot_store_is_refused_on_either_path(
    filled_sqlite: str, tmp_path: Path, path: str, request: pytest.FixtureRequest
) -> None:
    """Stored content holding NaN cannot be dumped as the records' import dumps it: both paths
    refuse it with the same error, and the batch it is in is not written."""
    if path == "records":
        request.getfixturevalue("records_only")
    _add_raw_messages(filled_sqlite, {"bad-nan": '{"format":2,"parts":[{"n":NaN}]}'})

    async def run() -> None:
        src, dst = open_store(filled_sqlite), open_store(f"sqlite:///{tmp_path / 'dst.db'}")
        async with src, dst:
            with pytest.raises(ValueError, match="Out of range float values"):
                await copy_domains(src, dst, domains=["memory"], batch=5000)
            assert await dst.memory.count_records(table="messages") == 0

    asyncio.run(run())


@pytest.mark.parametrize("path", ["rows", "records"])
def test_a_value_postgres_refuses_is_refused_on_either_path(
    filled_sqlite: str, namespaces: Namespaces, path: str, request: pytest.FixtureRequest
) -> None:
    """A message id holding NUL (SQLite stores it, PostgreSQL cannot): the destination's bind
    checks refuse it on the row path as on the records' path."""
    if path == "records":
        request.getfixturevalue("records_only")
    _add_raw_messages(filled_sqlite, {"bad\x00id": '{"format":2,"parts":[]}'})
    dst = namespaces.open("postgres", f"nul-{path}")

    async def run() -> None:
        src = open_store(filled_sqlite)
        async with src, dst:
            await _emptied(dst)
            with pytest.raises(ValidationError, match="NUL"):
                await copy_domains(src, dst, domains=["memory"])
            assert await dst.memory.count_records(table="messages") == 0

    asyncio.run(run())


def test_stored_rows_arguments_are_checked(filled_sqlite: str) -> None:
    async def run() -> None:
        async with open_store(filled_sqlite) as store:
            dom = store.memory
            assert isinstance(dom, StoredRows)
            with pytest.raises(ValidationError, match="does not move table 'threads'"):
                await dom.export_stored_rows(table="threads")
            with pytest.raises(ValidationError, match="holds its 7 columns"):
                await dom.import_stored_rows(table="messages", rows=[("m1", "t1")])
            with pytest.raises(ValidationError, match="limit must be"):
                await dom.export_stored_rows(table="messages", limit=0)
            rows, cursor = await dom.export_stored_rows(table="messages", limit=3)
            records = await dom.export_records(table="messages", limit=3)
            assert cursor == records.cursor
            names = spec_of("messages").column_names
            assert rows == [
                tuple(row_of("messages", r)[c] for c in names) for r in records.records
            ]
            # For another store that keeps it, the text SQLite keeps: iso_ms of each instant.
            assert dom.timestamp_text
            as_text, _ = await dom.export_stored_rows(
                table="messages", limit=3, timestamp_text=True
            )
            assert as_text == [
                tuple(iso_ms(v) if i in _STAMPS else v for i, v in enumerate(row))
                for row in rows
            ]
            assert all(isinstance(row[i], str) for row in as_text for i in _STAMPS)

    asyncio.run(run())


@pytest.mark.parametrize(
    ("url", "embedded"),
    [
        ("sqlite:///{tmp}/e.db", True),
        ("libsql:///{tmp}/e.db", True),
        ("libsql://libsql.example.invalid:8080", False),
        ("postgresql://postgres@127.0.0.1:1/x", False),
        ("mariadb://root@127.0.0.1:1/x", False),
        ("redis://127.0.0.1:1/0", False),
        ("mongodb://127.0.0.1:1/x", False),
        ("memory", True),
    ],
)
def test_embedded_says_where_the_database_runs(url: str, embedded: bool, tmp_path: Path) -> None:
    """Only files opened in this process (and the in-memory store) are embedded; opening a
    store connects to nothing, so the server URLs need no server."""

    async def run() -> None:
        store = InMemoryStore() if url == "memory" else open_store(url.format(tmp=tmp_path))
        try:  # not ``async with``: entering a store initializes it, which connects
            assert {d.embedded for d in store.domains.values()} == {embedded}
        finally:
            await store.close()

    if url.startswith("libsql"):
        pytest.importorskip("composite_store_libsql", reason="the libsql extra is not installed")
    asyncio.run(run())


def _traced(store: Store, events: list[tuple[str, int]]) -> None:
    """Record when each export page of ``store``'s memory domain starts and ends being read
    (``read``, ``read-done``) or written (``write``, ``write-done``), by page number."""
    dom = store.memory
    assert isinstance(dom, StoredRows)
    calls = {"read": 0, "write": 0}

    def traced(name: str, method: Any) -> Any:
        async def call(**kwargs: Any) -> Any:
            n = calls[name]
            calls[name] += 1
            events.append((name, n))
            result = await method(**kwargs)
            events.append((f"{name}-done", n))
            return result

        return call

    # Instance attributes: only this store's calls are traced.
    dom.export_stored_rows = traced("read", dom.export_stored_rows)  # type: ignore[method-assign]
    dom.export_records = traced("read", dom.export_records)  # type: ignore[method-assign]
    dom.import_stored_rows = traced("write", dom.import_stored_rows)  # type: ignore[method-assign]
    dom.import_records = traced("write", dom.import_records)  # type: ignore[method-assign]


@pytest.mark.parametrize("destination", ["sqlite", "postgres"])
def test_a_copy_reads_ahead_only_when_a_store_waits_on_a_server(
    filled_sqlite: str, namespaces: Namespaces, destination: str, tmp_path: Path
) -> None:
    """Into PostgreSQL the next page is read while one is written; between two SQLite files
    (both this process's work) a page is read only once the previous one is written."""
    dst = (
        open_store(f"sqlite:///{tmp_path / 'dst.db'}")
        if destination == "sqlite"
        else namespaces.open(destination, "turns")
    )

    async def scenario() -> list[tuple[str, int]]:
        src = open_store(filled_sqlite)
        events: list[tuple[str, int]] = []
        async with src, dst:
            await _emptied(dst)
            _traced(src, events)
            _traced(dst, events)
            report = await copy_domains(src, dst, domains=["memory"], batch=400)
            assert report.ok
            messages = {t.table: t for t in report.tables}["messages"]
            assert messages.written == BIG_THREAD + 15
        return events

    events = asyncio.run(scenario())
    assert sum(name == "write" for name, _ in events) > 5  # several pages of messages
    # Pages read while a write was under way (or written while a read was): the read ahead.
    busy: set[str] = set()
    overlaps = 0
    for name, _ in events:
        kind = name.removesuffix("-done")
        if name.endswith("-done"):
            busy.discard(kind)
            continue
        overlaps += bool(busy - {kind})
        busy.add(kind)
    if destination == "sqlite":
        assert overlaps == 0, str(events)
    else:
        assert overlaps >= 4, str(events)  # each page of messages after the first


@pytest.mark.parametrize("ahead", [True, False])
def test_a_read_ahead_nobody_takes_is_cancelled(ahead: bool) -> None:
    """A write that fails leaves no page being read behind it: the read ahead is cancelled
    (and awaited), so it can neither fail unobserved nor keep a connection busy."""
    from composite_store.admin.copy import _pages

    started: list[str | None] = []
    cancelled: list[str | None] = []

    async def read(cursor: str | None) -> str | None:
        started.append(cursor)
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            cancelled.append(cursor)
            raise
        return None if cursor == "3" else str(int(cursor or 0) + 1)

    class WriteFailed(Exception):
        pass

    async def scenario() -> None:
        pages = _pages(read, lambda page: page, ahead)
        with pytest.raises(WriteFailed):
            async with contextlib.aclosing(pages):
                async for page in pages:
                    await asyncio.sleep(0.01)
                    if page == "2":
                        raise WriteFailed

    asyncio.run(scenario())
    assert started == ([None, "1", "2"] if ahead else [None, "1"])
    assert cancelled == (["2"] if ahead else [])


# -- PostgreSQL's binary COPY of stored rows ------------------------------------------------------

_IST = timezone(timedelta(hours=5, minutes=30))


def _hostile_rows() -> list[tuple[Any, ...]]:
    """Stored message rows whose text needs COPY's escapes in the text format (tabs, newlines,
    backslashes, a ``\\N``, escapes in JSON text, non-ASCII, astral characters), a NULL owner,
    and timestamps in UTC, in another zone, with microseconds, at the ends of the range."""
    content = json.dumps(
        {"format": 2, "parts": [{"type": "text", "text": "tab\there\nline\r\\N \\u0000 é 😀"}]},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return [
        ("h-utc", "big", content, "user", "v2", datetime(2026, 3, 1, 12, 0, tzinfo=UTC), "u1"),
        ("h-ist", "big", content, "assistant", "v2",
         datetime(2026, 3, 1, 3, 4, 5, 678000, tzinfo=_IST), None),
        ("h-\t\\N", "big\n", '{"format":2,"parts":[]}', "system", "t\\y\tpe",
         datetime(1, 1, 2, tzinfo=UTC), "\\"),
        ("h-micro", "big", "{}", "user", "", datetime(9999, 12, 30, 23, 59, 59, 999999,
                                                       tzinfo=UTC), "u é"),
        ("h-text", "big", "plain", "user", "v2", "2026-03-01T12:00:00.123Z", "u1"),
    ]


def test_binary_copy_into_postgres_stores_what_the_text_copy_stores(
    namespaces: Namespaces, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages go to PostgreSQL in COPY's binary format: every stored column (shadow
    timestamps included) equals what the text format (the statements' bind conversions)
    stores, for values the text format must escape and timestamps in any zone; a rerun of
    the same keys upserts (the staging table, binary too)."""
    from composite_store_postgres import bulk

    rows = _hostile_rows()
    binary, text = namespaces.open("postgres", "binary"), namespaces.open("postgres", "text")

    async def load(store: Store, changed: bool) -> list[dict[str, Any] | None]:
        async with store:
            await _emptied(store)
            dom = store.memory
            assert isinstance(dom, StoredRows)
            await dom.import_stored_rows(table="messages", rows=rows)
            if changed:
                again = [(r[0], r[1], '{"format":2,"parts":[]}', *r[3:]) for r in rows[:2]]
                await dom.import_stored_rows(table="messages", rows=again)
            assert await dom.count_records(table="messages") == len(rows)
            return [await dom.read_raw("messages", {"id": r[0]}) for r in rows]

    copied = asyncio.run(load(binary, changed=False))
    streamed: list[Any] = []
    real_stream = bulk._stream

    async def spy(cursor: Any, table: str, columns: str, rows: Any, types: Any) -> None:
        streamed.append(types)
        await real_stream(cursor, table, columns, rows, types)

    with monkeypatch.context() as patched:
        patched.setattr(bulk, "_stream", spy)
        upserted = asyncio.run(load(binary, changed=True))
        assert streamed[0] is not None and "timestamptz" in streamed[0]
        assert len(streamed) == 3  # the first batch, then the second: refused, then staged
        patched.setattr(bulk, "_binary_plan", lambda table, dialect: None)
        as_text = asyncio.run(load(text, changed=False))
    assert copied == as_text
    assert all(row is not None for row in copied)
    by_id = {row["id"]: row for row in copied if row is not None}
    ist = by_id["h-ist"]
    assert ist["createdAt"] == datetime(2026, 2, 28, 21, 34, 5, 678000)
    assert ist["createdAtZ"] == datetime(2026, 3, 1, 3, 4, 5, 678000, tzinfo=_IST)
    assert ist["resourceId"] is None
    assert by_id["h-\t\\N"]["type"] == "t\\y\tpe" and by_id["h-\t\\N"]["resourceId"] == "\\"
    assert by_id["h-text"]["createdAtZ"] == datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
    assert [r["content"] for r in upserted[:2] if r] == ['{"format":2,"parts":[]}'] * 2
    assert upserted[2:] == copied[2:]


@pytest.mark.parametrize(
    ("column", "value", "error"),
    [
        (0, "id\x00", "NUL"),
        (2, '{"format":2,"parts":[{"text":"\x00"}]}', "NUL"),
        (6, "owner\x00", "NUL"),
        (3, "us\ud800er", "surrogate"),
        (2, '{"format":2,"parts":[{"text":"\udfff"}]}', "surrogate"),
    ],
)
def test_binary_copy_into_postgres_refuses_what_postgres_cannot_store(
    namespaces: Namespaces, column: int, value: str, error: str
) -> None:
    """A value PostgreSQL cannot store (NUL, a lone surrogate) in any text column of a stored
    row is refused before anything is sent, and its batch is not written."""
    good = _hostile_rows()[0]
    bad = list(good)
    bad[0] = "bad"
    bad[column] = value
    dst = namespaces.open("postgres", "refused")

    async def run() -> None:
        async with dst:
            await _emptied(dst)
            dom = dst.memory
            assert isinstance(dom, StoredRows)
            with pytest.raises(ValidationError, match=error):
                await dom.import_stored_rows(table="messages", rows=[good, tuple(bad)])
            assert await dom.count_records(table="messages") == 0

    asyncio.run(run())


@pytest.mark.parametrize("destination", ["sqlite", "mongodb"])
def test_a_nan_another_writer_stored_in_mongodb_is_not_copied_as_null(
    namespaces: Namespaces, destination: str
) -> None:
    """BSON keeps a NaN that another writer stored (the domains refuse one). A copy must not
    turn it into ``null`` where the destination's JSON encoder would: into a JSON column it is
    refused as a stored NaN read from JSON text is (test_content_a_record_cannot_store_...),
    with nothing written; into MongoDB it stays NaN."""
    from tests.support.servers import mongodb

    src, dst = namespaces.open("mongodb", "nan-src"), namespaces.open(destination, "nan-dst")

    async def fill_source() -> None:
        async with src, dst:
            await _emptied(src, dst)
            await src.workflows.persist_workflow_snapshot(
                workflow_name="wf", run_id="run", snapshot={"score": 0.5, "steps": [1, 2]}
            )

    asyncio.run(fill_source())
    with mongodb.driver_database(namespaces.url("mongodb", "nan-src")) as database:
        database["mastra_workflow_snapshot"].update_one(
            {"run_id": "run"},
            {"$set": {"snapshot.score": float("nan")}},
            bypass_document_validation=True,
        )

    async def copy() -> None:
        async with src, dst:
            if destination == "mongodb":
                report = await copy_domains(src, dst, domains=["workflows"])
                assert report.ok
                copied = await dst.workflows.load_workflow_snapshot(
                    workflow_name="wf", run_id="run"
                )
                assert copied is not None and copied["steps"] == [1, 2]
                assert math.isnan(copied["score"])  # NaN, not None
                # A rerun finds the record unchanged, its NaN included.
                again = await copy_domains(src, dst, domains=["workflows"])
                assert again.written == 0 and again.ok
                return
            with pytest.raises(ValueError, match="Out of range float values"):
                await copy_domains(src, dst, domains=["workflows"])
            assert await dst.workflows.count_records(table="workflow_snapshot") == 0

    asyncio.run(copy())
