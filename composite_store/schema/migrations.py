"""The schema migrations of every domain, as data.

Each domain's database records the schema version it is at (a ``<prefix>composite_schema``
table or collection on SQL and MongoDB, the tables' catalog hashes on Redis). Version 0 is the
schema before this registry existed: the previous release's tables, or tables Mastra created.
A :class:`Migration` lifts one domain by one version through backend-neutral steps; each
backend renders a step into its own statements (``Migratable._migration_plan`` in
``composite_store.domains.hooks``): SQL through the dialect, MongoDB as ``createIndex``
commands, Redis as index backfills. A step a backend has nothing to do for renders to no
statement.

``init()`` never alters a current database: it creates missing tables and records the version
(``composite_store.domains.hooks.settle``). Where the recorded version is older and a pending
step has statements to run here, it warns (``SchemaDriftWarning``), or raises
``SchemaMismatchError`` when this release cannot work without the migration, naming the fix:
``composite-store migrate URL``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from composite_store.schema import DOMAINS, SCHEMA_VERSION, Index, TableSpec, table, tables_for

__all__ = [
    "MIGRATIONS",
    "AddColumns",
    "CreateIndex",
    "ExactText",
    "IndexRecords",
    "NamePrimaryKey",
    "Migration",
    "SchemaDriftWarning",
    "Statement",
    "Step",
    "checking",
    "current_version",
    "one_opening",
    "opening",
    "pending",
    "unchecked",
    "version_table",
]


@dataclass(frozen=True)
class CreateIndex:
    """Create documented index ``index`` (its ``schema.Index`` suffix) of ``table`` where no
    index on its columns exists."""

    table: str
    index: str

    def spec(self) -> TableSpec:
        return table(self.table)

    def documented(self) -> Index:
        spec = self.spec()
        indexes = (*spec.indexes, *spec.mastra_indexes, *spec.sql_indexes)
        return next(i for i in indexes if i.suffix == self.index)


@dataclass(frozen=True)
class AddColumns:
    """Add the documented (nullable) ``columns`` of ``table`` that its database lacks;
    nothing to do where records have no fixed columns (MongoDB, Redis)."""

    table: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class NamePrimaryKey:
    """Rename ``table``'s primary key constraint to its documented name where the backend
    names it (PostgreSQL: Mastra's ``init()`` adds a key of that name when none exists)."""

    table: str


@dataclass(frozen=True)
class IndexRecords:
    """Build the listing indexes a backend keeps for ``table`` from the records already stored
    (Redis sorted sets added by this version); nothing to do where listings need no index."""

    table: str


@dataclass(frozen=True)
class ExactText:
    """Make ``table``'s text columns compare exactly where a backend's text collation pads or
    folds (MariaDB's ``utf8mb4_bin`` is PAD SPACE: ``'alice '`` equals ``'alice'``): MySQL
    and MariaDB give them a binary NO PAD collation; nothing to do elsewhere."""

    table: str


#: One step of a migration.
Step = CreateIndex | IndexRecords | AddColumns | NamePrimaryKey | ExactText


@dataclass(frozen=True)
class Migration:
    """Lift ``domain`` to schema ``version`` (from ``version - 1``) through ``steps``."""

    domain: str
    version: int
    description: str
    steps: tuple[Step, ...] = ()
    #: This release cannot serve the domain correctly before the migration ran: ``init()``
    #: raises instead of warning where it has statements left to run. Index-only migrations
    #: are not required (reads are slower); adding columns is (writes name every column).
    required: bool = False
    #: Steps ``composite-store migrate`` runs with the others but that never make the
    #: migration required (an index beside a required column change: reads are slower
    #: without it, nothing is wrong).
    advisory: tuple[Step, ...] = ()

    @property
    def all_steps(self) -> tuple[Step, ...]:
        """Every step to run: the ``steps``, then the ``advisory`` ones."""
        return (*self.steps, *self.advisory)


@dataclass(frozen=True)
class Statement:
    """One statement of a migration step as a backend renders it: the text ``--dry-run``
    prints and the coroutine that runs it."""

    text: str
    run: Callable[[], Awaitable[None]] = field(repr=False, compare=False)
    #: False for what must run outside a transaction (PostgreSQL ``CREATE INDEX
    #: CONCURRENTLY``).
    transactional: bool = True
    #: Until it ran, ``Transferable.export_records`` misses records (a listing index not yet built
    #: from the stored records): ``composite_store.admin.copy`` refuses such a source.
    export_incomplete: bool = False


class SchemaDriftWarning(UserWarning):
    """A domain's database is at an older schema version; ``composite-store migrate`` fixes it."""


_BASELINE = "start recording the schema version"


def _mastra_1x_migrations() -> tuple[Migration, ...]:
    """Version 2: the columns, indexes and key name of Mastra 1.x's tables (issue 16)."""
    added = {
        "ai_spans": (
            "entityVersionId",
            "parentEntityVersionId",
            "rootEntityVersionId",
            "experimentId",
        ),
        "scorers": ("organizationId", "projectId", "batchId", "datasetId", "datasetItemId"),
        "workflow_definitions": (
            "inputSchema",
            "outputSchema",
            "stateSchema",
            "requestContextSchema",
            "graph",
            "schedule",
            "status",
            "source",
            "authorId",
        ),
        "datasets": (
            "requestContextSchema",
            "organizationId",
            "projectId",
            "candidateKey",
            "candidateId",
        ),
        "dataset_items": (
            "expectedTrajectory",
            "toolMocks",
            "unmockedToolPolicy",
            "scorerIds",
            "organizationId",
            "projectId",
            "externalId",
        ),
        "experiments": (
            "provenance",
            "runnerAttestation",
            "experimentSetId",
            "comparisonId",
            "variantId",
            "trialIndex",
            "scorerIds",
            "agentVersion",
            "organizationId",
            "projectId",
        ),
        "experiment_results": (
            "metadata",
            "attempt",
            "comment",
            "toolMockReport",
            "organizationId",
            "projectId",
        ),
    }
    found = []
    for domain in DOMAINS:
        steps: list[Step] = []
        for spec in tables_for(domain):
            if spec.base_name in added:
                steps.append(AddColumns(spec.base_name, added[spec.base_name]))
            if spec.named_primary_key:
                steps.append(NamePrimaryKey(spec.base_name))
            steps.extend(CreateIndex(spec.base_name, i.suffix) for i in spec.mastra_indexes)
        found.append(
            Migration(
                domain,
                2,
                "add Mastra 1.x's columns, indexes and key names (PostgreSQL, SQLite/libSQL)",
                tuple(steps),
                # Writes name every documented column: added ones must exist first.
                required=any(isinstance(step, AddColumns) for step in steps),
            )
        )
    return tuple(found)


#: Version 3's other steps, by domain (issue 19): workflow runs of one workflow read newest
#: first in index order on the relational backends (PostgreSQL has Mastra's index already).
_VERSION_3_INDEXES: dict[str, tuple[Step, ...]] = {
    "workflows": (CreateIndex("workflow_snapshot", "name_created_at_idx"),),
}


_VERSION_3_TEXT = {
    "workflows": (
        "; index workflow runs by (workflow_name, createdAt DESC, run_id DESC) "
        "(<prefix>workflow_snapshot_name_created_at_idx)"
    ),
}

#: Version 4 (issue 19, reads at scale): indexes only, so never required. A database that a
#: release at version 3 created already recorded 3; these steps are a version of their own so
#: that ``migrate`` still reaches it.
_VERSION_4: dict[str, tuple[str, tuple[Step, ...]]] = {
    "memory": (
        "index messages by (thread_id, createdAt DESC, id DESC) on PostgreSQL "
        "(<prefix>messages_thread_id_createdat_id_idx): a thread's newest messages in index "
        "order whatever the statistics say",
        (CreateIndex("messages", "thread_id_createdat_id_idx"),),
    ),
    "workflows": (
        "index workflow runs by (resourceId, createdAt DESC, run_id DESC) "
        "(<prefix>workflow_snapshot_resourceid_created_at_idx): a resource's runs newest first "
        "(Mastra has no index on resourceId)",
        (CreateIndex("workflow_snapshot", "resourceid_created_at_idx"),),
    ),
}


def _version_4_migrations() -> tuple[Migration, ...]:
    """Version 4: the indexes of ``_VERSION_4``; no change for the other domains."""
    return tuple(
        Migration(domain, 4, *_VERSION_4.get(domain, ("no change to this domain", ())))
        for domain in DOMAINS
    )


def _exact_text_migrations() -> tuple[Migration, ...]:
    """Version 3: identifiers compare exactly on every backend (issue 17); and the indexes of
    issue 19 (``_VERSION_3_INDEXES``)."""
    return tuple(
        Migration(
            domain,
            3,
            "compare text exactly: a binary NO PAD collation on every text column (MariaDB, "
            "MySQL), so that an id with a trailing space is another id"
            + _VERSION_3_TEXT.get(domain, ""),
            tuple(ExactText(spec.base_name) for spec in tables_for(domain)),
            # Without it a padded id reads and overwrites another resource's records.
            required=True,
            advisory=_VERSION_3_INDEXES.get(domain, ()),
        )
        for domain in DOMAINS
    )


#: Every migration, oldest first per domain. Version 1 is this release's schema.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "memory",
        1,
        f"{_BASELINE}; index resources by createdAt so that all of them can be listed (Redis)",
        (IndexRecords("resources"),),
    ),
    Migration("workflows", 1, _BASELINE),
    Migration("workflow_definitions", 1, _BASELINE),
    Migration(
        "scores",
        1,
        f"{_BASELINE}; index every score by createdAt so that all of them can be listed (Redis)",
        (IndexRecords("scorers"),),
    ),
    Migration(
        "observability",
        1,
        f"{_BASELINE}; index AI spans by startedAt (<prefix>ai_spans_started_at_idx) and "
        "OpenTelemetry spans by traceId and startTime (<prefix>traces_trace_id_start_time_idx)",
        (
            CreateIndex("ai_spans", "started_at_idx"),
            CreateIndex("traces", "trace_id_start_time_idx"),
        ),
    ),
    Migration("datasets", 1, _BASELINE),
    Migration("experiments", 1, _BASELINE),
    *_mastra_1x_migrations(),
    *_exact_text_migrations(),
    *_version_4_migrations(),
)


def _check_registry() -> None:
    for name in DOMAINS:
        versions = [m.version for m in MIGRATIONS if m.domain == name]
        if versions != list(range(1, len(versions) + 1)):
            raise AssertionError(f"migrations of {name!r} must be numbered 1, 2, ...: {versions}")
    for migration in MIGRATIONS:
        for step in migration.all_steps:
            if table(step.table).domain != migration.domain:
                raise AssertionError(f"{step} is not a table of {migration.domain!r}")
            if isinstance(step, CreateIndex):
                step.documented()  # a StopIteration here names an undocumented index
    if max(m.version for m in MIGRATIONS) != SCHEMA_VERSION:
        raise AssertionError("schema.SCHEMA_VERSION must be the highest migration version")


_check_registry()


def version_table(prefix: str) -> str:
    """The name of the table (collection) recording each domain's schema version."""
    return f"{prefix}composite_schema"


def current_version(domain: str) -> int:
    """The schema version of ``domain`` this release writes."""
    return max((m.version for m in MIGRATIONS if m.domain == domain), default=0)


def pending(domain: str, recorded: int) -> list[Migration]:
    """The migrations that lift ``domain`` from ``recorded`` to the current version."""
    return [m for m in MIGRATIONS if m.domain == domain and m.version > recorded]


#: Off while ``composite-store migrate`` opens a store: it checks and records versions itself.
_checking: ContextVar[bool] = ContextVar("composite_store_schema_check", default=True)


@contextmanager
def unchecked() -> Iterator[None]:
    """Within this block ``init()`` neither checks nor records schema versions (for migrate,
    which must open a database whatever version it is at)."""
    token = _checking.set(False)
    try:
        yield
    finally:
        _checking.reset(token)


def checking() -> bool:
    """Whether ``init()`` checks and records schema versions (False within :func:`unchecked`)."""
    return _checking.get()


#: The store ``init()`` in progress: a token of its own per call, None outside one.
_opening: ContextVar[object | None] = ContextVar("composite_store_opening", default=None)


@contextmanager
def one_opening() -> Iterator[None]:
    """Within this block the domains' ``init()`` calls are one opening of a store
    (``Store.init``): a backend may read every domain's recorded version once for all of
    them (``Migratable._version_at_init``). Outside it each domain reads its own."""
    token = _opening.set(object())
    try:
        yield
    finally:
        _opening.reset(token)


def opening() -> object | None:
    """The store opening in progress (its token), None outside :func:`one_opening`."""
    return _opening.get()
