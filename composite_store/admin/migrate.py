"""Bring each domain's schema to this release's version: plan (``plan_migrations``), then apply
(``apply_plan``); ``composite-store migrate URL`` prints and runs the plan.

The plan comes from the registry (``composite_store.schema.migrations``) rendered by each domain's
backend; ``--dry-run`` prints it, statement by statement, without running anything. Each
statement runs in its own transaction, except those that cannot (PostgreSQL ``CREATE INDEX
CONCURRENTLY``), which run on a connection of their own; a domain's version is recorded after
each migration, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from composite_store.domains.hooks import Migratable, outstanding, recorded_version
from composite_store.errors import redact
from composite_store.schema.migrations import Migration, Statement, current_version, pending
from composite_store.store import Store

__all__ = ["DomainPlan", "apply_plan", "plan_migrations"]


@dataclass
class DomainPlan:
    """What migrating one domain takes: its version now (None: the backend keeps none), the
    current version, and each pending migration with the statements it needs here."""

    domain: str
    where: str
    recorded: int | None
    current: int
    steps: list[tuple[Migration, list[Statement]]] = field(default_factory=list)

    @property
    def statements(self) -> int:
        return sum(len(statements) for _, statements in self.steps)

    @property
    def due(self) -> bool:
        """Whether anything is left: a statement to run or a version to record."""
        return self.recorded is not None and self.recorded < self.current


async def plan_migrations(store: Store, domains: Sequence[str] | None = None) -> list[DomainPlan]:
    """The plan of every domain of ``store`` (initialized) or of ``domains``; reads only."""
    plans = []
    for name, dom in store.domains.items():
        if domains and name not in domains:
            continue
        recorded = await recorded_version(dom)
        plan = DomainPlan(name, redact(dom.describe()), recorded, current_version(name))
        if recorded is not None:
            for migration in pending(name, recorded):
                plan.steps.append((migration, await outstanding(dom, [migration])))
        plans.append(plan)
    return plans


async def apply_plan(
    store: Store,
    plans: Sequence[DomainPlan],
    *,
    on_statement: Callable[[str, Statement], None] | None = None,
) -> None:
    """Run ``plans``: each migration's statements in order, then record its version."""
    for plan in plans:
        if not plan.due:
            continue
        dom = store.get(plan.domain)
        assert isinstance(dom, Migratable), "a due plan comes from a Migratable domain"
        for migration, statements in plan.steps:
            for statement in statements:
                if on_statement is not None:
                    on_statement(plan.domain, statement)
                await statement.run()
            await dom._write_schema_version(migration.version)
