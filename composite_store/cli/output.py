"""How every subcommand hands out its report: one rule for ``--json`` and ``--output``.

- stdout carries the text report, except with ``--json`` alone: then the JSON report and
  nothing else (for ``| jq``);
- ``--output FILE`` writes the report to FILE, as JSON with ``--json``, else as text, and
  says so on stderr; stdout still carries the text report (a CI log shows it).

Progress and notes always go to stderr, so stdout can be piped into ``jq`` or a file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_output_arguments", "emit", "note"]


def add_output_arguments(parser: argparse.ArgumentParser, *, what: str) -> None:
    """Add ``--json`` and ``--output FILE`` to a subcommand's parser."""
    parser.add_argument(
        "--json", action="store_true", help=f"{what} as JSON (on stdout, or in --output)"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help=f"also write {what} to FILE (JSON with --json)"
    )


def emit(args: argparse.Namespace, *, text: str, data: Any) -> None:
    """Hand out a report as ``args.json`` and ``args.output`` say."""
    body = json.dumps(data, indent=2, ensure_ascii=False) if args.json else text
    if args.output:
        Path(args.output).write_text(body + "\n", encoding="utf-8")
        print(text)
        note(f"wrote the report to {args.output}")
    else:
        print(body)


def note(message: str) -> None:
    """A line for the person at the terminal (stderr), never part of the report."""
    print(message, file=sys.stderr)
