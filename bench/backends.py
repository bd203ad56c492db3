"""The backends ``bench`` can run here: how to build each contender for one of them."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.targets.base import Target
from bench.targets.library import LibraryTarget


@dataclass(frozen=True)
class Contenders:
    """The library and the raw driver for one engine.

    ``raw_schema_url`` names where the library must create the raw contender's tables first,
    so both run against the same DDL and indexes.
    """

    library: Target
    raw: Target
    raw_schema_url: str | None = None


@dataclass(frozen=True)
class Backend:
    """One engine and its DESIGN.md section 8 targets: (batch and writes, point reads)."""

    name: str
    targets: tuple[float, float]
    make: Callable[[Path], Contenders]
    note: str = ""


def _sqlite(scratch: Path) -> Contenders:
    from bench.targets.raw_sqlite import RawSqliteTarget

    return Contenders(
        library=LibraryTarget(f"sqlite:///{scratch / 'library.db'}"),
        raw=RawSqliteTarget(str(scratch / "raw.db")),
        raw_schema_url=f"sqlite:///{scratch / 'raw.db'}",
    )


BACKENDS: dict[str, Backend] = {
    "sqlite": Backend("sqlite", (0.5, 0.3), _sqlite, "raw: stdlib sqlite3, same pragmas"),
}


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="composite-store-bench-", dir=os.environ.get("TMPDIR")))
