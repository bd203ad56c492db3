"""Render the schema reference (docs/schema.md) from ``composite_store.schema``.

    python -m composite_store.schema.doc > docs/schema.md

Tables, columns, keys and index names all come from the schema module; the SQLite types are
compiled from the SQLite dialect. What is written by hand here is prose: what each domain is
for, how the other backends map the logical types, and where we deviate from the seed's
documented tables. A test fails when docs/schema.md differs from :func:`render`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy.dialects import sqlite

from composite_store.schema import (
    DEFAULT_PREFIX,
    DOMAINS,
    POSTGRESQL,
    SCHEMA_VERSION,
    SQLITE,
    TABLES,
    ColumnType,
    Index,
    TableSpec,
    table,
    tables_for,
)
from composite_store.sql.sqlite import SqliteDialect

__all__ = ["DEVIATIONS", "Deviation", "main", "render"]

#: The differences from the tables Mastra 1.x creates (the golden schema test lists each).
MASTRA_DIFFERENCES: tuple[str, ...] = (
    "`mastra_evals`, `mastra_traces` and `mastra_workflow_definition_versions` are the seed's"
    " tables; Mastra 1.x creates none of them.",
    "`mastra_workflow_definitions` (beta) keeps the seed's model (`name`, `activeVersionId`,"
    " numbered versions); Mastra 1.71's definitions are another model. The table carries"
    " Mastra's columns too (nullable here: composite-store has no values for them), so that"
    " either `init()` succeeds, but rows are not interchangeable.",
    "`mastra_experiment_results` keeps its unique key (`experimentId`, `itemId`): one result"
    " per item, upserted. Mastra 1.x keeps one per attempt (its unique index on"
    " `experimentId`, `itemId`, `attempt` is created too), so Mastra's retries of an item"
    " cannot be stored beside a result composite-store wrote.",
    "`createdAt`/`updatedAt` of datasets, items, versions, experiments and results stay"
    " nullable (NOT NULL in Mastra), so that databases of earlier releases stay current;"
    " composite-store always writes them.",
    "SQLite/libSQL: the spans and dataset items keep their documented primary keys (Mastra's"
    " libSQL tables have none; its unique index on (`spanId`, `traceId`) is created too);"
    " scorer and snapshot columns that Mastra's libSQL tables leave nullable are NOT NULL as"
    " on PostgreSQL.",
    "PostgreSQL: Mastra's trigger that sets the spans' `createdAt`/`updatedAt` to `now()` is"
    " not created (composite-store writes the timestamps it is given; once Mastra's `init()`"
    " has run on a shared database, the trigger is there and span timestamps are the"
    " server's clock for both writers); Mastra's two"
    " expression indexes over the snapshot JSON are not created either (no query of"
    " composite-store's uses them).",
    "composite-store's own indexes are kept where Mastra has none on those columns (threads"
    " and messages newest first and scores by span on SQLite, all spans by `startedAt`).",
)

#: One line per domain: what it keeps.
DOMAIN_PURPOSE: dict[str, str] = {
    "memory": "conversation threads, their messages, and resources (users) with working memory",
    "workflows": "workflow run snapshots, upserted by (workflow_name, run_id)",
    "workflow_definitions": "stored workflow definitions and their numbered versions (beta)",
    "scores": "scorer results and eval results",
    "observability": "AI spans (agent, tool, model spans) and OpenTelemetry spans",
    "datasets": "datasets and their items, versioned SCD-2 style",
    "experiments": "experiment runs over datasets and their per-item results",
}

#: How each relational backend stores a logical type. The SQLite column is compiled from the
#: SQLite dialect; these are checked against the adapters' dialects by the repository's tests.
PHYSICAL: dict[ColumnType, dict[str, str]] = {
    ColumnType.TEXT: {
        "PostgreSQL": "TEXT",
        "MySQL / MariaDB": "LONGTEXT; VARCHAR(255) for lookup keys (utf8mb4, binary NO PAD "
        "collation)",
        "Oracle": "CLOB; VARCHAR2(255 CHAR) for lookup keys, VARCHAR2(1000 CHAR) for filtered"
        " text; NOT NULL text outside keys stored nullable (`''` is NULL), read back as `''`",
    },
    ColumnType.JSON: {
        "PostgreSQL": "JSONB",
        "MySQL / MariaDB": "JSON",
        "Oracle": "CLOB holding compact JSON text, or JSON with `native_json` (21c and later)",
    },
    ColumnType.TIMESTAMP: {
        "PostgreSQL": 'TIMESTAMP (UTC wall clock) plus a shadow `"<name>Z"` TIMESTAMPTZ',
        "MySQL / MariaDB": "DATETIME(3) (UTC wall clock)",
        "Oracle": "TIMESTAMP(3) (UTC wall clock)",
    },
    ColumnType.INTEGER: {
        "PostgreSQL": "INTEGER",
        "MySQL / MariaDB": "INTEGER",
        "Oracle": "INTEGER",
    },
    ColumnType.BIGINT: {
        "PostgreSQL": "BIGINT",
        "MySQL / MariaDB": "BIGINT",
        "Oracle": "NUMBER(19)",
    },
    ColumnType.FLOAT: {
        "PostgreSQL": "FLOAT (double precision)",
        "MySQL / MariaDB": "DOUBLE",
        "Oracle": "FLOAT",
    },
    ColumnType.BOOLEAN: {
        "PostgreSQL": "BOOLEAN",
        "MySQL / MariaDB": "BOOL",
        "Oracle": "BOOLEAN on 23ai, else SMALLINT (0/1)",
    },
}

SQLITE_NOTES: dict[ColumnType, str] = {
    ColumnType.JSON: " (JSON text; SQLite's binary JSONB is read too)",
    ColumnType.TIMESTAMP: " (`YYYY-MM-DDTHH:MM:SS.sssZ`)",
}


@dataclass(frozen=True)
class Deviation:
    """A place where the stored schema differs from the seed's documented table."""

    table: str
    column: str
    text: str
    #: The logical type the column must have for the text to hold (checked by ``render``).
    type: ColumnType | None = None


#: Deviations from Mastra's documented tables (each is how Mastra's own code stores the data).
_AS_JSON = "JSON (JSONB on PostgreSQL) where the documentation says text, as Mastra stores it."
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation("threads", "metadata", _AS_JSON, ColumnType.JSON),
    Deviation("resources", "metadata", _AS_JSON, ColumnType.JSON),
    Deviation("workflow_snapshot", "snapshot", _AS_JSON, ColumnType.JSON),
    Deviation("messages", "role", "`system` is a role too, besides `user` and `assistant`."),
    Deviation("messages", "type", "a column the documentation lacks (`v2` by default)."),
)


def _sqlite_type(kind: ColumnType) -> str:
    column = next(c for t in TABLES for c in t.columns if c.type is kind)
    compiled = SqliteDialect().column_type(column).compile(dialect=sqlite.dialect())
    return f"{compiled}{SQLITE_NOTES.get(kind, '')}"


def _check_deviations() -> None:
    for dev in DEVIATIONS:
        spec = table(dev.table)
        if dev.column not in spec.column_names:
            raise AssertionError(f"deviation names {dev.table}.{dev.column}, which is no column")
        if dev.type is not None and spec.column(dev.column).type is not dev.type:
            raise AssertionError(f"deviation {dev.table}.{dev.column} is not {dev.type.value}")


def _cols(columns: tuple[tuple[str, bool], ...]) -> str:
    return ", ".join(f"`{name}`{' DESC' if desc else ''}" for name, desc in columns)


def _table_section(spec: TableSpec) -> Iterator[str]:
    name = spec.name(DEFAULT_PREFIX)
    yield f"#### `{name}`"
    yield ""
    yield "| column | type | null | notes |"
    yield "|---|---|---|---|"
    for col in spec.columns:
        notes = []
        if col.name in spec.primary_key:
            notes.append("primary key")
        if col.key:
            notes.append("lookup key")
        if col.lookup:
            notes.append("filtered")
        null = "null" if col.nullable and col.name not in spec.primary_key else "not null"
        yield f"| `{col.name}` | {col.type.value} | {null} | {', '.join(notes)} |"
    yield ""
    if spec.primary_key:
        named = spec.primary_key_name()
        pk_name = f", constraint `<schema>_{named}` on PostgreSQL" if named else ""
        yield f"- Primary key: ({', '.join(f'`{c}`' for c in spec.primary_key)}){pk_name}"
    else:
        yield "- Primary key: none"
    for unique in spec.unique:
        as_index = spec.unique_index_name(unique)
        constraint = (
            f"unique index `{as_index}` on PostgreSQL and SQLite/libSQL (under another "
            f"prefix `<table>_{'_'.join(unique).lower()}_unique`, an index name being one "
            "per schema), else constraint"
            if as_index
            else "constraint"
        )
        yield (
            f"- Unique: ({', '.join(f'`{c}`' for c in unique)}), {constraint} "
            f"`{name}_{'_'.join(unique)}_key`"
        )
    for index in (*spec.indexes, *spec.mastra_indexes):
        yield f"- {_index_line(index, name)}{_stood_for(spec, index, name)}"
    for index in spec.sql_indexes:
        where = _partial(index)
        yield (
            f"- Index `{index.physical_name(name, DEFAULT_PREFIX)}` on ({_cols(index.columns)})"
            f"{where}; ours, on the relational backends where no index has these columns already"
        )
    yield ""


_FAMILY_NAMES = {POSTGRESQL: "PostgreSQL", SQLITE: "SQLite/libSQL"}


def _partial(index: Index) -> str:
    """The rows a partial index covers, as the reference says it ("" for a full index)."""
    if index.where_null:
        return f" where `{index.where_null}` is null"
    if index.where_not_null:
        # Other relational backends have no partial indexes: theirs covers every row.
        return f" where `{index.where_not_null}` is not null (PostgreSQL, SQLite/libSQL)"
    return ""


def _stood_for(spec: TableSpec, index: Index, name: str) -> str:
    """Where one of Mastra's indexes is created instead of portable ``index``."""
    notes = [
        f"on {_FAMILY_NAMES[family]} Mastra's `{standing.physical_name(name, DEFAULT_PREFIX)}` "
        "stands for it (its reads run along it either way)"
        for family in sorted(_FAMILY_NAMES, reverse=True)
        if (standing := spec.standing_for(index, family)) is not index
    ]
    return "".join(f"; {note}" for note in notes)


def _index_line(index: Index, name: str) -> str:
    kind = "Unique index" if index.unique else "Index"
    line = f"{kind} `{index.physical_name(name, DEFAULT_PREFIX)}` on ({_cols(index.columns)})"
    line += _partial(index)
    if index.method:
        line += f" using {index.method}"
    if index.families:
        where = " and ".join(_FAMILY_NAMES[f] for f in sorted(index.families, reverse=True))
        line += f"; Mastra's, on {where} only"
    elif index.mastra_name:
        line += f" (`{index.name(name)}` on the other backends)"
    return line


def render() -> str:
    """The whole of docs/schema.md."""
    _check_deviations()
    out: list[str] = [
        "# Schema reference",
        "",
        "<!-- Generated by `python -m composite_store.schema.doc > docs/schema.md` from",
        "     composite_store/schema/documented.py. Do not edit by hand: a test compares",
        "     the two. -->",
        "",
        "composite-store stores Mastra's documented tables: the same table and column names and",
        "the same JSON shapes. Table names carry the prefix `mastra_` by default (option",
        "`prefix`); the names below use it. On PostgreSQL and SQLite a database written by",
        "composite-store can be read by a Mastra application and the other way round. MongoDB",
        "and Redis use the same field names with their own physical layout.",
        "",
        f"Schema version: {SCHEMA_VERSION} (recorded per domain by `init()`).",
        "",
        "## Domains",
        "",
        "| domain | tables | what it keeps |",
        "|---|---|---|",
    ]
    for domain in DOMAINS:
        names = ", ".join(f"`{t.name(DEFAULT_PREFIX)}`" for t in tables_for(domain))
        out.append(f"| `{domain}` | {names} | {DOMAIN_PURPOSE[domain]} |")
    out += [
        "",
        "## Types",
        "",
        "Columns have a logical type; each backend maps it to a physical one. At the API every",
        "timestamp is a timezone-aware UTC datetime of millisecond precision. A *lookup key*",
        "column takes part in a key or index, so backends that need it use a bounded text type.",
        "A *filtered* text column is compared, sorted or grouped by queries: Oracle, which",
        "cannot compare a CLOB, bounds it too.",
        "",
        "| logical | SQLite / libSQL | PostgreSQL | MySQL / MariaDB | Oracle |",
        "|---|---|---|---|---|",
    ]
    for kind in ColumnType:
        row = PHYSICAL[kind]
        out.append(
            f"| {kind.value} | {_sqlite_type(kind)} | {row['PostgreSQL']} | "
            f"{row['MySQL / MariaDB']} | {row['Oracle']} |"
        )
    out += [
        "",
        "MongoDB and Redis keep the documented field names with a physical layout of their",
        "own (collections and indexes, key spaces); each adapter's documentation describes it.",
        "",
        "## Sharing a database with Mastra",
        "",
        "PostgreSQL:",
        "",
        "- The default schema is `public`. There index names carry no schema prefix; in another",
        "  schema most of Mastra's carry `<schema>_` (the `idx_...` ones do not), cut at 63",
        "  bytes. The workflow snapshot's unique constraint and the spans' primary key always",
        "  carry it: `public_mastra_workflow_snapshot_workflow_name_run_id_key`,",
        "  `public_mastra_ai_spans_traceid_spanid_pk` (Mastra's `init()` adds a key of that",
        "  name when none exists).",
        "- Mastra's own indexes (below, marked) are created too, so that Mastra's `init()`",
        "  finds every one of them; MongoDB, Redis, MySQL and Oracle keep the portable ones.",
        "- Every timestamp column `c` is `TIMESTAMP` holding the UTC wall clock, plus a shadow",
        '  column `"cZ" TIMESTAMPTZ DEFAULT now()`. Both are written on every insert and update;',
        '  reads take `COALESCE("cZ", "c" AT TIME ZONE \'UTC\')`.',
        "- `mastra_messages.content` is TEXT holding compact JSON; a content that is a plain",
        "  string is a legacy message, read as one text part.",
        "- JSON columns are JSONB objects; a JSONB string holding JSON text is parsed on read.",
        "",
        "SQLite / libSQL:",
        "",
        "- Timestamps are TEXT, exactly `YYYY-MM-DDTHH:MM:SS.sssZ`, so that they sort and",
        "  range-filter as strings alongside Mastra's rows.",
        "- JSON columns are written as JSON text; SQLite's binary JSONB (as Mastra writes it)",
        "  is read too: through `json()` on the libSQL engine, and by a decoder of",
        "  composite-store's own on the stdlib `sqlite3`, whose SQLite predates JSONB.",
        "- Files use WAL, a busy timeout and `synchronous=NORMAL`, as Mastra's do.",
        "- Booleans are declared INTEGER (0/1), as Mastra declares them.",
        "",
        "What Mastra itself does, seen from the other side (tests/test_mastra_interop.py runs",
        "both on one database, away from UTC, and compares every record kind both ways):",
        "",
        "- PostgreSQL: Mastra's workflow snapshot writes bind JavaScript Dates to the naive",
        "  `createdAt`/`updatedAt`, which then hold the Node process's local wall clock, not",
        "  UTC (the shadow columns hold the right instants, and both sides read those). Date",
        "  filters and the order of workflow runs compare the naive column, in Mastra and in",
        "  composite-store alike: run Mastra's Node process with `TZ=UTC` on a shared database.",
        "- PostgreSQL: once Mastra's `init()` has run, its trigger sets every span's",
        "  `createdAt`/`updatedAt` to the server's `now()` (microseconds; the naive column in",
        "  the session's time zone, which is UTC on composite-store's own connections unless",
        "  the URL sets one), whoever writes; composite-store reads them to the millisecond,",
        "  as Mastra does.",
        "- PostgreSQL: Mastra's `getTrace`, `getSpan` and `getRootSpan` leave `requestContext`",
        "  and the parent/root entity, entity version and experiment columns out.",
        "- Mastra's message reads leave `type` out when it is `v2`; `saveScore` stamps",
        "  `createdAt`/`updatedAt` with the current time whatever it is given (composite-store",
        "  keeps given timestamps); `saveMessages` bumps the thread's `updatedAt`, as",
        "  composite-store's does.",
        "- On a database Mastra created, composite-store's `init()` finds the observability",
        "  domain at schema version 0 and warns (`SchemaDriftWarning`): `composite-store migrate`",
        "  adds its index of all spans by `startedAt`. It changes none of Mastra's rows or tables.",
        "- Mastra's `init()` on a database composite-store created changes none of its rows; on",
        "  PostgreSQL it adds the spans' trigger and two indexes over the snapshot JSON.",
        "",
        "## Where the tables differ from Mastra 1.x's",
        "",
        "tests/data/mastra/ holds the catalogs of databases that Mastra's own `init()` created",
        "(@mastra/pg 1.27.1, @mastra/libsql 1.23.1); tests/test_mastra_golden_schema.py holds",
        "composite-store's tables to them, with every difference and its reason. In short:",
        "",
        *(f"- {line}" for line in MASTRA_DIFFERENCES),
        "",
        "## Deviations from Mastra's documented tables",
        "",
        "Mastra's reference documentation of its tables differs from what Mastra's own code",
        "stores in a few places; composite-store stores what Mastra's code stores:",
        "",
    ]
    for dev in DEVIATIONS:
        out.append(f"- `{table(dev.table).name(DEFAULT_PREFIX)}.{dev.column}`: {dev.text}")
    out += ["", "## Tables", ""]
    for domain in DOMAINS:
        out += [f"### Domain `{domain}`", "", f"{DOMAIN_PURPOSE[domain].capitalize()}.", ""]
        for spec in tables_for(domain):
            out += list(_table_section(spec))
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main() -> int:
    """Write the reference to stdout."""
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
