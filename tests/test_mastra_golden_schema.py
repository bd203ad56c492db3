"""composite-store's tables held to Mastra's: the golden snapshot in tests/data/mastra/.

The golden files are the catalogs of databases that Mastra's own ``init()`` created
(tests/data/mastra/make_golden.sh). Here composite-store creates every domain's tables in a
fresh PostgreSQL schema (and a fresh database's ``public``), a fresh SQLite file and a fresh
libSQL file, the same dumper reads them back, and every Mastra table of the seven domains must
be there with Mastra's columns (type, nullability), key and constraint names and indexes, so
that Mastra's ``init()`` finds nothing to add. What differs must be in ``ALLOWED`` with its
reason, and an entry that no longer differs fails too: drift on either side shows.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from composite_store.schema import TABLES
from tests.support.every_domain import create_every_domain
from tests.support.servers import postgres

DATA = Path(__file__).parent / "data" / "mastra"
sys.path.insert(0, str(DATA))
from dump_schema import dump_postgres, dump_sqlite  # noqa: E402

PG_GOLDEN = {"public": "postgres-1.27.1.json", "named": "postgres-1.27.1-named-schema.json"}
SQLITE_GOLDEN = "libsql-1.23.1.json"

#: Our tables that Mastra 1.x does not create (the seed's tables; composite-store's own).
OURS_ONLY_TABLES = {
    "mastra_evals": "the seed's Evals table; Mastra 1.x dropped it (scores replace evals)",
    "mastra_traces": "the seed's OpenTelemetry Traces table; Mastra 1.x no longer creates it",
    "mastra_workflow_definition_versions": "versions of the beta workflow definitions domain "
    "(the seed's model); Mastra 1.71 keeps no definition versions",
    "mastra_composite_schema": "composite-store's schema version per domain",
}

_TIMESTAMPS_NULLABLE = (
    "nullable in composite-store's documented schema since its first release, so that its "
    "existing databases stay current; composite-store always writes it, and a NOT NULL column "
    "of Mastra's accepts every row composite-store writes"
)
_DEFINITIONS = (
    "workflow definitions (beta) are the seed's versioned model (name, activeVersionId, "
    "numbered versions); Mastra 1.71's are another (graph, schemas, status, source). The "
    "table carries Mastra's columns so that either init() succeeds, nullable here because "
    "composite-store's records have no values for them; rows are not interchangeable"
)
_SQLITE_LOOSE = (
    "NOT NULL on PostgreSQL in Mastra too (and documented so): only Mastra's libSQL table "
    "leaves it nullable; every row Mastra writes fills it"
)
_RESULT_PER_ITEM = (
    "composite-store keeps one result per (experimentId, itemId) and upserts on it; Mastra "
    "1.x keeps one per attempt (its unique index on experimentId, itemId, attempt is created "
    "too), so Mastra's retries of an item cannot be stored next to composite-store's result"
)
_OUR_INDEX = "an index of composite-store's own, for a query it runs (kept; Mastra has none)"

#: (scope, table, kind, detail) -> why composite-store differs from Mastra there. The scope is
#: a family (``postgres``, ``sqlite``) or one variant of it (``postgres-public``,
#: ``postgres-named``: index names differ between the two).
ALLOWED: dict[tuple[str, ...], str] = {
    **{
        (family, t, "nullability", f"{c}: Mastra NOT NULL"): _TIMESTAMPS_NULLABLE
        for family in ("postgres", "sqlite")
        for t, cols in {
            "mastra_datasets": ("createdAt", "updatedAt"),
            "mastra_dataset_items": ("createdAt", "updatedAt"),
            "mastra_dataset_versions": ("createdAt",),
            "mastra_experiments": ("createdAt", "updatedAt"),
            "mastra_experiment_results": ("createdAt",),
        }.items()
        for c in cols
    },
    **{
        (family, "mastra_workflow_definitions", kind, detail): _DEFINITIONS
        for family in ("postgres", "sqlite")
        for kind, detail in (
            ("extra column", "activeVersionId"),
            ("extra column", "name"),
            *(
                ("nullability", f"{c}: Mastra NOT NULL")
                for c in ("graph", "inputSchema", "outputSchema", "source", "status")
            ),
        )
    },
    **{
        (scope, "mastra_ai_spans", "extra index", name): _OUR_INDEX
        + " (all spans by startedAt DESC; Mastra's indexes only root spans so)"
        for scope, name in (
            ("postgres-public", "mastra_ai_spans_started_at_idx"),
            ("postgres-named", "{schema}_mastra_ai_spans_started_at_idx"),
        )
    },
    ("postgres", "mastra_ai_spans", "triggers", "mastra_ai_spans_timestamps"): (
        "Mastra's trigger sets createdAt/updatedAt to now() on every write; composite-store "
        "writes the timestamps it is given (and Mastra's init() adds the trigger to a shared "
        "table)"
    ),
    (
        "postgres",
        "mastra_experiment_results",
        "extra index",
        "{schema}_mastra_experiment_results_experimentid_itemid_key",
    ): _RESULT_PER_ITEM,
    ("postgres", "mastra_experiment_results", "unique constraints", "[]"): _RESULT_PER_ITEM,
    **{
        (scope, "mastra_workflow_snapshot", "missing index", name): (
            "an expression index over snapshot JSON for queries of Mastra's that "
            "composite-store does not run (Mastra's init() creates it on a shared table)"
        )
        for scope, name in (
            ("postgres-public", "mastra_workflow_snapshot_name_status_createdat_idx"),
            ("postgres-public", "mastra_workflow_snapshot_threadid_idx"),
            # Cut at 63 bytes after the schema prefix, as Mastra cuts it.
            ("postgres-named", "{schema}_mastra_workflow_snapshot_name_status_createdat_id"),
            ("postgres-named", "{schema}_mastra_workflow_snapshot_threadid_idx"),
        )
    },
    # SQLite / libSQL
    **{
        ("sqlite", t, "nullability", f"{c}: Mastra nullable"): _SQLITE_LOOSE
        for t, cols in {
            "mastra_scorers": (
                "createdAt",
                "input",
                "output",
                "runId",
                "score",
                "scorer",
                "scorerId",
                "source",
                "updatedAt",
            ),
            "mastra_workflow_snapshot": (
                "createdAt",
                "run_id",
                "snapshot",
                "updatedAt",
                "workflow_name",
            ),
        }.items()
        for c in cols
    },
    ("sqlite", "mastra_ai_spans", "primary key", "None / {'columns': ['traceId', 'spanId']}"): (
        "the documented key (traceId, spanId) is the primary key, as on PostgreSQL; Mastra's "
        "libSQL table has none but UNIQUE (spanId, traceId) and a unique index on it (created "
        "here too), which enforce the same"
    ),
    ("sqlite", "mastra_ai_spans", "extra key", "traceId,spanId"): "the primary key, above",
    ("sqlite", "mastra_ai_spans", "missing key", "spanId,traceId"): (
        "Mastra's UNIQUE (spanId, traceId) clause; the primary key and Mastra's unique index "
        "mastra_ai_spans_spanid_traceid_idx enforce it"
    ),
    ("sqlite", "mastra_ai_spans", "extra index", "mastra_ai_spans_started_at_idx"): _OUR_INDEX,
    (
        "sqlite",
        "mastra_dataset_items",
        "primary key",
        "None / {'columns': ['id', 'datasetVersion']}",
    ): (
        "the documented key (id, datasetVersion), as on PostgreSQL (Mastra's libSQL table has "
        "no key)"
    ),
    ("sqlite", "mastra_dataset_items", "extra key", "id,datasetVersion"): "the primary key",
    ("sqlite", "mastra_experiment_results", "extra key", "experimentId,itemId"): _RESULT_PER_ITEM,
    (
        "sqlite",
        "mastra_workflow_snapshot",
        "extra index",
        "mastra_workflow_snapshot_name_created_at_idx",
    ): _OUR_INDEX + ": a workflow's runs newest first, as Mastra's index does on PostgreSQL",
    ("postgres", "mastra_messages", "extra index", "mastra_messages_thread_id_createdat_id_idx"): (
        _OUR_INDEX + ": a thread's pages and include windows in (createdAt, id) order, "
        "whatever the planner's statistics"
    ),
    **{
        (
            family,
            "mastra_workflow_snapshot",
            "extra index",
            "mastra_workflow_snapshot_resourceid_created_at_idx",
        ): _OUR_INDEX + ": a resource's runs newest first (list_workflow_runs(resource_id=...))"
        for family in ("sqlite", "postgres")
    },
    ("sqlite", "mastra_threads", "extra index", "mastra_threads_resourceid_createdat_idx"): (
        _OUR_INDEX + ": a resource's threads newest first, as on PostgreSQL"
    ),
    (
        "sqlite",
        "mastra_scorers",
        "extra index",
        "mastra_scores_trace_id_span_id_created_at_idx",
    ): _OUR_INDEX + ": scores of a span (list_scores_by_span), as on PostgreSQL",
}


def _gap(family: str, table: str, kind: str, detail: str) -> tuple[str, str, str, str]:
    return (family, table, kind, detail)


def _affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type (section 3.1 of its datatype page)."""
    upper = declared.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(k in upper for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if upper == "" or "BLOB" in upper:
        return "BLOB"
    if any(k in upper for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def _index_key(ix: dict[str, Any], family: str) -> tuple[Any, ...]:
    where = ix.get("where")
    if where is not None:
        where = re.sub(r"[()\s]", "", where)
    return (tuple(ix["columns"]), tuple(ix["descending"]), ix["unique"], where, ix.get("method"))


def compare(family: str, golden: dict[str, Any], ours: dict[str, Any]) -> set[tuple[str, ...]]:
    """Every way ``ours`` differs from ``golden`` on the seven domains' tables."""
    documented = {spec.name() for spec in TABLES}
    gaps: set[tuple[str, ...]] = set()
    for name in sorted(documented | set(ours)):
        if name not in golden:
            if name not in OURS_ONLY_TABLES:
                gaps.add(_gap(family, name, "table not in Mastra", ""))
            continue
        g, o = golden[name], ours.get(name)
        if o is None:
            gaps.add(_gap(family, name, "missing table", ""))
            continue
        gcols = {c["name"]: c for c in g["columns"]}
        ocols = {c["name"]: c for c in o["columns"]}
        for col, gc in gcols.items():
            oc = ocols.get(col)
            if oc is None:
                gaps.add(_gap(family, name, "missing column", col))
                continue
            same_type = (
                gc["type"] == oc["type"]
                if family == "postgres"
                else _affinity(gc["type"]) == _affinity(oc["type"])
            )
            if not same_type:
                gaps.add(_gap(family, name, "column type", f"{col}: {gc['type']} / {oc['type']}"))
            if gc["nullable"] != oc["nullable"]:
                want = "nullable" if gc["nullable"] else "NOT NULL"
                gaps.add(_gap(family, name, "nullability", f"{col}: Mastra {want}"))
        for col in ocols.keys() - gcols.keys():
            gaps.add(_gap(family, name, "extra column", col))
        if g["primary_key"] != o["primary_key"]:
            gaps.add(_gap(family, name, "primary key", f"{g['primary_key']} / {o['primary_key']}"))
        gaps |= _indexes(family, name, g, o)
        if family == "postgres" and [t["name"] for t in g["triggers"]] != [
            t["name"] for t in o["triggers"]
        ]:
            gaps.add(_gap(family, name, "triggers", ",".join(t["name"] for t in g["triggers"])))
    return gaps


def _indexes(family: str, name: str, g: dict[str, Any], o: dict[str, Any]) -> set[tuple[str, ...]]:
    gaps: set[tuple[str, ...]] = set()
    if family == "postgres":
        ours = {ix["name"]: ix for ix in o["indexes"]}
        for ix in g["indexes"]:
            mine = ours.get(ix["name"])
            if mine is None:
                gaps.add(_gap(family, name, "missing index", ix["name"]))
            elif _index_key(mine, family) != _index_key(ix, family):
                gaps.add(_gap(family, name, "index shape", ix["name"]))
        for extra in ours.keys() - {ix["name"] for ix in g["indexes"]}:
            gaps.add(_gap(family, name, "extra index", extra))
        if g["unique"] != o["unique"]:
            gaps.add(_gap(family, name, "unique constraints", json.dumps(g["unique"])))
        return gaps
    # SQLite names the index of a PRIMARY KEY / UNIQUE clause itself (sqlite_autoindex_...):
    # those are compared by their columns, the others by name.
    auto = "sqlite_autoindex_"
    ours = {ix["name"]: ix for ix in o["indexes"] if not ix["name"].startswith(auto)}
    for ix in g["indexes"]:
        if ix["name"].startswith(auto):
            if not any(
                _index_key(mine, family) == _index_key(ix, family)
                for mine in o["indexes"]
                if mine["name"].startswith(auto)
            ):
                gaps.add(_gap(family, name, "missing key", ",".join(ix["columns"])))
            continue
        mine = ours.get(ix["name"])
        if mine is None:
            gaps.add(_gap(family, name, "missing index", ix["name"]))
        elif _index_key(mine, family) != _index_key(ix, family):
            gaps.add(_gap(family, name, "index shape", ix["name"]))
    golden_names = {ix["name"] for ix in g["indexes"]}
    for extra in ours.keys() - golden_names:
        gaps.add(_gap(family, name, "extra index", extra))
    golden_auto = {_index_key(ix, family) for ix in g["indexes"] if ix["name"].startswith(auto)}
    for mine in o["indexes"]:
        if mine["name"].startswith(auto) and _index_key(mine, family) not in golden_auto:
            gaps.add(_gap(family, name, "extra key", ",".join(mine["columns"])))
    return gaps


def _check(family: str, variant: str, golden_file: str, ours: dict[str, Any]) -> None:
    golden = json.loads((DATA / golden_file).read_text())["tables"]
    gaps = compare(family, golden, ours)
    allowed = {(family, *k[1:]) for k in ALLOWED if k[0] in (family, variant)}
    unexpected = sorted(gaps - allowed)
    stale = sorted(allowed - gaps)
    assert not unexpected and not stale, (
        "composite-store's tables differ from Mastra's ("
        + golden_file
        + ")\n"
        + "".join(f"  differs, not allowed: {g}\n" for g in unexpected)
        + "".join(f"  allowed but no longer differs: {g}\n" for g in stale)
    )


@pytest.mark.parametrize("engine", ["sqlite", "libsql"])
def test_sqlite_tables_are_mastras(engine: str, tmp_path: Path) -> None:
    if engine == "libsql":
        pytest.importorskip("libsql")
    path = tmp_path / "ours.db"
    asyncio.run(create_every_domain(f"{engine}:///{path}"))
    _check("sqlite", engine, SQLITE_GOLDEN, dump_sqlite(str(path))["tables"])


@pytest.fixture(scope="module")
def pg_url() -> str:
    return postgres.reached().url


def _plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture
def pg_namespace(request: pytest.FixtureRequest, pg_url: str) -> Iterator[tuple[str, str]]:
    """(database URL, schema) of a fresh namespace: a named schema, or ``public`` of a fresh
    database (skipped where the role may not create databases)."""
    import psycopg
    from composite_store_postgres.provision import create_namespace, drop_namespace

    if request.param == "named":
        # As long as the golden's schema name (mastra_golden): constraint and index names
        # that carry it are cut at 63 bytes at the same place.
        schema = asyncio.run(create_namespace(pg_url, f"cs_{secrets.token_hex(5)}"))
        try:
            yield pg_url, schema
        finally:
            asyncio.run(drop_namespace(pg_url, schema))
        return
    from sqlalchemy.engine import make_url

    name = f"cs_golden_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        pytest.skip(f"cannot create a database for schema public: {exc}")
    url = make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    try:
        yield url, "public"
    finally:
        with psycopg.connect(_plain(pg_url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.parametrize("pg_namespace", ["named", "public"], indirect=True)
def test_postgres_tables_are_mastras(pg_namespace: tuple[str, str]) -> None:
    from composite_store_postgres.provision import store_url

    url, schema = pg_namespace
    asyncio.run(create_every_domain(store_url(url, schema)))
    variant = "public" if schema == "public" else "named"
    _check(
        "postgres",
        f"postgres-{variant}",
        PG_GOLDEN[variant],
        dump_postgres(_plain(url), schema)["tables"],
    )
