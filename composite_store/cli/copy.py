"""``composite-store copy SRC DST``: copy domains between backends, with progress and a count
check per table (``composite_store.admin.copy`` does the work).

Progress bars need ``rich`` (``pip install "composite-store[cli]"``); without it the command
prints one line per finished table and says how to get the bars.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from composite_store.admin.copy import DEFAULT_BATCH, CopyReport, Progress, copy_domains
from composite_store.cli.main import Subparsers
from composite_store.cli.output import add_output_arguments, emit, note
from composite_store.cli.target import open_target
from composite_store.errors import ValidationError, redact
from composite_store.schema import DOMAINS
from composite_store.store import Store

__all__ = ["add_parser", "render", "run"]

RICH_HINT = 'progress bars need rich: pip install "composite-store[cli]"'


def add_parser(subparsers: Subparsers) -> None:
    """Register ``composite-store copy``."""
    parser = subparsers.add_parser(
        "copy",
        help="copy domains from one store to another (SQLite -> PostgreSQL, ...)",
        description=(
            "Copy every record of the chosen domains (default: every domain both stores "
            "offer) from SRC to DST, in batches, keeping ids, timestamps and version history. "
            "Records DST already holds unchanged are skipped, so a rerun resumes an "
            "interrupted copy and otherwise writes nothing. Nothing is deleted; SRC is never "
            "written. Ends with a count check per table; exits 1 when a count differs. SRC "
            "and DST are store URLs or composite-store.toml files."
        ),
    )
    parser.add_argument("source", metavar="SRC_URL", help="where to read")
    parser.add_argument("destination", metavar="DST_URL", help="where to write")
    parser.add_argument(
        "--domain",
        action="append",
        choices=DOMAINS,
        metavar="DOMAIN",
        help=f"copy only this domain (repeatable); one of: {', '.join(DOMAINS)}",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=DEFAULT_BATCH,
        metavar="N",
        help=f"records per read and per write (default {DEFAULT_BATCH})",
    )
    add_output_arguments(parser, what="the report")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Copy; print progress and the report; 0 when every count check passed, else 1."""
    if args.batch < 1:
        raise ValidationError(f"--batch must be >= 1, got {args.batch}")
    if redact(args.source) == redact(args.destination):
        raise ValidationError("source and destination are the same store")
    src, dst = open_target(args.source), open_target(args.destination)
    note(f"copy {redact(args.source)} -> {redact(args.destination)}")
    report = asyncio.run(_main(src, dst, args.domain, args.batch))
    emit(args, text=render(report), data=as_json(report))
    return 0 if report.ok else 1


async def _main(
    src: Store, dst: Store, domains: Sequence[str] | None, batch: int
) -> CopyReport:
    try:
        with _progress_display() as on_progress:
            return await copy_domains(
                src, dst, domains=domains, batch=batch, on_progress=on_progress
            )
    finally:
        await src.close()
        await dst.close()


@contextmanager
def _progress_display() -> Iterator[Callable[[Progress], None]]:
    """A progress callback: rich bars (one per table) when rich is installed, else one line
    per finished table."""
    if importlib.util.find_spec("rich") is None:
        print(f"({RICH_HINT})", file=sys.stderr)
        yield _plain
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.progress import Progress as Bars

    # Progress is for the person at the terminal: stderr, so stdout carries only the report.
    bars = Bars(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("written {task.fields[written]}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    tasks: dict[tuple[str, str], TaskID] = {}

    def update(event: Progress) -> None:
        key = (event.domain, event.table)
        if key not in tasks:
            tasks[key] = bars.add_task(event.table, total=event.total,
                                       written=0)
        bars.update(tasks[key], completed=event.read, total=event.total, written=event.written)

    with bars:
        yield update


def _plain(event: Progress) -> None:
    if event.done:
        note(f"  {event.domain}.{event.table}: {event.read} read, {event.written} written")


def render(report: CopyReport) -> str:
    """The report: per table the counts on both sides, what was written and the check."""
    rows = [("table", "source", "destination", "written", "unchanged", "check")]
    for t in report.tables:
        check = "ok" if t.counts_match else f"MISMATCH ({t.destination_count - t.source_count:+d})"
        rows.append(
            (
                f"{t.domain}.{t.table}",
                str(t.source_count),
                str(t.destination_count),
                str(t.written),
                str(t.unchanged),
                check,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                  enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]
    verdict = (
        "every count matches"
        if report.ok
        else "some counts differ (the destination held other records, or a write failed)"
    )
    lines.append(
        f"{len(report.tables)} table(s), {report.written} record(s) written in "
        f"{report.seconds:.1f}s; {verdict}"
    )
    return "\n".join(lines)


def as_json(report: CopyReport) -> dict[str, Any]:
    """The report as JSON-ready data."""
    return {
        "ok": report.ok,
        "seconds": round(report.seconds, 3),
        "tables": [
            {
                "domain": t.domain,
                "table": t.table,
                "source": t.source_count,
                "destination": t.destination_count,
                "read": t.read,
                "written": t.written,
                "unchanged": t.unchanged,
                "counts_match": t.counts_match,
                "seconds": round(t.seconds, 3),
            }
            for t in report.tables
        ],
    }
