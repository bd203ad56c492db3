"""What a store is, as its databases say: ``inspect_store``; ``composite-store inspect`` prints it.

Per domain: the backend serving it (credentials redacted) and where its route came from,
whether it answers (and if not, why), whether it was ever initialized, the schema version
recorded and the current one, every difference between the physical schema and the documented
one (``composite_store.schema.drift``) with the statement that fixes it, and the row count of
each table. Inspecting creates and changes nothing: domains are attached (``Domain.attach``:
an embedded file is opened read-only, a missing one is not created), never initialized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from composite_store.domains.base import Domain
from composite_store.domains.hooks import (
    Inspectable,
    Migratable,
    Transferable,
    recorded_version,
    require,
)
from composite_store.errors import CompositeStoreError, redact
from composite_store.schema import tables_for
from composite_store.schema.drift import compare
from composite_store.schema.migrations import current_version
from composite_store.store import Store

__all__ = ["DomainReport", "Finding", "inspect_store"]


@dataclass
class Finding:
    """One schema difference and its fix."""

    kind: str
    table: str
    message: str
    fix: str | None


@dataclass
class DomainReport:
    """What ``inspect`` found about one domain."""

    domain: str
    backend: str
    reachable: bool
    #: Why the backend does not answer (None when it does).
    unreachable_reason: str | None = None
    #: Where the route came from: an argument, an environment variable, a config file.
    source: str = "argument"
    #: False when the database holds none of the domain's tables (never initialized).
    initialized: bool = True
    #: Why the backend may lose acknowledged writes as configured (``durability_warning``).
    durability: str | None = None
    schema_version: int | None = None
    #: Whether the database records the version (else it was read from the tables).
    version_recorded: bool = False
    current_version: int = 0
    drift: list[Finding] = field(default_factory=list)
    rows: dict[str, int | None] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Reachable, initialized, at the current version (or keeping none), without drift."""
        current = self.schema_version in (None, self.current_version)
        return (
            self.reachable
            and self.initialized
            and current
            and not self.drift
            and self.error is None
        )


async def inspect_store(
    store: Store, sources: Mapping[str, str] | None = None
) -> list[DomainReport]:
    """Inspect every domain ``store`` routes (attaching, never initializing, them).

    ``sources`` says where each domain's route came from (``CompositeStore.route_sources``).
    """
    reports = []
    for name, dom in store.domains.items():
        report = DomainReport(
            name,
            redact(dom.describe()),
            reachable=False,
            source=(sources or {}).get(name, "argument"),
            current_version=current_version(name),
        )
        try:
            # Attach first: a backend that connects lazily (Redis, MongoDB) answers a ping
            # only once its client exists, and attach() opens an embedded file read-only.
            await dom.attach()
            report.unreachable_reason = await dom.unreachable_reason()
        except CompositeStoreError as exc:
            report.unreachable_reason = redact(str(exc))
        report.reachable = report.unreachable_reason is None
        if report.reachable:
            try:
                await _inspect(dom, report)
            except CompositeStoreError as exc:
                report.error = redact(str(exc))
        reports.append(report)
    return reports


async def _inspect(dom: Domain, report: DomainReport) -> None:
    """Fill ``report``: drift needs an ``Inspectable`` domain (else the report carries the
    error); the version needs a ``Migratable`` one and row counts a ``Transferable`` one (else
    they stay None). A database holding none of the domain's tables is not initialized, which
    is not drift."""
    specs = tables_for(dom.domain)
    inspectable = require(dom, Inspectable, "describe its schema")
    report.durability = await inspectable.durability_warning()
    physical = await inspectable.describe_physical()
    if not physical:
        report.initialized = False
        return
    if isinstance(dom, Migratable):
        report.version_recorded = await dom.schema_version() is not None
    report.schema_version = await recorded_version(dom)
    for difference in compare(specs, physical):
        report.drift.append(
            Finding(
                difference.kind.value,
                difference.spec.base_name,
                difference.message,
                dom.fix_statement(difference) if isinstance(dom, Migratable) else None,
            )
        )
    existing = {t.table for t in physical}
    for spec in specs:
        report.rows[spec.base_name] = (
            await dom.count_records(table=spec.base_name)
            if isinstance(dom, Transferable) and spec.base_name in existing
            else None
        )
