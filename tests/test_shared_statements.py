"""Statements shared between the databases of one layout (``sql.engine.cache``).

A store opened after another of the same kind reuses the statements the first compiled
(``StatementCache``'s ``layout``): its first calls cost what its later ones do. These tests
hold the sharing to its two promises, on every relational backend that runs here:

- it happens: a second store of the same URL compiles nothing, and reads what it wrote;
- it is safe: a store whose tables or dialect differ compiles its own, and no statement
  builder reads anything of its domain or database that the layout leaves out (an audit of
  every builder of the package, run on a proxy that records what it reads).
"""

from __future__ import annotations

import ast
import asyncio
import gc
import sqlite3
import types
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

import composite_store as cs
from composite_store.admin.copy import copy_domains
from composite_store.sql.database import SqlDatabase
from composite_store.sql.engine import cache
from composite_store.sql.engine.cache import StatementCache, settings_of
from composite_store.sql.store import SqlStore
from tests.support.sql_stores import sql_store_url

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every statement compiled from here on, in a shared cache emptied first."""
    compiled: list[str] = []

    class Counted(cache.Prepared):
        __slots__ = ()

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            compiled.append(self.sql)

    monkeypatch.setattr(cache, "Prepared", Counted)
    monkeypatch.setattr(cache, "_shared", cache.Recent(cache._shared.size))
    return compiled


async def _clear(store: cs.Store) -> None:
    for domain in ("memory", "workflows", "observability"):
        found = store.get(domain)
        assert found is not None
        await found.dangerously_clear_all()


async def _turn(store: cs.Store, tag: str) -> list[str]:
    """A conversation turn and a workflow step: the ids of the messages read back."""
    memory, workflows = store.memory, store.workflows
    assert memory is not None and workflows is not None
    thread = cs.Thread(
        id=f"t-{tag}", resource_id="r", title=tag, metadata={"k": tag},
        created_at=NOW, updated_at=NOW,
    )
    await memory.save_thread(thread=thread)
    await memory.save_messages(messages=[
        cs.Message(
            id=f"m-{tag}-{i}", thread_id=thread.id, resource_id="r", role="user", type="v2",
            content={"format": 2, "parts": [{"type": "text", "text": f"{tag} {i}"}]},
            created_at=NOW + timedelta(seconds=i),
        )
        for i in range(3)
    ])
    read = await memory.get_thread_by_id(thread_id=thread.id)
    assert read is not None and (read.title, read.metadata) == (tag, {"k": tag})
    await workflows.persist_workflow_snapshot(
        workflow_name="w", run_id=f"run-{tag}", snapshot={"status": "running", "tag": tag}
    )
    loaded = await workflows.load_workflow_snapshot(workflow_name="w", run_id=f"run-{tag}")
    assert loaded is not None and loaded["tag"] == tag
    page = await memory.list_messages(thread_id=thread.id, per_page=20, page=0)
    return [m.id for m in page.items]


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "mariadb"])
def test_a_second_store_of_a_url_compiles_nothing(
    backend: str, compiles: list[str], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = sql_store_url(backend, request, tmp_path)

    async def main() -> None:
        async with cs.open_store(url) as first:
            await _clear(first)  # the server's namespace is the test session's
            assert await _turn(first, "a") == ["m-a-0", "m-a-1", "m-a-2"]
        assert compiles, "the first store compiles its statements"
        compiled_by_first = len(compiles)
        async with cs.open_store(url) as second:
            assert await _turn(second, "b") == ["m-b-0", "m-b-1", "m-b-2"]
            assert len(compiles) == compiled_by_first, compiles[compiled_by_first:]
            # The shared statements read the rows both stores wrote.
            memory = second.memory
            assert memory is not None
            threads = await memory.list_threads(filter={"resource_id": "r"})
            assert {t.id for t in threads.items} == {"t-a", "t-b"}

    asyncio.run(main())


def test_a_store_of_another_prefix_compiles_its_own(compiles: list[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/two.db"

    async def main() -> None:
        async with cs.open_store(url) as plain:
            await _turn(plain, "a")
        compiled_by_first = len(compiles)
        async with cs.open_store(url, prefix="other_") as other:
            assert await _turn(other, "b") == ["m-b-0", "m-b-1", "m-b-2"]
        # Every statement compiled again, each on the other prefix's tables only.
        later = compiles[compiled_by_first:]
        assert len(later) == compiled_by_first
        assert all("other_" in sql and "mastra_" not in sql for sql in later), later

    asyncio.run(main())
    with sqlite3.connect(tmp_path / "two.db") as conn:
        rows = conn.execute("SELECT id FROM other_threads").fetchall()
    assert rows == [("t-b",)]


def test_a_process_keeps_the_statements_of_its_recent_layouts_only(
    compiles: list[str], tmp_path: Path
) -> None:
    """A store per tenant, each with a prefix of its own: a statement holds the tables of the
    database that compiled it, so only the recent layouts' statements (and tables) stay
    alive after their stores closed."""
    url = f"sqlite:///{tmp_path}/tenants.db"
    tenants = cache._SHARED_LAYOUTS + 4

    def metadata_alive() -> int:
        # Until nothing more is freed: a cycle whose objects have finalizers or weak
        # references with callbacks can take a second collection.
        while gc.collect():
            pass
        return sum(isinstance(o, sa.MetaData) for o in gc.get_objects())

    async def serve(tenant: int, tag: str) -> list[str]:
        # A store of its own, closed and gone on return: no local keeps it.
        async with cs.open_store(url, prefix=f"tenant{tenant}_") as store:
            return await _turn(store, tag)

    async def main() -> None:
        before = metadata_alive()
        for tenant in range(tenants):
            await serve(tenant, "a")
        assert len(cache._shared) == cache._SHARED_LAYOUTS
        assert metadata_alive() - before <= cache._SHARED_LAYOUTS
        # The most recent tenant's statements are still shared.
        compiled = len(compiles)
        assert await serve(tenants - 1, "b") == ["m-b-0", "m-b-1", "m-b-2"]
        assert len(compiles) == compiled

    asyncio.run(main())


def test_settings_of_tells_dialects_apart() -> None:
    def dialect(**options: Any) -> sa.Dialect:
        return sa.create_engine("sqlite://", **options).dialect

    assert settings_of(dialect()) == settings_of(dialect())
    assert settings_of(dialect()) != settings_of(dialect(json_serializer=repr))
    assert settings_of(dialect()) != settings_of(dialect(paramstyle="named"))
    newer = dialect()
    newer.server_version_info = (99, 0, 0)
    assert settings_of(dialect()) != settings_of(newer)
    assert settings_of(dialect()) != settings_of(postgresql.dialect())
    # State it does not know keeps two dialects apart: an object compares by identity, an
    # unhashable one equals nothing; containers compare by their items.
    for make, equal in (
        (object, False),
        (lambda: bytearray(b"x"), False),
        (lambda: [1, "a"], True),
        (lambda: {"k": (1, 2)}, True),
        (lambda: {"k": [object()]}, False),
    ):
        first, second = dialect(), dialect()
        first.extra, second.extra = make(), make()  # type: ignore[attr-defined]
        assert (settings_of(first) == settings_of(second)) is equal, make()
    first, second = dialect(), dialect()
    first.extra, second.extra = {"k": 1}, {"k": 2}  # type: ignore[attr-defined]
    assert settings_of(first) != settings_of(second)

    # What SQLAlchemy memoizes on first use is derived from the rest, not a setting: a
    # dialect that compiled a bind parameter shares with one that did not yet (a store
    # whose init() compiled one, and a store whose init() compiled none).
    used = dialect()
    sa.select(sa.literal(1)).compile(dialect=used)
    assert "_bind_typing_render_casts" in vars(used)
    assert settings_of(used) == settings_of(dialect())


def test_without_a_layout_nothing_is_shared(compiles: list[str]) -> None:
    def build() -> sa.Select[Any]:
        return sa.select(sa.literal_column("1"))

    first, second = (StatementCache(sa.create_engine("sqlite://").dialect) for _ in range(2))
    assert first.get(build) is not second.get(build)
    assert len(compiles) == 2
    shared = [
        StatementCache(sa.create_engine("sqlite://").dialect, layout=lambda: "same")
        for _ in range(2)
    ]
    assert shared[0].get(build) is shared[1].get(build)
    assert len(compiles) == 3


# -- the audit: what statement builders read -----------------------------------------------------

#: What a builder may read of its domain (``self``) and database: what the layout covers
#: (``SqlDatabase.layout``: the dialect, the prefix and schema the tables are rendered from)
#: and what the domain's class fixes (``specs``).
ALLOWED_READS = frozenset(
    {
        "self.db",
        "self.specs",
        "self.db.dialect",
        "self.db.tables",
        "self.db.metadata",
        "self.db.prefix",
        "self.db.schema",
    }
)


class _Recorder:
    """Stands for a domain or database: records each instance attribute read through it, and
    runs methods and properties with itself as ``self``, so that their reads count too."""

    def __init__(self, target: object, path: str, reads: set[str]) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_reads", reads)

    def __getattr__(self, name: str) -> Any:
        target, path, reads = self._target, self._path, self._reads
        if name in vars(target):
            reads.add(f"{path}.{name}")
            value = vars(target)[name]
            if isinstance(value, SqlDatabase):
                return _Recorder(value, f"{path}.{name}", reads)
            return value
        found = _class_attribute(type(target), name)
        if isinstance(found, property):
            return found.fget(self)  # type: ignore[misc]
        if isinstance(found, types.FunctionType):
            return types.MethodType(found, self)
        return getattr(target, name)  # a class constant, a static or class method

    def __setattr__(self, name: str, value: Any) -> None:
        raise AssertionError(f"a statement builder sets {self._path}.{name}")


def _class_attribute(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    raise AttributeError(name)


def _on_recorder(build: Callable[..., Any], recorder: _Recorder) -> Callable[..., Any]:
    """``build`` with ``recorder`` for the ``self`` it closes over (or is bound to)."""
    if isinstance(build, types.MethodType):
        return types.MethodType(build.__func__, recorder)
    code = build.__code__
    cells = tuple(
        types.CellType(recorder) if name == "self" else cell
        for name, cell in zip(code.co_freevars, build.__closure__ or (), strict=True)
    )
    return types.FunctionType(code, build.__globals__, build.__name__, None, cells)


def _domain_of(build: Callable[..., Any]) -> object:
    if isinstance(build, types.MethodType):
        return build.__self__
    cells = dict(zip(build.__code__.co_freevars, build.__closure__ or (), strict=True))
    return cells["self"].cell_contents


def _builders_in_source() -> set[str]:
    """The qualified name of every function the package passes to ``prepared`` or
    ``prepared_rows`` (the statement builders), read from the source."""
    found: set[str] = set()
    for path in sorted((ROOT / "composite_store" / "sql").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names: dict[tuple[str, str], str] = {}  # (enclosing qualname, local name) -> qualname
        passed: list[tuple[str, ast.expr]] = []

        def walk(
            node: ast.AST,
            qualname: str,
            names: dict[tuple[str, str], str] = names,
            passed: list[tuple[str, ast.expr]] = passed,
        ) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    walk(child, f"{qualname}{child.name}.")
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    own = f"{qualname}{child.name}"
                    names[(qualname, child.name)] = own
                    walk(child, f"{own}.<locals>.")
                else:
                    if (
                        isinstance(child, ast.Call)
                        and isinstance(child.func, ast.Attribute)
                        and child.func.attr in ("prepared", "prepared_rows")
                        and child.args
                    ):
                        passed.append((qualname, child.args[0]))
                    walk(child, qualname)

        walk(tree, "")
        for enclosing, arg in passed:
            if isinstance(arg, ast.Name):
                if (enclosing, arg.id) in names:  # else a parameter passing a builder on
                    found.add(names[(enclosing, arg.id)])
            elif isinstance(arg, ast.Attribute):  # self._method: a method of the class
                cls = enclosing.split(".")[0]
                found.add(f"{cls}.{arg.attr}")
    return found


@pytest.fixture
def audited(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, set[str]]]:
    """Every builder compiled from here on, run again on recorders: its qualified name ->
    the reads of its domain and database."""
    reads_of: dict[str, set[str]] = {}
    real_get = StatementCache.get

    def get(self: StatementCache, build: Callable[..., Any], *variant: Any,
            scope: Any = None) -> Any:
        reads: set[str] = set()
        _on_recorder(build, _Recorder(_domain_of(build), "self", reads))(*variant)
        qualname = build.__code__.co_qualname
        reads_of.setdefault(qualname, set()).update(reads)
        return real_get(self, build, *variant, scope=scope)

    monkeypatch.setattr(StatementCache, "get", get)
    monkeypatch.setattr(cache, "_shared", cache.Recent(cache._shared.size))
    yield reads_of


async def _every_statement(store: cs.Store, other: cs.Store) -> None:
    """Calls that reach every statement builder of the relational domains."""
    memory, workflows, observability = store.memory, store.workflows, store.observability
    assert memory is not None and workflows is not None and observability is not None
    for tag in ("a", "b"):
        await _turn(store, tag)
    await memory.save_resource(resource=cs.Resource(
        id="r", working_memory="wm", metadata={}, created_at=NOW, updated_at=NOW))
    await memory.update_resource(resource_id="r", working_memory="wm2")
    await memory.update_thread(id="t-a", title="renamed", metadata={"k": "v"})
    await memory.list_threads(filter={"resource_id": "r"}, per_page=1, page=0)
    await memory.list_threads(filter={"resource_id": "r"}, per_page=False)
    await memory.list_messages(
        thread_id="t-a", per_page=1, page=0,
        include=[cs.Include(id="m-b-1", thread_id="t-b", with_previous_messages=1,
                            with_next_messages=1)],
    )
    await memory.list_messages(thread_id="t-a", per_page=False)
    await memory.list_messages(thread_id="t-a", resource_id="r", per_page=2, page=0,
                               include_total=False)
    await memory.list_messages_by_id(message_ids=["m-a-0", "m-b-0"])
    await memory.update_messages(messages=[{"id": "m-a-0", "content": {"format": 2, "parts": []}}])
    await memory.delete_messages(message_ids=["m-a-2"])
    await memory.delete_thread(thread_id="t-b")
    await workflows.list_workflow_runs(workflow_name="w", per_page=1, page=0)
    await workflows.list_workflow_runs(per_page=False)
    await workflows.get_workflow_run_by_id(run_id="run-a", workflow_name="w")
    await observability.batch_create_spans(records=[
        {"traceId": "tr", "spanId": f"s{i}", "parentSpanId": None if i == 0 else "s0",
         "name": "n", "spanType": "agent_run", "startedAt": NOW, "endedAt": NOW,
         "isEvent": False}
        for i in range(2)
    ])
    await observability.get_trace(trace_id="tr")
    await observability.get_trace_light(trace_id="tr")
    await observability.list_traces(pagination={"page": 0, "per_page": 5})
    await memory.fetch_records(table="threads", keys=[("t-a",), ("absent",)])
    await copy_domains(store, other)


def test_statement_builders_read_only_what_the_layout_covers(
    audited: dict[str, set[str]], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """On SQLite, PostgreSQL and MariaDB, whose statements differ (a batch of messages is one
    statement of data-modifying CTEs on PostgreSQL, its checks one probe on MariaDB): between
    them, every builder."""
    backends = ("sqlite", "postgres", "mariadb")
    urls = [sql_store_url(backend, request, tmp_path) for backend in backends]

    async def main() -> None:
        for url in urls:
            async with (
                cs.open_store(url) as store,
                cs.open_store(f"sqlite:///{tmp_path}/copied-{len(audited)}.db") as other,
            ):
                assert isinstance(store, SqlStore)
                await _clear(store)
                await _every_statement(store, other)

    asyncio.run(main())
    outside = {name: sorted(reads - ALLOWED_READS) for name, reads in audited.items()}
    assert not {name: reads for name, reads in outside.items() if reads}
    # The audit reached every builder of the package, so none escaped it.
    missed = _builders_in_source() - set(audited)
    assert not missed, f"builders the audit's calls did not reach: {sorted(missed)}"
