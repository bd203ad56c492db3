"""The ``composite-store`` command line: argument parsing and the registry of subcommands.

Each subcommand lives in its own module, listed in :data:`COMMANDS`. A command module exposes
one function, ``add_parser(subparsers)``, which adds its parser and sets its handler with
``parser.set_defaults(handler=fn)``; ``fn(args)`` returns the exit status. To add a command,
write the module and append its dotted name to :data:`COMMANDS`::

    def add_parser(subparsers: Subparsers) -> None:
        parser = subparsers.add_parser("check", help="...", description="...")
        parser.add_argument("url")
        parser.set_defaults(handler=run)

Exit statuses: 0 success, 1 a composite-store error (printed to stderr, credentials redacted),
2 a usage error (argparse), 130 interrupted, 141 the reader of its output went away (a
closed pipe, ``| head``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Protocol, TypeAlias

import composite_store
from composite_store.errors import CompositeStoreError, redact
from composite_store.registry import known_adapters

__all__ = ["COMMANDS", "Handler", "Subparsers", "build_parser", "main"]

#: Modules whose ``add_parser(subparsers)`` registers a subcommand, in help order.
COMMANDS: tuple[str, ...] = (
    "composite_store.cli.demo",
    "composite_store.cli.check",
    "composite_store.cli.copy",
    "composite_store.cli.migrate",
    "composite_store.cli.inspect",
)

#: The ``subparsers`` object handed to each command module's ``add_parser``.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
#: A subcommand's handler: takes the parsed arguments, returns the exit status.
Handler = Callable[[argparse.Namespace], int]

PROG = "composite-store"


class CommandModule(Protocol):
    """What a module listed in :data:`COMMANDS` provides."""

    def add_parser(self, subparsers: Subparsers) -> None: ...


def build_parser() -> argparse.ArgumentParser:
    """The full parser: global options, ``version``, then every module of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Persistent state for AI agents, each storage domain routed to its own backend."
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {composite_store.__version__}"
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    version = subparsers.add_parser(
        "version",
        help="print the version of composite-store and of its installed companion packages",
        description="Print the version of composite-store, Python, and which adapter "
        "packages are installed.",
    )
    version.set_defaults(handler=_version)
    for name in COMMANDS:
        module: CommandModule = importlib.import_module(name)
        module.add_parser(subparsers)
    return parser


def _version(args: argparse.Namespace) -> int:
    print(f"{PROG} {composite_store.__version__}")
    print(f"Python {platform.python_version()} ({sys.executable})")
    extras = sorted({k["extra"] for k in known_adapters.values() if k["extra"]} | {"conformance"})
    rows = []
    for extra in extras:
        dist = f"{PROG}-{extra}"
        try:
            rows.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            rows.append((dist, f'not installed (pip install "{PROG}[{extra}]")'))
    width = max(len(dist) for dist, _ in rows)
    for dist, state in rows:
        print(f"  {dist:<{width}}  {state}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except CompositeStoreError as exc:
        print(f"{PROG}: error: {redact(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`composite-store inspect URL | head`): stop quietly, as cat
        # does. What is left in stdout's buffer goes to /dev/null so that flushing it at exit
        # cannot raise again (the recipe of Python's signal module documentation).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, the status of a writer the pipe ended


if __name__ == "__main__":
    sys.exit(main())
