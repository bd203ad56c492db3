"""``composite-store check URL``: run the conformance suite against a backend, in a throwaway
namespace, and print a report per domain (``composite_store_conformance.check`` does the run).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util

from composite_store.cli.main import Subparsers
from composite_store.cli.output import add_output_arguments, emit, note
from composite_store.errors import CompositeStoreError, redact
from composite_store.schema import DOMAINS

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    """Register ``composite-store check``."""
    parser = subparsers.add_parser(
        "check",
        help="run the conformance suite against a backend URL, in a throwaway namespace",
        description=(
            "Run the composite-store conformance suite (behaviour, schema, capabilities, "
            "router) against the backend URL names, and print a report per domain. The run "
            "happens in a throwaway namespace (a temporary file for SQLite, a schema, a "
            "database or a key prefix on servers) that is dropped afterwards: existing data "
            "is never touched. Needs composite-store-conformance "
            '(pip install "composite-store[conformance]").'
        ),
    )
    parser.add_argument("url", metavar="URL", help="the backend to check, e.g. sqlite:///x.db")
    parser.add_argument(
        "--domain",
        action="append",
        choices=DOMAINS,
        metavar="DOMAIN",
        help=f"check only this domain (repeatable); one of: {', '.join(DOMAINS)}",
    )
    add_output_arguments(parser, what="the full report")
    parser.add_argument(
        "-k", metavar="EXPRESSION", dest="keyword", help="only tests matching (as pytest -k)"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also print pytest's own output"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check ``args.url``; print the report; return 0 when nothing failed, else 1."""
    url: str = args.url
    domains = tuple(dict.fromkeys(args.domain or DOMAINS))
    if importlib.util.find_spec("composite_store_conformance") is None:
        raise CompositeStoreError(
            "composite-store check needs composite-store-conformance: "
            'pip install "composite-store[conformance]"'
        )
    conformance = importlib.import_module("composite_store_conformance.check")
    report, output = conformance.run_check(url, domains, args.keyword)
    if args.verbose:
        note(redact(output))
    emit(args, text=report.render(), data=report.as_json())
    return 0 if report.ok else 1
