"""``python -m bench.opening``: what opening a store costs, for a store opened per request.

    uv run python -m bench.opening                      # sqlite, postgres, mariadb; 15 opens each
    uv run python -m bench.opening --backend sqlite --reps 5

For each backend, the time from ``open_store(url)`` to the end of its ``init()`` (connecting,
creating what is missing, checking the schema's versions), and the statements ``init()`` sent:

- ``tables present``: a database that has its tables (a store opened per request or per
  worker pays this each time);
- ``new``: a database with none (a new SQLite file, a new PostgreSQL schema or MariaDB
  database), as a test or a tenant's first store finds it.

Each open is a new store in this process; ``close()`` is not timed. Servers are found as the
tests find them (``bench.backends``), in throwaway namespaces dropped afterwards; a backend
that cannot be reached is skipped with its reason. The median and the lowest time are
reported (milliseconds). There is no raw contender: the figure is the library's own cost,
compared between commits (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa

import composite_store as cs
from bench.backends import _server, scratch_dir
from composite_store.sql.store import SqlStore

BACKENDS = ("sqlite", "postgres", "mariadb")


async def _open(url: str) -> tuple[float, int]:
    """Open a store of ``url`` and run its ``init()``: the seconds it took and the statements
    ``init()`` sent; the store is closed afterwards, untimed."""
    started = time.perf_counter()
    store = cs.open_store(url)
    sent = 0

    def count(*_args: Any) -> None:
        nonlocal sent
        sent += 1

    engine = store.database.engine if isinstance(store, SqlStore) else None
    sync_engine = getattr(engine, "sync_engine", engine)
    if sync_engine is not None:
        sa.event.listen(sync_engine, "before_cursor_execute", count)
    await store.init()
    elapsed = time.perf_counter() - started
    await store.close()
    return elapsed, sent


Maker = Callable[[], Awaitable[str]]


async def _new_databases(backend: str) -> tuple[Maker, Callable[[], Awaitable[None]]]:
    """A maker of new empty databases of ``backend`` (their store URLs) and the cleanup that
    drops every one it made."""
    made: list[str] = []
    if backend == "sqlite":
        scratch = scratch_dir()
        numbers = itertools.count()

        async def new_file() -> str:
            return f"sqlite:///{scratch / f'db{next(numbers)}.db'}"

        async def remove_files() -> None:
            shutil.rmtree(scratch, ignore_errors=True)

        return new_file, remove_files
    provision: Any
    if backend == "postgres":
        import composite_store_postgres.provision as provision
    else:
        import composite_store_mysql.provision as provision
    server = await asyncio.to_thread(_server, backend)

    async def new_namespace() -> str:
        name: str = await provision.create_namespace(server)
        made.append(name)
        url: str = provision.store_url(server, name)
        return url

    async def drop_namespaces() -> None:
        for name in made:
            await provision.drop_namespace(server, name)

    return new_namespace, drop_namespaces


async def measure(backend: str, reps: int) -> list[dict[str, Any]]:
    """The two rows of ``backend``: tables present, and new."""
    new_database, cleanup = await _new_databases(backend)
    try:
        present = await new_database()
        await _open(present)  # creates the tables; the process's imports are warm after it
        rows = []
        for case in ("tables present", "new"):
            times, counts = [], []
            for _ in range(reps):
                url = present if case == "tables present" else await new_database()
                elapsed, sent = await _open(url)
                times.append(elapsed * 1e3)
                counts.append(sent)
            rows.append({
                "backend": backend, "case": case, "median_ms": statistics.median(times),
                "min_ms": min(times), "statements": statistics.median(counts),
            })
        return rows
    finally:
        await cleanup()


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | database | median ms | lowest ms | statements |",
        "|---|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['backend']} | {r['case']} | {r['median_ms']:.1f} | {r['min_ms']:.1f} | "
        f"{r['statements']:.0f} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--reps", type=int, default=15, help="opens of each kind (default 15)")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for backend in args.backend:
        try:
            rows += asyncio.run(measure(backend, args.reps))
        except (ConnectionError, ImportError) as exc:
            print(f"{backend}: skipped ({exc})", file=sys.stderr)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
