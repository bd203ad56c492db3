"""Real Mastra on databases composite-store created: Mastra's ``init()`` must succeed, and
composite-store's ``init()`` afterwards must find them current and without drift.

Runs where ``COMPOSITE_STORE_TEST_MASTRA_NODE`` names a folder holding tests/data/mastra's
``package.json`` installed (``npm ci``: @mastra/pg, @mastra/libsql and @mastra/core as
pinned there) and ``node`` is on PATH; skipped otherwise.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from composite_store import open_store
from composite_store.schema import tables_for
from composite_store.schema.drift import compare
from composite_store.schema.migrations import SchemaDriftWarning
from tests.support.backends import ran, unreachable
from tests.support.every_domain import create_every_domain
from tests.support.servers import postgres

SCRIPT = Path(__file__).parent / "data" / "mastra" / "make_dbs.mjs"
NODE_ENV = "COMPOSITE_STORE_TEST_MASTRA_NODE"


@pytest.fixture(scope="module")
def node_folder() -> Path:
    folder = os.environ.get(NODE_ENV)
    if not folder or shutil.which("node") is None:
        pytest.skip(f"set {NODE_ENV} to a folder with tests/data/mastra's packages installed")
    path = Path(folder)
    if not (path / "node_modules" / "@mastra" / "pg").is_dir():
        pytest.fail(f"{NODE_ENV}={folder} has no node_modules/@mastra/pg: run npm ci there")
    return path


def _mastra_init(node_folder: Path, work: Path, *args: str) -> None:
    # Node resolves the script's imports from the script's folder: a copy of it beside a link
    # to the installed node_modules (the installed folder is not written to).
    script = work / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    (work / "node_modules").symlink_to(node_folder / "node_modules")
    done = subprocess.run(
        ["node", str(script), *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"Mastra's init() failed:\n{done.stderr[-4000:]}"


def _shared_file(node_folder: Path, engine: str, tmp_path: Path, mode: str) -> str:
    """A file composite-store created (``engine``: sqlite or libsql) after Mastra ran
    ``make_dbs.mjs mode`` on it; its store URL."""
    if engine == "libsql":
        pytest.importorskip("libsql")
    path = tmp_path / "shared.db"
    url = f"{engine}:///{path}"
    asyncio.run(create_every_domain(url))
    work = tmp_path / "node"
    work.mkdir()
    _mastra_init(node_folder, work, mode, str(path))
    return url


def _shared_schema(
    node_folder: Path, pg_schema: tuple[str, str], tmp_path: Path, mode: str
) -> str:
    """A PostgreSQL schema composite-store created after Mastra ran ``make_dbs.mjs mode``
    on it; its store URL."""
    from composite_store_postgres.provision import store_url

    url, schema = pg_schema
    asyncio.run(create_every_domain(store_url(url, schema)))
    plain = url.replace("postgresql+psycopg://", "postgresql://").split("?")[0]
    _mastra_init(node_folder, tmp_path, mode, plain, schema)
    return store_url(url, schema)


async def _current_and_without_drift(url: str) -> None:
    store = open_store(url)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SchemaDriftWarning)
        await store.init()
    try:
        for dom in store.domains.values():
            physical = await dom.describe_physical()
            assert compare(tables_for(dom.domain), physical) == [], dom.domain
    finally:
        await store.close()


@pytest.mark.parametrize("engine", ["sqlite", "libsql"])
def test_mastra_libsql_inits_a_file_composite_store_created(
    node_folder: Path, engine: str, tmp_path: Path
) -> None:
    url = _shared_file(node_folder, engine, tmp_path, "libsql")
    asyncio.run(_current_and_without_drift(url))


@pytest.fixture
def pg_schema() -> Iterator[tuple[str, str]]:
    from composite_store_postgres.provision import create_namespace, drop_namespace

    found = postgres.find()
    if isinstance(found, str):
        unreachable(postgres.BACKEND, found)
    ran(postgres.BACKEND, found.how)
    schema = asyncio.run(create_namespace(found.url))
    try:
        yield found.url, schema
    finally:
        asyncio.run(drop_namespace(found.url, schema))


def test_mastra_pg_inits_a_schema_composite_store_created(
    node_folder: Path, pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    url = _shared_schema(node_folder, pg_schema, tmp_path, "pg")
    asyncio.run(_current_and_without_drift(url))


async def _read_mastras_sample(url: str) -> None:
    """What ``make_dbs.mjs *-sample`` wrote through Mastra's API, read through ours."""
    async with open_store(url) as store:
        thread = await store.memory.get_thread_by_id(thread_id="jsonb-thread")
        assert thread is not None and thread.resource_id == "jsonb-user"
        assert thread.metadata is not None and thread.metadata["n"] == 42
        assert thread.metadata["nested"]["deeper"]["deepest"] == [thread.title]
        resource = await store.memory.get_resource_by_id(resource_id="jsonb-user")
        assert resource is not None and resource.metadata == thread.metadata
        page = await store.memory.list_messages(thread_id="jsonb-thread")
        assert [m.id for m in page.items] == ["jsonb-message"]
        assert page.items[0].created_at == thread.created_at
        snapshot = await store.workflows.load_workflow_snapshot(
            workflow_name="jsonb-workflow", run_id="jsonb-run"
        )
        assert snapshot is not None and snapshot["result"] == thread.metadata


@pytest.mark.parametrize("engine", ["sqlite", "libsql"])
def test_composite_store_reads_what_mastra_libsql_wrote(
    node_folder: Path, engine: str, tmp_path: Path
) -> None:
    """Mastra writes a thread, a resource, a message and a workflow snapshot (its JSON
    columns as JSONB) into a file composite-store created; composite-store reads them."""
    url = _shared_file(node_folder, engine, tmp_path, "libsql-sample")
    asyncio.run(_read_mastras_sample(url))


def test_composite_store_reads_what_mastra_pg_wrote(
    node_folder: Path, pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    url = _shared_schema(node_folder, pg_schema, tmp_path, "pg-sample")
    asyncio.run(_read_mastras_sample(url))
