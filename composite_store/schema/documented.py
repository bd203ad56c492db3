"""The documented schema (Mastra's tables) as data; everything physical is derived from it.

SQL tables, Mongo indexes and validators, Redis key layouts, the schema reference in docs/ and
the conformance suite's schema checks all read this module. Nothing restates a column list.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from composite_store.errors import ValidationError

__all__ = [
    "DEFAULT_PREFIX",
    "DOMAINS",
    "EMPTY_STRING_IS_NULL",
    "MASTRA_FAMILIES",
    "POSTGRESQL",
    "SCHEMA_VERSION",
    "SQLITE",
    "SHADOW_TIMESTAMPS",
    "TABLES",
    "VARIANTS",
    "Column",
    "ColumnType",
    "Index",
    "TableSpec",
    "shadow_name",
    "table",
    "tables_for",
    "validate_identifier",
    "validate_prefix",
    "variant_columns",
    "variant_nullable",
]

DEFAULT_PREFIX = "mastra_"
#: The highest domain schema version of this release; each domain's own version, and the
#: migrations to it, are in ``composite_store.schema.migrations`` (recorded per domain by
#: ``init()``).
SCHEMA_VERSION = 4

DOMAINS: tuple[str, ...] = (
    "memory",
    "workflows",
    "workflow_definitions",
    "scores",
    "observability",
    "datasets",
    "experiments",
)
#: Mastra's spelling of a domain key -> ours (its ``stores`` map is camelCase).
DOMAIN_ALIASES: dict[str, str] = {"workflowDefinitions": "workflow_definitions"}


def domain_key(name: str) -> str:
    """``name`` as our domain key: Mastra's camelCase spelling (``workflowDefinitions``) is
    accepted for ``workflow_definitions``; anything else is returned unchanged (the caller
    checks it against ``DOMAINS``)."""
    return DOMAIN_ALIASES.get(name, name) if isinstance(name, str) else name


class ColumnType(enum.Enum):
    """Logical column types; each backend maps them to a physical type."""

    TEXT = "text"
    JSON = "json"
    TIMESTAMP = "timestamp"
    INTEGER = "integer"
    BIGINT = "bigint"
    FLOAT = "float"
    BOOLEAN = "boolean"


@dataclass(frozen=True)
class Column:
    """One documented column: its stored name, logical type and nullability."""

    name: str
    type: ColumnType
    nullable: bool = True
    #: Column is part of a lookup key, so backends must use a bounded key-able text type.
    key: bool = False
    #: Text that queries compare, sort or group by without it being a key (span filters, a
    #: status): backends whose long-text type cannot be compared (Oracle's CLOB) bound it.
    lookup: bool = False


#: The backend families whose tables are Mastra's own (section 9 of DESIGN.md).
POSTGRESQL, SQLITE = "postgresql", "sqlite"
MASTRA_FAMILIES: frozenset[str] = frozenset({POSTGRESQL, SQLITE})


@dataclass(frozen=True)
class Index:
    """A documented secondary index; ``columns`` are (name, descending) pairs.

    An index with ``families`` is one of Mastra's own indexes, created only where the tables
    are Mastra's (PostgreSQL, SQLite/libSQL), so that Mastra's ``init()`` finds it; the other
    backends derive their indexes from the portable ones (no ``families``) as before.
    """

    suffix: str
    columns: tuple[tuple[str, bool], ...]
    unique: bool = False
    #: Only these backend families create it; empty: every backend.
    families: frozenset[str] = frozenset()
    #: Mastra's name for it under the default prefix, where that is not ``<table>_<suffix>``;
    #: a store with another prefix names it ``<table>_<suffix>`` (unique per prefix).
    mastra_name: str | None = None
    #: PostgreSQL: Mastra prefixes the name with ``<schema>_`` outside schema ``public``.
    schema_prefixed: bool = True
    #: A partial index over the rows where this column is NULL (Mastra's root-span indexes).
    where_null: str | None = None
    #: A partial index over the rows where this column is not NULL, where the backend has
    #: partial indexes (PostgreSQL, SQLite): a read that filters on the column by equality
    #: finds every row it wants in it, and a write of a row without the column does not
    #: touch it. A full index on the same columns serves the same reads, so a database
    #: built before it was partial is not drift.
    where_not_null: str | None = None
    #: The PostgreSQL access method (Mastra's ``gin`` on JSONB columns); None: btree.
    method: str | None = None
    #: Every read it serves compares its columns but the last by equality and orders by the
    #: last one: an index on the same columns in other directions serves those reads as well
    #: (a B-tree is read backward as fast as forward). Where one of Mastra's indexes of the
    #: family is such an index, it stands for this one (:meth:`TableSpec.standing_for`).
    any_direction: bool = False

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def name(self, table_name: str) -> str:
        return f"{table_name}_{self.suffix}"

    def physical_name(self, table_name: str, prefix: str) -> str:
        """The name the relational backends give it: Mastra's under the default prefix."""
        if self.mastra_name is not None and prefix == DEFAULT_PREFIX:
            return self.mastra_name
        return self.name(table_name)


@dataclass(frozen=True)
class TableSpec:
    """One documented table (collection, key space) of one domain."""

    base_name: str
    domain: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    #: Portable secondary indexes (every backend) and Mastra's own (``Index.families``).
    indexes: tuple[Index, ...] = ()
    mastra_indexes: tuple[Index, ...] = ()
    #: Our own indexes on the relational backends only (their ``families``), created where no
    #: index of the family's already has the same columns (Redis and MongoDB serve the same
    #: reads their own way): not Mastra's, so Mastra's ``init()`` ignores them.
    sql_indexes: tuple[Index, ...] = ()
    #: Mastra names the primary key constraint ``<table>_<columns>_pk`` (PostgreSQL prefixes
    #: it with the schema), and adds one of that name when it is missing: the spans table.
    named_primary_key: bool = False
    #: Per unique key: the name of the unique index Mastra makes of it on the relational
    #: backends (instead of a constraint), or None (a constraint, named by the dialect).
    unique_index_names: tuple[str | None, ...] = ()
    _by_name: dict[str, Column] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({c.name: c for c in self.columns})
        for name in (*self.primary_key, *(n for u in self.unique for n in u)):
            if name not in self._by_name:
                raise AssertionError(f"{self.base_name}: key column {name!r} is not a column")
        for index in (*self.indexes, *self.mastra_indexes, *self.sql_indexes):
            partial = filter(None, [index.where_null, index.where_not_null])
            for name in (*index.column_names, *partial):
                if name not in self._by_name:
                    raise AssertionError(f"{self.base_name}: index column {name!r} unknown")

    def name(self, prefix: str = DEFAULT_PREFIX) -> str:
        return f"{prefix}{self.base_name}"

    def column(self, name: str) -> Column:
        return self._by_name[name]

    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def columns_of(self, kind: ColumnType) -> tuple[str, ...]:
        return self._columns_of[kind]

    @cached_property
    def column_types(self) -> tuple[tuple[str, ColumnType], ...]:
        """(name, type) of every column, in order."""
        return tuple((c.name, c.type) for c in self.columns)

    @cached_property
    def _columns_of(self) -> dict[ColumnType, tuple[str, ...]]:
        return {k: tuple(c.name for c in self.columns if c.type is k) for k in ColumnType}

    def indexes_for(self, family: str) -> tuple[Index, ...]:
        """The indexes a backend of ``family`` creates: the portable ones, and Mastra's own
        where ``family`` is one of Mastra's. A portable index that one of Mastra's stands for
        (:meth:`standing_for`) is not created beside it: SQLite's message index on
        (thread_id, createdAt DESC) would be a third copy of Mastra's two, written on every
        message for no read (docs/benchmarks.md, session 2026-12-07 (fifth))."""
        mastra = tuple(i for i in self.mastra_indexes if family in i.families)
        portable = tuple(i for i in self.indexes if self.standing_for(i, family) is i)
        found = (*portable, *mastra)
        covered = {i.columns for i in found}
        ours = (
            i for i in self.sql_indexes if family in i.families and i.columns not in covered
        )
        return (*found, *ours)

    def standing_for(self, index: Index, family: str) -> Index:
        """The index a backend of ``family`` creates for portable ``index``: one of Mastra's of
        that family on the same columns where ``index`` allows any direction
        (``Index.any_direction``), else ``index`` itself."""
        if index.any_direction:
            for mastra in self.mastra_indexes:
                if family in mastra.families and mastra.column_names == index.column_names:
                    return mastra
        return index

    def unique_index_name(self, key: tuple[str, ...], prefix: str = DEFAULT_PREFIX) -> str | None:
        """The name of the unique index enforcing ``key``, or None (a constraint): Mastra's
        under the default prefix; ``<table>_<columns>_unique`` under another, since an
        index name is one per schema (or SQLite file) and two prefixes may share one."""
        names = dict(zip(self.unique, self.unique_index_names, strict=False))
        name = names.get(key)
        if name is None or prefix == DEFAULT_PREFIX:
            return name
        return f"{self.name(prefix)}_{'_'.join(key)}_unique".lower()

    def primary_key_name(self, prefix: str = DEFAULT_PREFIX) -> str | None:
        """The primary key's constraint name (before any schema prefix), or None where the
        backend names it."""
        if not self.named_primary_key:
            return None
        return f"{self.name(prefix)}_{'_'.join(self.primary_key)}_pk".lower()

    @property
    def key_columns(self) -> tuple[str, ...]:
        """Primary key, else the first unique key, else () (Mastra's evals table has none)."""
        return self.primary_key or (self.unique[0] if self.unique else ())


T, J, TS, INT, BI, F, B = (
    ColumnType.TEXT,
    ColumnType.JSON,
    ColumnType.TIMESTAMP,
    ColumnType.INTEGER,
    ColumnType.BIGINT,
    ColumnType.FLOAT,
    ColumnType.BOOLEAN,
)


def _c(
    name: str, type_: ColumnType, nn: bool = False, key: bool = False, lookup: bool = False
) -> Column:
    return Column(name, type_, nullable=not nn, key=key, lookup=lookup)


def _desc(*names: str) -> tuple[tuple[str, bool], ...]:
    return tuple((n[1:], True) if n.startswith("-") else (n, False) for n in names)


_PG, _SQ, _BOTH = frozenset({POSTGRESQL}), frozenset({SQLITE}), MASTRA_FAMILIES
#: The relational families but PostgreSQL, whose Mastra index serves the same reads
#: (``SqlDialect.family``: MariaDB/MySQL and Oracle are ``sql``).
_OURS_SQL = frozenset({SQLITE, "sql"})


def _mx(
    base: str,
    families: frozenset[str],
    name: str,
    *columns: str,
    unique: bool = False,
    prefixed: bool = False,
    where_null: str | None = None,
    method: str | None = None,
) -> Index:
    """One of Mastra's own indexes of table ``base``, named ``name`` as Mastra names it."""
    suffix = name.removeprefix(f"mastra_{base}_").removeprefix(f"idx_{base}_")
    return Index(
        suffix,
        _desc(*columns),
        unique=unique,
        families=families,
        mastra_name=name,
        schema_prefixed=prefixed,
        where_null=where_null,
        method=method,
    )


def _tenancy(*extra: str) -> tuple[Column, ...]:
    """Mastra's tenancy columns (organizationId, projectId) and other nullable text ones."""
    return tuple(_c(n, T, lookup=True) for n in ("organizationId", "projectId", *extra))


_SPAN_TEXT = (
    "entityType",
    "entityId",
    "entityName",
    "parentEntityType",
    "parentEntityId",
    "parentEntityName",
    "rootEntityType",
    "rootEntityId",
    "rootEntityName",
    "userId",
    "organizationId",
    "resourceId",
    "runId",
    "sessionId",
    "threadId",
    "requestId",
    "environment",
    "serviceName",
    "source",
    "entityVersionId",
    "parentEntityVersionId",
    "rootEntityVersionId",
    "experimentId",
)
_SPAN_JSON = (
    "scope",
    "metadata",
    "tags",
    "attributes",
    "links",
    "input",
    "output",
    "error",
    "requestContext",
)

#: Mastra's indexes of the spans table (PostgreSQL's and libSQL's differ).
_SPAN_INDEXES = (
    *(
        _mx(
            "ai_spans",
            _PG,
            f"mastra_ai_spans_{name}",
            *cols,
            prefixed=True,
            where_null=null,
            method=method,
        )
        for name, cols, null, method in (
            ("traceid_startedat_idx", ("traceId", "-startedAt"), None, None),
            ("parentspanid_startedat_idx", ("parentSpanId", "-startedAt"), None, None),
            ("name_idx", ("name",), None, None),
            ("spantype_startedat_idx", ("spanType", "-startedAt"), None, None),
            ("root_spans_idx", ("-startedAt",), "parentSpanId", None),
            ("entitytype_entityid_idx", ("entityType", "entityId"), None, None),
            ("entitytype_entityname_idx", ("entityType", "entityName"), None, None),
            ("orgid_userid_idx", ("organizationId", "userId"), None, None),
            ("metadata_gin_idx", ("metadata",), None, "gin"),
            ("tags_gin_idx", ("tags",), None, "gin"),
        )
    ),
    _mx("ai_spans", _SQ, "mastra_ai_spans_trace_started_at_idx", "traceId", "startedAt"),
    _mx(
        "ai_spans",
        _SQ,
        "mastra_ai_spans_roots_started_at_idx",
        "-startedAt",
        where_null="parentSpanId",
    ),
    _mx("ai_spans", _SQ, "mastra_ai_spans_spanid_traceid_idx", "spanId", "traceId", unique=True),
)

TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "threads",
        "memory",
        (
            _c("id", T, True, key=True),
            _c("resourceId", T, True, key=True),
            _c("title", T, True),
            _c("metadata", J),
            _c("createdAt", TS, True),
            _c("updatedAt", TS, True),
        ),
        primary_key=("id",),
        indexes=(Index("resourceid_createdat_idx", _desc("resourceId", "-createdAt")),),
    ),
    TableSpec(
        "messages",
        "memory",
        (
            _c("id", T, True, key=True),
            _c("thread_id", T, True, key=True),
            _c("content", T, True),
            _c("role", T, True),
            _c("type", T, True),
            _c("createdAt", TS, True),
            _c("resourceId", T, lookup=True),
        ),
        primary_key=("id",),
        # Its reads take one thread's messages by createdAt (and id) either way: on SQLite,
        # Mastra's idx_messages_thread_created_at is this index.
        indexes=(
            Index("thread_id_createdat_idx", _desc("thread_id", "-createdAt"), any_direction=True),
        ),
        # PostgreSQL: the whole (createdAt, id) order of a thread in one index, so a newest-N
        # page and each half of an include window are an index scan that stops after LIMIT
        # rows whatever the statistics say. Over Mastra's (thread_id, createdAt DESC) alone
        # the planner sorts the ties by id, incrementally or, where it estimates few rows,
        # by a full sort of every row past the target (docs/benchmarks.md, at scale).
        sql_indexes=(
            Index(
                "thread_id_createdat_id_idx",
                _desc("thread_id", "-createdAt", "-id"),
                families=_PG,
                schema_prefixed=False,
            ),
        ),
        mastra_indexes=(
            _mx("messages", _SQ, "idx_messages_thread_created_at", "thread_id", "createdAt"),
            _mx(
                "messages",
                _SQ,
                "idx_messages_thread_resource_created_at",
                "thread_id",
                "resourceId",
                "createdAt",
            ),
        ),
    ),
    TableSpec(
        "resources",
        "memory",
        (
            _c("id", T, True, key=True),
            _c("workingMemory", T),
            _c("metadata", J),
            _c("createdAt", TS, True),
            _c("updatedAt", TS, True),
        ),
        primary_key=("id",),
    ),
    TableSpec(
        "workflow_snapshot",
        "workflows",
        (
            _c("workflow_name", T, True, key=True),
            _c("run_id", T, True, key=True),
            _c("resourceId", T, key=True),
            _c("snapshot", J, True),
            _c("createdAt", TS, True),
            _c("updatedAt", TS, True),
        ),
        primary_key=(),
        unique=(("workflow_name", "run_id"),),
        # list_workflow_runs(workflow_name=...) newest first (ties by run_id): Mastra's index
        # on PostgreSQL (an incremental sort does the ties), ours on the other relational
        # backends (else every run of the workflow is read and sorted).
        sql_indexes=(
            Index(
                "name_created_at_idx",
                _desc("workflow_name", "-createdAt", "-run_id"),
                families=_OURS_SQL,
            ),
            # list_workflow_runs(resource_id=...) newest first: Mastra has no index on
            # resourceId, so without it every run is read (13 ms at 100k runs on PostgreSQL,
            # growing with the table; docs/benchmarks.md, at scale). Partial: a run saved
            # without a resource (most runs, and every run of Mastra's own benchmarks) costs
            # no entry in it; on SQLite that entry was a third of a snapshot insert.
            Index(
                "resourceid_created_at_idx",
                _desc("resourceId", "-createdAt", "-run_id"),
                families=frozenset({POSTGRESQL, SQLITE, "sql"}),
                # Index names are per schema on PostgreSQL: the schema needs no place in it.
                schema_prefixed=False,
                where_not_null="resourceId",
            ),
        ),
        mastra_indexes=(
            _mx(
                "workflow_snapshot",
                _PG,
                "mastra_workflow_snapshot_name_createdat_idx",
                "workflow_name",
                "-createdAt",
                prefixed=True,
            ),
        ),
    ),
    TableSpec(
        "workflow_definitions",
        "workflow_definitions",
        (
            _c("id", T, True, key=True),
            _c("name", T, True),
            _c("description", T),
            _c("metadata", J),
            _c("activeVersionId", T),
            # Mastra 1.71's definitions (NOT NULL there but for stateSchema,
            # requestContextSchema, schedule and authorId); the beta domain does not write them.
            *(_c(n, J) for n in ("inputSchema", "outputSchema", "stateSchema")),
            *(_c(n, J) for n in ("requestContextSchema", "graph", "schedule")),
            _c("status", T, lookup=True),
            _c("source", T),
            _c("authorId", T),
            _c("createdAt", TS, True),
            _c("updatedAt", TS, True),
        ),
        primary_key=("id",),
        mastra_indexes=(
            _mx(
                "workflow_definitions",
                _BOTH,
                "idx_workflow_definitions_status",
                "status",
                prefixed=True,
            ),
        ),
    ),
    TableSpec(
        "workflow_definition_versions",
        "workflow_definitions",
        (
            _c("id", T, True, key=True),
            _c("workflowDefinitionId", T, True, key=True),
            _c("versionNumber", INT, True),
            _c("snapshot", J),
            _c("changedFields", J),
            _c("changeMessage", T),
            _c("createdAt", TS, True),
        ),
        primary_key=("id",),
        unique=(("workflowDefinitionId", "versionNumber"),),
    ),
    TableSpec(
        "scorers",
        "scores",
        (
            _c("id", T, True, key=True),
            _c("scorerId", T, True, key=True),
            _c("traceId", T, key=True),
            _c("spanId", T, key=True),
            _c("runId", T, True, key=True),
            _c("scorer", J, True),
            _c("preprocessStepResult", J),
            _c("extractStepResult", J),
            _c("analyzeStepResult", J),
            _c("score", F, True),
            _c("reason", T),
            _c("metadata", J),
            _c("preprocessPrompt", T),
            _c("extractPrompt", T),
            _c("generateScorePrompt", T),
            _c("generateReasonPrompt", T),
            _c("analyzePrompt", T),
            _c("reasonPrompt", T),
            _c("input", J, True),
            _c("output", J, True),
            _c("additionalContext", J),
            _c("requestContext", J),
            _c("entityType", T, key=True),
            _c("entity", J),
            _c("entityId", T, key=True),
            _c("source", T, True, lookup=True),
            _c("resourceId", T),
            _c("threadId", T),
            *_tenancy("batchId", "datasetId", "datasetItemId"),
            _c("createdAt", TS, True),
            _c("updatedAt", TS, True),
        ),
        primary_key=("id",),
        indexes=(
            Index(
                "trace_id_span_id_created_at_idx",
                _desc("traceId", "spanId", "-createdAt"),
                mastra_name="mastra_scores_trace_id_span_id_created_at_idx",
            ),
        ),
    ),
    TableSpec(
        "evals",
        "scores",
        (
            _c("input", T, True),
            _c("output", T, True),
            _c("result", J, True),
            _c("agent_name", T, True, key=True),
            _c("metric_name", T, True, lookup=True),
            _c("instructions", T, True),
            # Nullable as in Mastra's TABLE_SCHEMAS: live (non-test) evals store NULL here.
            _c("test_info", J),
            _c("global_run_id", T, True, lookup=True),
            _c("run_id", T, True, key=True),
            _c("created_at", TS, True),
        ),
        # Mastra's evals table has no key at all: several metrics share one run_id.
        primary_key=(),
        indexes=(Index("agent_name_created_at_idx", _desc("agent_name", "-created_at")),),
    ),
    TableSpec(
        "ai_spans",
        "observability",
        (
            _c("traceId", T, True, key=True),
            _c("spanId", T, True, key=True),
            _c("parentSpanId", T, key=True),
            _c("name", T, True),
            _c("spanType", T, True, lookup=True),
            _c("isEvent", B, True),
            _c("startedAt", TS, True),
            _c("endedAt", TS),
            *(_c(n, T, lookup=True) for n in _SPAN_TEXT),
            *(_c(n, J) for n in _SPAN_JSON),
            _c("createdAt", TS, True),
            _c("updatedAt", TS),
        ),
        primary_key=("traceId", "spanId"),
        named_primary_key=True,
        indexes=(Index("started_at_idx", _desc("-startedAt")),),
        mastra_indexes=_SPAN_INDEXES,
    ),
    TableSpec(
        "traces",
        "observability",
        (
            _c("id", T, True, key=True),
            _c("parentSpanId", T, lookup=True),
            _c("name", T, True, lookup=True),
            _c("traceId", T, True, key=True),
            _c("scope", T, True, lookup=True),
            _c("kind", INT, True),
            _c("attributes", J),
            _c("status", J),
            _c("events", J),
            _c("links", J),
            _c("other", T),
            _c("startTime", BI, True),
            _c("endTime", BI, True),
            _c("createdAt", TS, True),
        ),
        primary_key=("id",),
        indexes=(Index("trace_id_start_time_idx", _desc("traceId", "startTime")),),
    ),
    TableSpec(
        "datasets",
        "datasets",
        (
            _c("id", T, True, key=True),
            _c("name", T, True),
            _c("description", T),
            _c("metadata", J),
            _c("inputSchema", J),
            _c("groundTruthSchema", J),
            _c("tags", J),
            _c("targetIds", J),
            _c("scorerIds", J),
            _c("targetType", T),
            _c("version", INT, True),
            _c("requestContextSchema", J),
            *_tenancy("candidateKey", "candidateId"),
            _c("createdAt", TS),
            _c("updatedAt", TS),
        ),
        primary_key=("id",),
        mastra_indexes=(
            _mx("datasets", _PG, "idx_datasets_candidate", "candidateKey", "candidateId"),
            _mx("datasets", _PG, "idx_datasets_org_project", "organizationId", "projectId"),
            _mx(
                "datasets",
                _SQ,
                "idx_datasets_tenancy_candidate",
                "organizationId",
                "projectId",
                "candidateKey",
                "candidateId",
            ),
            _mx(
                "datasets",
                _SQ,
                "idx_datasets_tenancy_createdat",
                "organizationId",
                "projectId",
                "createdAt",
                "id",
            ),
        ),
    ),
    TableSpec(
        "dataset_items",
        "datasets",
        (
            _c("id", T, True, key=True),
            _c("datasetId", T, True, key=True),
            _c("datasetVersion", INT, True),
            _c("validTo", INT),
            _c("isDeleted", B, True),
            _c("input", J, True),
            _c("groundTruth", J),
            _c("requestContext", J),
            _c("metadata", J),
            _c("source", J),
            _c("expectedTrajectory", J),
            _c("toolMocks", J),
            _c("unmockedToolPolicy", T),
            _c("scorerIds", J),
            *_tenancy("externalId"),
            _c("createdAt", TS),
            _c("updatedAt", TS),
        ),
        primary_key=("id", "datasetVersion"),
        indexes=(
            Index(
                "dataset_id_version_idx",
                _desc("datasetId", "datasetVersion"),
                mastra_name="idx_dataset_items_dataset_version",
                schema_prefixed=False,
            ),
        ),
        mastra_indexes=(
            _mx(
                "dataset_items", _BOTH, "idx_dataset_items_dataset_validto", "datasetId", "validTo"
            ),
            _mx(
                "dataset_items",
                _BOTH,
                "idx_dataset_items_dataset_validto_deleted",
                "datasetId",
                "validTo",
                "isDeleted",
            ),
            _mx(
                "dataset_items",
                _PG,
                "idx_dataset_items_external_id_history",
                "datasetId",
                "externalId",
                "datasetVersion",
            ),
            _mx(
                "dataset_items", _PG, "idx_dataset_items_org_project", "organizationId", "projectId"
            ),
            _mx(
                "dataset_items",
                _SQ,
                "idx_dataset_items_dataset_externalid_version",
                "datasetId",
                "externalId",
                "datasetVersion",
            ),
            _mx(
                "dataset_items",
                _SQ,
                "idx_dataset_items_tenancy_list",
                "organizationId",
                "projectId",
                "datasetId",
                "validTo",
                "isDeleted",
            ),
        ),
    ),
    TableSpec(
        "dataset_versions",
        "datasets",
        (
            _c("id", T, True, key=True),
            _c("datasetId", T, True, key=True),
            _c("version", INT, True),
            _c("createdAt", TS),
        ),
        primary_key=("id",),
        unique=(("datasetId", "version"),),
        unique_index_names=("idx_dataset_versions_dataset_version_unique",),
        mastra_indexes=(
            _mx(
                "dataset_versions",
                _BOTH,
                "idx_dataset_versions_dataset_version",
                "datasetId",
                "version",
            ),
        ),
    ),
    TableSpec(
        "experiments",
        "experiments",
        (
            _c("id", T, True, key=True),
            _c("name", T),
            _c("description", T),
            _c("metadata", J),
            _c("datasetId", T, key=True),
            _c("datasetVersion", INT),
            # Nullable as in Mastra 1.x (composite-store's records always carry both).
            _c("targetType", T, lookup=True),
            _c("targetId", T, key=True),
            _c("status", T, True, lookup=True),
            _c("totalItems", INT, True),
            _c("succeededCount", INT, True),
            _c("failedCount", INT, True),
            _c("skippedCount", INT, True),
            _c("provenance", J),
            _c("runnerAttestation", J),
            _c("experimentSetId", T, lookup=True),
            _c("comparisonId", T, lookup=True),
            _c("variantId", T, lookup=True),
            _c("trialIndex", INT),
            _c("scorerIds", J),
            _c("agentVersion", T),
            *_tenancy(),
            _c("startedAt", TS),
            _c("completedAt", TS),
            _c("createdAt", TS),
            _c("updatedAt", TS),
        ),
        primary_key=("id",),
        mastra_indexes=(
            _mx("experiments", _BOTH, "idx_experiments_datasetid", "datasetId"),
            _mx(
                "experiments",
                _BOTH,
                "idx_experiments_grouping",
                "experimentSetId",
                "comparisonId",
                "variantId",
                "trialIndex",
            ),
            _mx("experiments", _BOTH, "idx_experiments_org_project", "organizationId", "projectId"),
        ),
    ),
    TableSpec(
        "experiment_results",
        "experiments",
        (
            _c("id", T, True, key=True),
            _c("experimentId", T, True, key=True),
            _c("itemId", T, True, key=True),
            _c("itemDatasetVersion", INT),
            _c("input", J, True),
            _c("output", J),
            _c("groundTruth", J),
            _c("error", J),
            _c("startedAt", TS, True),
            _c("completedAt", TS, True),
            _c("retryCount", INT, True),
            _c("traceId", T),
            _c("status", T, lookup=True),
            _c("tags", J),
            _c("metadata", J),
            _c("attempt", INT),
            _c("comment", T),
            _c("toolMockReport", J),
            *_tenancy(),
            _c("createdAt", TS),
        ),
        primary_key=("id",),
        unique=(("experimentId", "itemId"),),
        mastra_indexes=(
            _mx(
                "experiment_results",
                _BOTH,
                "idx_experiment_results_exp_item_attempt",
                "experimentId",
                "itemId",
                "attempt",
                unique=True,
            ),
            _mx("experiment_results", _BOTH, "idx_experiment_results_experimentid", "experimentId"),
            _mx(
                "experiment_results",
                _BOTH,
                "idx_experiment_results_org_project",
                "organizationId",
                "projectId",
            ),
            _mx("experiment_results", _PG, "idx_experiment_results_tags_gin", "tags", method="gin"),
        ),
    ),
)

_BY_NAME = {t.base_name: t for t in TABLES}


def table(base_name: str) -> TableSpec:
    """Return the documented table named ``base_name`` (without prefix)."""
    return _BY_NAME[base_name]


def tables_for(domain: str) -> tuple[TableSpec, ...]:
    """Return the documented tables of ``domain``."""
    if domain not in DOMAINS:
        raise ValidationError(f"unknown domain {domain!r}; known: {', '.join(DOMAINS)}")
    return tuple(t for t in TABLES if t.domain == domain)


def iter_tables() -> Iterator[TableSpec]:
    return iter(TABLES)


# -- physical variants (DESIGN.md section 9) ---------------------------------------------------

#: Mastra's PostgreSQL layout: every timestamp column ``c`` has a shadow ``"cZ" TIMESTAMPTZ``.
SHADOW_TIMESTAMPS = "shadow_timestamps"
#: Oracle stores ``''`` as NULL: documented NOT NULL text columns outside the keys (a thread's
#: title may be ``''``) are nullable there, and NULL reads back as ``''``.
EMPTY_STRING_IS_NULL = "empty_string_is_null"
#: The physical variants a backend may declare; the schema checks accept the extra columns
#: (and the relaxed nullability) they bring and nothing else.
VARIANTS: tuple[str, ...] = (SHADOW_TIMESTAMPS, EMPTY_STRING_IS_NULL)


def shadow_name(column: str) -> str:
    """The shadow timestamp column of ``column``: ``createdAt`` -> ``createdAtZ``."""
    return f"{column}Z"


def variant_columns(spec: TableSpec, variants: Iterable[str]) -> dict[str, Column]:
    """The extra physical columns ``variants`` add to ``spec``: name -> documented column."""
    extra: dict[str, Column] = {}
    for variant in variants:
        if variant not in VARIANTS:
            raise ValidationError(
                f"unknown schema variant {variant!r}; known: {', '.join(VARIANTS)}"
            )
        if variant == SHADOW_TIMESTAMPS:
            for col in spec.columns:
                if col.type is ColumnType.TIMESTAMP:
                    extra[shadow_name(col.name)] = col
    return extra


def variant_nullable(spec: TableSpec, variants: Iterable[str]) -> frozenset[str]:
    """Documented NOT NULL columns of ``spec`` that ``variants`` store nullable."""
    if EMPTY_STRING_IS_NULL not in set(variants):
        return frozenset()
    keys = {*spec.primary_key, *(n for u in spec.unique for n in u)}
    return frozenset(
        c.name
        for c in spec.columns
        if c.type is ColumnType.TEXT and not c.nullable and not c.key and c.name not in keys
    )


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Oracle's identifier limit (128 bytes since 12.2); prefixes leave room for the longest table.
MAX_IDENTIFIER = 63
_LONGEST_TABLE = max(len(t.base_name) for t in TABLES)


def validate_identifier(value: str, *, what: str) -> str:
    """Return ``value`` if it can travel into SQL as a name, else raise ``ValidationError``."""
    if not isinstance(value, str) or not _IDENTIFIER.match(value):
        raise ValidationError(
            f"invalid {what} {value!r}: use letters, digits and underscores, "
            "not starting with a digit"
        )
    if len(value) > MAX_IDENTIFIER:
        raise ValidationError(f"invalid {what} {value!r}: longer than {MAX_IDENTIFIER} characters")
    return value


def validate_prefix(prefix: str) -> str:
    """Validate a table prefix (may be empty) so that every table name is a valid identifier."""
    if prefix == "":
        return prefix
    validate_identifier(prefix, what="table prefix")
    if len(prefix) + _LONGEST_TABLE + 40 > 128:
        raise ValidationError(f"invalid table prefix {prefix!r}: too long for index names")
    return prefix
