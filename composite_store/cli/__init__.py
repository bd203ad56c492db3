"""The ``composite-store`` command line: argument parsing and printing only; the work is done by
``composite_store.admin`` (and ``composite_store_conformance`` for ``check``)."""

from composite_store.cli.main import COMMANDS, Handler, Subparsers, build_parser, main

__all__ = ["COMMANDS", "Handler", "Subparsers", "build_parser", "main"]
