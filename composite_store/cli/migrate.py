"""``composite-store migrate URL``: print each domain's migration plan, and apply it unless
``--dry-run`` (``composite_store.admin.migrate`` plans and applies)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from composite_store.admin.migrate import DomainPlan, apply_plan, plan_migrations
from composite_store.cli.main import Subparsers
from composite_store.cli.target import open_target
from composite_store.schema import DOMAINS
from composite_store.schema.migrations import unchecked
from composite_store.store import Store

__all__ = ["add_parser", "render", "run"]


def add_parser(subparsers: Subparsers) -> None:
    """Register ``composite-store migrate``."""
    parser = subparsers.add_parser(
        "migrate",
        help="bring each domain's schema to this release's version",
        description=(
            "Apply the pending schema migrations of every domain of a store (URL) or of a "
            "routing config file, creating missing tables first. Statements that cannot run "
            "in a transaction (PostgreSQL CREATE INDEX CONCURRENTLY) run outside one. Each "
            "domain's version is recorded after each migration, so a rerun resumes."
        ),
    )
    parser.add_argument("target", metavar="URL", help="a store URL or a composite-store.toml")
    parser.add_argument(
        "--dry-run", action="store_true", help="print the statements without running them"
    )
    parser.add_argument(
        "--domain",
        action="append",
        choices=DOMAINS,
        metavar="DOMAIN",
        help=f"migrate only this domain (repeatable); one of: {', '.join(DOMAINS)}",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Plan, print, and (unless ``--dry-run``) apply; return 0."""
    store = open_target(args.target)
    # Migrate opens databases whatever version they are at: init() must not refuse them.
    with unchecked():
        return asyncio.run(_main(store, args.domain, args.dry_run))


async def _main(store: Store, domains: Sequence[str] | None, dry_run: bool) -> int:
    try:
        await store.init()
        plans = await plan_migrations(store, domains)
        print(render(plans))
        if dry_run:
            due = [p for p in plans if p.due]
            print(
                f"dry run: {sum(p.statements for p in due)} statement(s) in {len(due)} "
                "domain(s) would run; nothing was changed"
            )
            return 0
        ran: list[str] = []
        await apply_plan(store, plans, on_statement=lambda d, s: ran.append(d))
        after = await plan_migrations(store, domains)
        versions = ", ".join(f"{p.domain}={p.recorded}" for p in after if p.recorded is not None)
        print(f"applied {len(ran)} statement(s); versions now: {versions or 'not recorded'}")
        return 0
    finally:
        await store.close()


def render(plans: Sequence[DomainPlan]) -> str:
    """The plans as text, grouped by the database serving the domains."""
    width = max((len(p.domain) for p in plans), default=0)
    lines: list[str] = []
    for where in dict.fromkeys(p.where for p in plans):
        lines.append(where)
        for plan in (p for p in plans if p.where == where):
            lines.append(f"  {plan.domain:<{width}}  {_state(plan)}")
            for migration, statements in plan.steps:
                lines.append(f"    version {migration.version}: {migration.description}")
                for statement in statements:
                    outside = "" if statement.transactional else "   -- outside a transaction"
                    lines.append(f"      {statement.text};{outside}")
                if not statements:
                    lines.append("      (no statement on this backend: the version is recorded)")
    return "\n".join(lines)


def _state(plan: DomainPlan) -> str:
    if plan.recorded is None:
        return "keeps no schema version (nothing to migrate)"
    if not plan.due:
        return f"version {plan.recorded}, current"
    return f"version {plan.recorded} -> {plan.current}"
