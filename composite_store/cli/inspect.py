"""``composite-store inspect URL_OR_CONFIG``: print what a store is, as its databases say
(``composite_store.admin.inspect`` gathers it)."""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Any

from composite_store.admin.inspect import DomainReport, inspect_store
from composite_store.cli.main import Subparsers
from composite_store.cli.output import add_output_arguments, emit
from composite_store.cli.target import open_target
from composite_store.composite import CompositeStore
from composite_store.errors import ValidationError, redact
from composite_store.schema import DOMAINS
from composite_store.store import Store

__all__ = ["add_parser", "as_json", "render", "run"]


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
        "target",
        metavar="URL_OR_CONFIG",
        nargs="?",
        help=(
            "a store URL or a composite-store.toml (the environment's routes apply over the "
            "file's); without it, the routes of COMPOSITE_STORE_URL / "
            "COMPOSITE_STORE_<DOMAIN>_URL and of composite-store.toml in this directory"
        ),
    )
    add_output_arguments(parser, what="the report")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Inspect ``args.target``; print the report; 0 when every domain is fine, else 1."""
    store, label = _open(args.target)
    sources = store.route_sources() if isinstance(store, CompositeStore) else {}
    routing, reports = asyncio.run(_main(store, sources))
    emit(
        args,
        text=render(label, routing, reports),
        data=as_json(label, routing, reports),
    )
    return 0 if all(r.ok for r in reports) else 1


def _open(target: str | None) -> tuple[Store, str]:
    if target is None:
        store = CompositeStore()
        if not store.domains:
            raise ValidationError(
                "nothing to inspect: give a URL or a config file, or set COMPOSITE_STORE_URL "
                "(or COMPOSITE_STORE_<DOMAIN>_URL), or write a composite-store.toml here"
            )
        return store, "(environment and composite-store.toml)"
    if "://" not in target and Path(target).is_file():
        return CompositeStore(config_file=target), target
    return open_target(target), target


async def _main(
    store: Store, sources: dict[str, str]
) -> tuple[dict[str, str], list[DomainReport]]:
    try:
        return store.describe(), await inspect_store(store, sources)
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
        lines.append(f"  route from      {report.source}")
        if not report.reachable:
            lines.append(f"  reachable       NO: {report.unreachable_reason}")
            continue
        lines.append("  reachable       yes")
        if report.durability is not None:
            lines.append(f"  WARNING         {report.durability}")
        if report.error is not None:
            lines.append(f"  error           {report.error}")
            continue
        if not report.initialized:
            lines.append(
                "  initialized     no: none of its tables exist (init() creates them, "
                f"or `composite-store migrate {redact(target)}`)"
            )
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
    lines += [
        "",
        f"{ok} of {len(reports)} domain(s) reachable, initialized, current and without drift",
    ]
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
