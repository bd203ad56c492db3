"""``composite-store inspect URL_OR_CONFIG``: what a store is, as its databases say.

Per domain: the backend serving it (credentials redacted), whether it answers, the schema
version recorded and the current one, every difference between the physical schema and the
documented one (``composite_store.drift``) with the statement that fixes it, and the row count
of each table. Inspecting creates nothing: domains are attached (``Domain.attach``), not
initialized, so a missing table shows up as drift instead of being created.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from composite_store.cli import Subparsers
from composite_store.domains.base import Domain
from composite_store.drift import compare
from composite_store.errors import CompositeStoreError, redact
from composite_store.migrations import current_version, recorded_version
from composite_store.schema import DOMAINS, tables_for
from composite_store.store import Store
from composite_store.target import open_target

__all__ = ["DomainReport", "Finding", "add_parser", "inspect_store", "run"]


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
    schema_version: int | None = None
    #: Whether the database records the version (else it was read from the tables).
    version_recorded: bool = False
    current_version: int = 0
    drift: list[Finding] = field(default_factory=list)
    rows: dict[str, int | None] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Reachable, at the current version (or keeping none), and without drift."""
        current = self.schema_version in (None, self.current_version)
        return self.reachable and current and not self.drift and self.error is None


async def inspect_store(store: Store) -> list[DomainReport]:
    """Inspect every domain ``store`` routes (attaching, never initializing, them)."""
    reports = []
    for name, dom in store.domains.items():
        report = DomainReport(
            name, redact(dom.describe()), await dom.ping(), current_version=current_version(name)
        )
        if report.reachable:
            try:
                await _inspect(dom, report)
            except CompositeStoreError as exc:
                report.error = redact(str(exc))
        reports.append(report)
    return reports


async def _inspect(dom: Domain, report: DomainReport) -> None:
    await dom.attach()
    report.version_recorded = await dom.schema_version() is not None
    report.schema_version = await recorded_version(dom)
    specs = tables_for(dom.domain)
    physical = await dom.describe_physical()
    for difference in compare(specs, physical):
        report.drift.append(
            Finding(
                difference.kind.value,
                difference.spec.base_name,
                difference.message,
                dom.fix_statement(difference),
            )
        )
    existing = {t.table for t in physical}
    for spec in specs:
        report.rows[spec.base_name] = (
            await dom.count_records(table=spec.base_name) if spec.base_name in existing else None
        )


def add_parser(subparsers: Subparsers) -> None:
    """Register ``composite-store inspect``."""
    parser = subparsers.add_parser(
        "inspect",
        help="show routing, reachability, schema version, drift and row counts of a store",
        description=(
            "Inspect a store URL or the composite a config file routes: the routing table "
            "(credentials redacted), and per domain its backend, whether it answers, its schema "
            "version, every difference from the documented schema with the statement that "
            "fixes it, and the rows of each table. Creates and changes nothing. Exits 1 when a "
            "domain is unreachable, outdated or drifted."
        ),
    )
    parser.add_argument(
        "target", metavar="URL_OR_CONFIG", help="a store URL or a composite-store.toml"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Inspect ``args.target``; print the report; 0 when every domain is fine, else 1."""
    store = open_target(args.target)
    routing, reports = asyncio.run(_main(store))
    if args.json:
        print(json.dumps(as_json(args.target, routing, reports), indent=2))
    else:
        print(render(args.target, routing, reports))
    return 0 if all(r.ok for r in reports) else 1


async def _main(store: Store) -> tuple[dict[str, str], list[DomainReport]]:
    try:
        return store.describe(), await inspect_store(store)
    finally:
        await store.close()


def as_json(
    target: str, routing: dict[str, str], reports: list[DomainReport]
) -> dict[str, Any]:
    """The report as JSON-ready data."""
    return {
        "target": redact(target),
        "routing": {k: redact(v) for k, v in routing.items()},
        "domains": {r.domain: {**asdict(r), "ok": r.ok} for r in reports},
        "ok": all(r.ok for r in reports),
    }


def render(target: str, routing: dict[str, str], reports: list[DomainReport]) -> str:
    """The report as text."""
    width = max(len(d) for d in DOMAINS)
    lines = [f"composite-store inspect {redact(target)}", "", "routing"]
    lines += [f"  {name:<{width}}  {redact(where)}" for name, where in routing.items()]
    for report in reports:
        lines += ["", f"{report.domain}  ({report.backend})"]
        lines.append(f"  reachable       {'yes' if report.reachable else 'NO'}")
        if not report.reachable:
            continue
        if report.error is not None:
            lines.append(f"  error           {report.error}")
            continue
        version = _version(report, target)
        lines.append(f"  schema version  {version}")
        lines.append(f"  drift           {len(report.drift) or 'none'}")
        for finding in report.drift:
            lines.append(f"    - {finding.kind}: {finding.message}")
            lines.append(f"      fix: {finding.fix or 'no known statement for this backend'}")
        counts = ", ".join(
            f"{table} {'(missing)' if n is None else n}" for table, n in report.rows.items()
        )
        lines.append(f"  rows            {counts}")
    ok = sum(r.ok for r in reports)
    lines += ["", f"{ok} of {len(reports)} domain(s) reachable, current and without drift"]
    return "\n".join(lines)


def _version(report: DomainReport, target: str) -> str:
    if report.schema_version is None:
        return "not kept by this backend"
    text = str(report.schema_version)
    if not report.version_recorded:
        text += " (not recorded yet: read from the tables; init() records it)"
    if report.schema_version == report.current_version:
        return f"{text}, current"
    return (
        f"{text}; current is {report.current_version}: run "
        f"`composite-store migrate {redact(target)}`"
    )
