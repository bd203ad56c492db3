"""Real Mastra and composite-store on one database, both ways (issue 16 item 3).

For PostgreSQL, a libSQL file and a stdlib-SQLite file:

- the side that comes second runs its ``init()`` on the database the other created and wrote,
  and changes nothing the other wrote (every table's rows and definition are dumped before
  and after, and must be equal); composite-store's init then finds the schema current;
- threads, messages (format 2: text, reasoning, tool invocation with its result, file),
  resources with working memory, workflow snapshots, scores and AI spans written through one
  side's API read back identically through the other's: ids, text, JSON values, roles, types,
  and timestamps as the same instants to the millisecond.

Away from UTC everywhere: PostgreSQL sessions (ours and Mastra's) in Asia/Tokyo, the Node
process in America/New_York, this process in America/Los_Angeles.

``tests/data/mastra/make_dbs.mjs`` is Mastra's side: ``*-sample`` writes the ``m-*`` records
and prints them as JSON, ``*-read`` reads the ``cs-*`` records this module wrote, and
``records cs`` gives those records (the same kinds and values, ids ``cs-*``).

Runs where ``COMPOSITE_STORE_TEST_MASTRA_NODE`` names a folder holding tests/data/mastra's
``package.json`` installed (``npm ci``: @mastra/pg, @mastra/libsql and @mastra/core as
pinned there) and ``node`` is on PATH; skipped otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from composite_store import open_store
from composite_store.schema import tables_for
from composite_store.schema.drift import Difference, Kind, compare
from composite_store.schema.migrations import SchemaDriftWarning
from composite_store.store import Store
from tests.support.every_domain import create_every_domain
from tests.support.servers import postgres

SCRIPT = Path(__file__).parent / "data" / "mastra" / "make_dbs.mjs"
NODE_ENV = "COMPOSITE_STORE_TEST_MASTRA_NODE"
SERVER_TZ, NODE_TZ, PYTHON_TZ = "Asia/Tokyo", "America/New_York", "America/Los_Angeles"
TIMESTAMPS = frozenset({"createdAt", "updatedAt", "startedAt", "endedAt"})


@pytest.fixture(scope="module")
def node_folder() -> Path:
    folder = os.environ.get(NODE_ENV)
    if not folder or shutil.which("node") is None:
        pytest.skip(f"set {NODE_ENV} to a folder with tests/data/mastra's packages installed")
    path = Path(folder)
    if not (path / "node_modules" / "@mastra" / "pg").is_dir():
        pytest.fail(f"{NODE_ENV}={folder} has no node_modules/@mastra/pg: run npm ci there")
    return path


@pytest.fixture(autouse=True, scope="module")
def python_time_zone() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", PYTHON_TZ)
        time.tzset()
        assert time.localtime(0).tm_gmtoff == -8 * 3600, "process time zone did not change"
        yield
    time.tzset()


class Mastra:
    """Runs ``make_dbs.mjs`` (Node in ``NODE_TZ``) and returns the JSON it printed."""

    def __init__(self, node_folder: Path, work: Path) -> None:
        # Node resolves the script's imports from the script's folder: a copy of it beside a
        # link to the installed node_modules (the installed folder is not written to).
        work.mkdir(exist_ok=True)
        self.script = work / SCRIPT.name
        shutil.copyfile(SCRIPT, self.script)
        (work / "node_modules").symlink_to(node_folder / "node_modules")

    def __call__(self, *args: str) -> dict[str, Any]:
        done = subprocess.run(
            ["node", str(self.script), *args],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**os.environ, "TZ": NODE_TZ},
        )
        assert done.returncode == 0, f"make_dbs.mjs {args[0]} failed:\n{done.stderr[-4000:]}"
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        if "processTimeZone" in out:
            assert out["processTimeZone"] == NODE_TZ
        if "sessionTimeZone" in out:
            assert out["sessionTimeZone"] == SERVER_TZ
        return out


# -- one database, seen by both sides ----------------------------------------------------


class Shared:
    """One database: its composite-store URL, Mastra's arguments, a dump of it."""

    def __init__(self, url: str, mastra_args: list[str], dump: Callable[[], Dump]) -> None:
        self.url, self.mastra_args, self.dump = url, mastra_args, dump


#: table -> (its definition, its rows), each as sorted text.
Dump = dict[str, tuple[list[str], list[str]]]


def _sqlite_dump(path: Path) -> Dump:
    conn = sqlite3.connect(path)
    try:
        found: Dump = {}
        catalog = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        for kind, name, table, sql in catalog:
            found.setdefault(table, ([], []))[0].append(f"{kind} {name}: {sql}")
        for table, (definition, rows) in found.items():
            definition.sort()
            rows.extend(sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{table}"')))
        return found
    finally:
        conn.close()


def _postgres_dump(url: str, schema: str) -> Dump:
    import psycopg

    found: Dump = {}
    with psycopg.connect(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default"
            " FROM information_schema.columns WHERE table_schema = %s",
            (schema,),
        ).fetchall()
        for table, *column in columns:
            found.setdefault(table, ([], []))[0].append(f"column {column}")
        indexes = conn.execute(
            "SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = %s", (schema,)
        ).fetchall()
        for table, definition in indexes:
            found[table][0].append(f"index {definition}")
        constraints = conn.execute(
            "SELECT c.relname, k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k"
            " JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s",
            (schema,),
        ).fetchall()
        for table, name, definition in constraints:
            found[table][0].append(f"constraint {name} {definition}")
        triggers = conn.execute(
            "SELECT event_object_table, trigger_name, action_timing, event_manipulation,"
            " action_statement FROM information_schema.triggers WHERE trigger_schema = %s",
            (schema,),
        ).fetchall()
        for table, *trigger in triggers:
            found[table][0].append(f"trigger {trigger}")
        for table, (definition, rows) in found.items():
            definition.sort()
            rows.extend(
                sorted(
                    r[0]
                    for r in conn.execute(
                        f'SELECT row_to_json(t)::text FROM "{schema}"."{table}" t'
                    )
                )
            )
    return found


def _unchanged(before: Dump, after: Dump, writer: str) -> list[str]:
    """Every table ``writer`` left is as it was: its rows, columns, keys, indexes and
    triggers. New tables may appear, and new indexes and triggers on ``writer``'s tables
    (returned): Mastra's init() adds its own to tables composite-store created."""
    added = []
    for table, (definition, rows) in before.items():
        assert table in after, f"{table} of {writer} is gone"
        now = after[table][0]
        assert set(definition) <= set(now), f"definition of {writer}'s {table} changed"
        extra = sorted(set(now) - set(definition))
        assert all(d.startswith(("index ", "trigger ")) for d in extra), (table, extra)
        added += extra
        assert after[table][1] == rows, f"rows of {writer}'s {table} changed"
    return added


@pytest.fixture
def pg_schema() -> Iterator[tuple[str, str]]:
    from composite_store_postgres.provision import create_namespace, drop_namespace

    found = postgres.reached()
    schema = asyncio.run(create_namespace(found.url))
    try:
        yield found.url, schema
    finally:
        asyncio.run(drop_namespace(found.url, schema))


def _away_from_utc(url: str) -> str:
    options = f"-c%20timezone%3D{SERVER_TZ}"
    return f"{url}{'&' if '?' in url else '?'}options={options}"


@pytest.fixture(params=["postgres", "sqlite", "libsql"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Shared:
    if request.param == "postgres":
        from composite_store_postgres.provision import store_url

        url, schema = request.getfixturevalue("pg_schema")
        plain = url.replace("postgresql+psycopg://", "postgresql://").split("?")[0]
        return Shared(
            _away_from_utc(store_url(url, schema)),
            ["pg", _away_from_utc(plain), schema],
            lambda: _postgres_dump(plain, schema),
        )
    if request.param == "libsql":
        pytest.importorskip("libsql")
    path = tmp_path / "shared.db"
    return Shared(f"{request.param}:///{path}", ["libsql", str(path)], lambda: _sqlite_dump(path))


# -- comparing records ---------------------------------------------------------------------


def _instant(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert isinstance(value, datetime) and value.tzinfo is not None, value
    return value


def _agree(expected: dict[str, Any], got: dict[str, Any], what: str, *, skip: set[str]) -> None:
    """Field by field: a missing field is None; timestamps compare as instants."""
    for key in sorted((expected.keys() | got.keys()) - skip):
        want, have = expected.get(key), got.get(key)
        if key in TIMESTAMPS and want is not None and have is not None:
            assert _instant(have) == _instant(want), f"{what}.{key}: {have!r} != {want!r}"
        else:
            assert have == want, f"{what}.{key}: {have!r} != {want!r}"


#: composite-store's stored names that Mastra's API spells otherwise.
API_NAMES = {"thread_id": "threadId", "workflow_name": "workflowName", "run_id": "runId"}


def _api(record: Any) -> dict[str, Any]:
    """A composite-store record as Mastra's API spells it (JSON values, camelCase)."""
    row: dict[str, Any] = record.model_dump(by_alias=True, mode="json")
    if "content" in row and hasattr(record.content, "to_json"):
        row["content"] = json.loads(record.content.to_json())
    return {API_NAMES.get(k, k): v for k, v in row.items()}


# -- what each side reads of the other's records ----------------------------------------------


async def _read_through_us(store: Store, written: dict[str, Any]) -> None:
    """Mastra's records (``*-sample``'s ``written``) read through composite-store's API."""
    threads = {t["id"]: t for t in written["threads"]}
    for thread_id, thread in threads.items():
        got = await store.memory.get_thread_by_id(thread_id=thread_id)
        assert got is not None, thread_id
        _agree(thread, _api(got), thread_id, skip=set())
    for resource in written["resources"]:
        found = await store.memory.get_resource_by_id(resource_id=resource["id"])
        assert found is not None, resource["id"]
        _agree(resource, _api(found), resource["id"], skip=set())
    for thread_id in threads:
        page = await store.memory.list_messages(thread_id=thread_id, per_page=False)
        expected = [m for m in written["messages"] if m["threadId"] == thread_id]
        assert [m.id for m in page.items] == [m["id"] for m in expected]
        for message, got_message in zip(expected, page.items, strict=True):
            _agree(message, _api(got_message), message["id"], skip=set())
    for run in written["runs"]:
        key = {"workflow_name": run["workflowName"], "run_id": run["runId"]}
        assert await store.workflows.load_workflow_snapshot(**key) == run["snapshot"]
        got_run = await store.workflows.get_workflow_run_by_id(**key)
        assert got_run is not None
        # Mastra's own timestamps when the sample gave none (the jsonb run).
        skip = set() if "createdAt" in run else {"createdAt", "updatedAt"}
        _agree(run, _api(got_run), run["runId"], skip=skip)
    for score in written["scores"]:
        got_score = await store.scores.get_score_by_id(id=score["id"])
        assert got_score is not None, score["id"]
        _agree(score, _api(got_score), score["id"], skip=set())
        page_scores = await store.scores.list_scores_by_run_id(run_id=score["runId"])
        assert [s.id for s in page_scores.items] == [score["id"]]
    trace = await store.observability.get_trace(trace_id=written["spans"][0]["traceId"])
    assert trace is not None
    assert [s.span_id for s in trace.spans] == [s["spanId"] for s in written["spans"]]
    for span, got_span in zip(written["spans"], trace.spans, strict=True):
        # createdAt/updatedAt: Mastra's, set when it wrote the span.
        assert got_span.created_at is not None
        _agree(span, _api(got_span), span["spanId"], skip={"createdAt", "updatedAt"})


_STAMPS = {"createdAt", "updatedAt"}
#: One line of the large snapshot's transcript (``_write_through_us``).
TRANSCRIPT_LINE = "the agent called the weather tool for Zürich and summarized the forecast"
#: Span columns that @mastra/pg's getTrace() leaves out of its SELECT.
UNREAD_BY_GET_TRACE = {
    "requestContext",
    *(f"{kind}Entity{part}" for kind in ("parent", "root") for part in ("Type", "Id", "Name")),
    *(f"{kind}ntityVersionId" for kind in ("e", "parentE", "rootE")),
    "experimentId",
}


async def _write_through_us(
    store: Store, records: dict[str, Any], *, exact_spans: bool
) -> dict[str, Any]:
    """Write the ``cs-*`` records through composite-store; return them as written (the spans
    as stored; ``exact_spans``: with the timestamps they were given)."""
    # Scores and spans with explicit timestamps (Mastra's own writers take "now").
    score = {**records["score"], "createdAt": "2025-01-02T03:04:05.711Z"}
    score["updatedAt"] = "2025-01-02T03:04:05.712Z"
    spans = [
        {**span, "createdAt": "2025-01-02T03:04:05.713Z", "updatedAt": None}
        for span in records["spans"]
    ]
    await store.memory.save_thread(thread=records["thread"])
    await store.memory.save_resource(resource=records["resource"])
    await store.memory.save_messages(messages=records["messages"])
    # save_messages bumped the thread's updatedAt to now: write it back as given.
    thread = await store.memory.save_thread(thread=records["thread"])
    # A snapshot large enough for PostgreSQL to compress (past about 2 KB): the adapter's
    # sessions compress with LZ4 (composite_store_postgres.cursor.LZ4_COMPRESSION), and
    # Mastra must read such a value back as it reads its own pglz ones.
    steps = [{"step": f"step-{i}", "output": f"{TRANSCRIPT_LINE} {i}"} for i in range(80)]
    run = {**records["run"], "snapshot": {**records["run"]["snapshot"], "transcript": steps}}
    await store.workflows.persist_workflow_snapshot(
        workflow_name=run["workflowName"],
        run_id=run["runId"],
        snapshot=run["snapshot"],
        resource_id=run["resourceId"],
        created_at=run["createdAt"],
        updated_at=run["updatedAt"],
    )
    saved_score = await store.scores.save_score(score=score)
    saved_spans = [_api(s) for s in await store.observability.batch_create_spans(records=spans)]
    # Once Mastra's init() has run on PostgreSQL, its trigger sets the spans' createdAt and
    # updatedAt to the server's now() (docs/schema.md): compare what is stored, as we read it.
    trace = await store.observability.get_trace(trace_id=spans[0]["traceId"])
    assert trace is not None
    stored = [_api(s) for s in trace.spans]
    for saved, found in zip(saved_spans, stored, strict=True):
        _agree(saved, found, saved["spanId"], skip=set() if exact_spans else _STAMPS)
    return {
        "thread": _api(thread),
        "resource": records["resource"],
        "messages": records["messages"],
        "run": run,
        "score": _api(saved_score),
        "spans": stored,
    }


def _read_through_mastra(read: dict[str, Any], wrote: dict[str, Any]) -> None:
    """What ``*-read`` printed of the ``cs-*`` records, against what composite-store wrote."""
    _agree(wrote["thread"], read["thread"], "cs-thread", skip=set())
    _agree(wrote["resource"], read["resource"], "cs-user", skip=set())
    assert [m["id"] for m in read["messages"]] == [m["id"] for m in wrote["messages"]]
    for message, got in zip(wrote["messages"], read["messages"], strict=True):
        # Mastra's reads leave out the type when it is the default "v2".
        _agree(message, {"type": "v2", **got}, message["id"], skip=set())
    assert read["snapshot"] == wrote["run"]["snapshot"]
    _agree(wrote["run"], read["run"], "cs-run", skip=set())
    _agree(wrote["score"], read["score"], "cs-score", skip=set())
    assert [s["id"] for s in read["scoresByRun"]] == ["cs-score"]
    assert read["trace"]["traceId"] == "cs-trace"
    spans = read["trace"]["spans"]
    assert [s["spanId"] for s in spans] == [s["spanId"] for s in wrote["spans"]]
    for span, got_span in zip(wrote["spans"], spans, strict=True):
        # Mastra's PostgreSQL getTrace() selects no requestContext (nor the parent/root
        # entity columns): compare what it returns.
        unread = set() if "requestContext" in got_span else UNREAD_BY_GET_TRACE
        _agree(span, got_span, span["spanId"], skip=unread)


#: The domains whose records this module compares.
COMPARED = frozenset({"memory", "workflows", "scores", "observability"})
_SCORER_COLUMNS = ("scorerId", "runId", "scorer", "score", "input", "output", "source")
#: (table, kind, column) where Mastra's libSQL tables are looser than ours (docs/schema.md:
#: nullable scorer and snapshot columns, no primary key on the spans). DESIGN.md section 9
#: wants the schema checks to accept them as physical variants; they do not yet.
LOOSER_IN_MASTRA: set[tuple[str, Kind, str | None]] = {
    *(
        ("workflow_snapshot", Kind.NULLABILITY, c)
        for c in ("workflow_name", "run_id", "snapshot", "createdAt", "updatedAt")
    ),
    *(("scorers", Kind.NULLABILITY, c) for c in (*_SCORER_COLUMNS, "createdAt", "updatedAt")),
    ("ai_spans", Kind.PRIMARY_KEY, None),
}


def _by_design(difference: Difference) -> bool:
    """A difference of Mastra's tables from composite-store's documented ones that is by
    design: one of composite-store's own indexes is missing (or shaped otherwise)."""
    index = difference.index
    own = index is not None and not index.families
    if own and difference.kind in (Kind.MISSING_INDEX, Kind.INDEX_SHAPE):
        return True
    return (difference.spec.base_name, difference.kind, difference.name) in LOOSER_IN_MASTRA


async def _current_and_without_drift(store: Store, *, mastra_first: bool = False) -> None:
    for dom in store.domains.values():
        if mastra_first and dom.domain not in COMPARED:
            # Mastra 1.71's workflow definitions are another model (docs/schema.md), and its
            # datasets and experiments tables make NOT NULL what composite-store documents
            # nullable: outside what this module compares.
            continue
        physical = await dom.describe_physical()
        found = compare(tables_for(dom.domain), physical)
        if mastra_first:
            # Where Mastra's tables differ from ours by design (docs/schema.md, "Where the
            # tables differ from Mastra 1.x's"): composite-store's own indexes, which
            # Mastra's tables lack (the migration our init() named adds the spans' one).
            found = [d for d in found if not _by_design(d)]
        assert found == [], (dom.domain, [d.message for d in found])


async def _init_and_read(url: str, written: dict[str, Any], *, mastra_first: bool) -> None:
    """Our init() (no drift), then Mastra's records read through our API."""
    store = open_store(url)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SchemaDriftWarning)
        await store.init()
    drift = [str(w.message) for w in caught if issubclass(w.category, SchemaDriftWarning)]
    if mastra_first:
        # A database Mastra created is at schema version 0 (docs/operations.md): our init()
        # names the migration that adds composite-store's own indexes, and keeps working.
        assert all("composite-store migrate" in d for d in drift), drift
    else:
        assert drift == []
    try:
        await _current_and_without_drift(store, mastra_first=mastra_first)
        await _read_through_us(store, written)
    finally:
        await store.close()


async def _write(url: str, records: dict[str, Any], *, create: bool) -> dict[str, Any]:
    if create:
        await create_every_domain(url)
    with warnings.catch_warnings():
        # On Mastra's database: the migration _init_and_read saw named, named again.
        warnings.simplefilter("ignore" if not create else "error", SchemaDriftWarning)
        async with open_store(url) as store:
            return await _write_through_us(store, records, exact_spans=create)


def test_composite_store_second_on_what_mastra_created(
    node_folder: Path, shared: Shared, tmp_path: Path
) -> None:
    """Mastra creates the database and writes; our init() changes none of it, we read
    Mastra's records, then write ours and Mastra reads them."""
    mastra = Mastra(node_folder, tmp_path / "node")
    backend, *where = shared.mastra_args
    written = mastra(f"{backend}-sample", *where)["written"]
    before = shared.dump()
    asyncio.run(_init_and_read(shared.url, written, mastra_first=True))
    assert _unchanged(before, shared.dump(), "Mastra") == []
    wrote = asyncio.run(_write(shared.url, mastra("records", "cs"), create=False))
    _read_through_mastra(mastra(f"{backend}-read", *where)["read"], wrote)


def test_mastra_second_on_what_composite_store_created(
    node_folder: Path, shared: Shared, tmp_path: Path
) -> None:
    """We create the database and write; Mastra's init() succeeds and changes none of it,
    Mastra reads our records, then writes its own and we read them."""
    mastra = Mastra(node_folder, tmp_path / "node")
    backend, *where = shared.mastra_args
    wrote = asyncio.run(_write(shared.url, mastra("records", "cs"), create=True))
    before = shared.dump()
    read = mastra(f"{backend}-read", *where)["read"]
    added = _unchanged(before, shared.dump(), "composite-store")
    if backend == "pg":
        # As docs/schema.md says: Mastra's two expression indexes over the snapshot JSON and
        # its trigger on the spans (BEFORE INSERT and UPDATE), which composite-store does not
        # create.
        assert sum(a.startswith("index ") and "workflow_snapshot" in a for a in added) == 2
        assert sum("mastra_ai_spans_timestamps" in a for a in added) == 2, added
        assert len(added) == 4, added
    else:
        assert added == []
    _read_through_mastra(read, wrote)
    written = mastra(f"{backend}-sample", *where)["written"]
    asyncio.run(_init_and_read(shared.url, written, mastra_first=False))


def test_postgres_reads_other_writers_microseconds_as_milliseconds(
    pg_schema: tuple[str, str],
) -> None:
    """Mastra's PostgreSQL trigger sets the spans' createdAt/updatedAt to ``now()``, which
    has microseconds: composite-store reads them at millisecond precision, as the API
    promises and as Mastra's own reads (JavaScript Dates) see them."""
    import psycopg
    from composite_store_postgres.provision import store_url

    url, schema = pg_schema
    plain = url.replace("postgresql+psycopg://", "postgresql://").split("?")[0]
    span = {
        "traceId": "t",
        "spanId": "s",
        "name": "root",
        "spanType": "agent_run",
        "startedAt": "2025-01-02T03:04:05.678Z",
    }

    async def write() -> None:
        async with open_store(store_url(url, schema)) as store:
            await store.observability.create_span(span=span)

    async def read() -> Any:
        async with open_store(_away_from_utc(store_url(url, schema))) as store:
            return await store.observability.get_span(trace_id="t", span_id="s")

    asyncio.run(write())
    with psycopg.connect(plain) as conn:
        conn.execute(
            f'UPDATE "{schema}".mastra_ai_spans SET "createdAtZ" = %s, "updatedAtZ" = %s',
            ("2025-01-02T03:04:05.678901Z", "2025-01-02T03:04:05.999999Z"),
        )
    got = asyncio.run(read())
    assert got is not None
    assert got.created_at == _instant("2025-01-02T03:04:05.678Z")
    assert got.updated_at == _instant("2025-01-02T03:04:05.999Z")
    assert got.started_at == _instant(span["startedAt"])
