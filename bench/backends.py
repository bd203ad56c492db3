"""The backends ``bench`` can run: how to build the two contenders for each of them.

Servers are found the way the test suite finds them (``tests/support/servers``: the
``COMPOSITE_STORE_TEST_<BACKEND>_URL`` variable, else the local server, else a throwaway one),
and each contender gets a throwaway namespace of its own (schema, database or key prefix),
dropped afterwards. A backend that cannot be reached raises ``ConnectionError`` (with the
reason) or ``ImportError`` (its driver is missing), and the run skips it.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from bench.targets.base import Target
from bench.targets.library import LibraryTarget
from bench.workloads import QUICK, Sizes

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Contenders:
    """The library and the raw driver for one engine.

    ``raw_schema_url`` names where the library must create the raw contender's tables first,
    so both run against the same DDL and indexes; ``cleanup`` drops what was provisioned;
    ``note`` labels every row of the run in the report (what bounds its ratios). A server too
    slow for the full run caps the sizes (``caps``: ``Sizes`` field -> largest value) and the
    repetitions (``max_reps``); the report's note says so.
    """

    library: Target
    raw: Target
    raw_schema_url: str | None = None
    cleanup: Callable[[], Awaitable[None]] | None = None
    note: str = ""
    caps: Mapping[str, int] = field(default_factory=dict)
    max_reps: int | None = None


@dataclass(frozen=True)
class Backend:
    """One engine, its DESIGN.md section 8 targets (batch and writes, point reads) and what
    its raw contender is."""

    name: str
    targets: tuple[float, float]
    make: Callable[[Path], Awaitable[Contenders]]
    raw: str


def _server(module: str) -> str:
    """The admin URL of the server the tests would use (``tests/support/servers/<module>.py``), or
    ``ConnectionError`` saying why there is none. Blocking: call it in a thread."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    found = importlib.import_module(f"tests.support.servers.{module}").find()
    if isinstance(found, str):
        raise ConnectionError(found)
    url: str = found.url
    return url


async def _namespaces(create: Callable[[str], Awaitable[str]],
                      drop: Callable[[str, str], Awaitable[object]],
                      url: str) -> tuple[str, str, Callable[[], Awaitable[None]]]:
    """Two fresh namespaces (library, raw) on the server ``url`` and their cleanup."""
    library = await create(url)
    try:
        raw = await create(url)
    except BaseException:
        await drop(url, library)
        raise

    async def cleanup() -> None:
        for name in (library, raw):
            await drop(url, name)

    return library, raw, cleanup


async def _sqlite(scratch: Path) -> Contenders:
    from bench.targets.raw_sqlite import RawSqliteTarget

    return Contenders(
        library=LibraryTarget(f"sqlite:///{scratch / 'library.db'}"),
        raw=RawSqliteTarget(str(scratch / "raw.db")),
        raw_schema_url=f"sqlite:///{scratch / 'raw.db'}",
    )


async def _libsql(scratch: Path) -> Contenders:
    import composite_store_libsql  # noqa: F401 - ImportError when the adapter is missing

    from bench.targets.raw_sqlite import RawSqliteTarget

    return Contenders(
        library=LibraryTarget(f"libsql:///{scratch / 'library.db'}"),
        raw=RawSqliteTarget(str(scratch / "raw.db"), driver="libsql"),
        raw_schema_url=f"libsql:///{scratch / 'raw.db'}",
    )


async def _postgres(scratch: Path) -> Contenders:
    from composite_store_postgres.provision import create_namespace, drop_namespace, store_url

    from bench.targets.raw_postgres import RawPostgresTarget

    url = await asyncio.to_thread(_server, "postgres")
    library, raw, cleanup = await _namespaces(create_namespace, drop_namespace, url)
    return Contenders(
        library=LibraryTarget(store_url(url, library)),
        raw=RawPostgresTarget(url, raw),
        raw_schema_url=store_url(url, raw),
        cleanup=cleanup,
    )


async def _mariadb(scratch: Path) -> Contenders:
    from composite_store_mysql.provision import create_namespace, drop_namespace, store_url

    from bench.targets.raw_mysql import RawMysqlTarget

    url = await asyncio.to_thread(_server, "mariadb")
    library, raw, cleanup = await _namespaces(create_namespace, drop_namespace, url)
    return Contenders(
        library=LibraryTarget(store_url(url, library)),
        raw=RawMysqlTarget(store_url(url, raw)),
        raw_schema_url=store_url(url, raw),
        cleanup=cleanup,
    )


async def _redis(scratch: Path) -> Contenders:
    from composite_store_redis.provision import create_namespace, drop_namespace, store_url

    from bench.targets.raw_redis import RawRedisTarget

    url = await asyncio.to_thread(_server, "redis")
    library, raw, cleanup = await _namespaces(create_namespace, drop_namespace, url)
    # The raw contender needs no catalog: its keys are written by hand.
    return Contenders(
        library=LibraryTarget(store_url(url, library)),
        raw=RawRedisTarget(url, raw),
        cleanup=cleanup,
    )


async def _mongodb(scratch: Path) -> Contenders:
    from composite_store_mongodb.connection import parse_url
    from composite_store_mongodb.provision import create_namespace, drop_namespace, store_url
    from pymongo import AsyncMongoClient

    from bench.targets.raw_mongodb import RawMongoTarget

    url = await asyncio.to_thread(_server, "mongodb")
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(parse_url(url)[0])
    try:
        info = await client.admin.command("buildInfo")
    finally:
        await client.close()
    library, raw, cleanup = await _namespaces(create_namespace, drop_namespace, url)
    # Servers close connections that stay idle too long (SecantusDB: after 300 s), and one
    # contender idles for a whole repetition of the other: retire idle pooled connections
    # first, on both sides. No $jsonSchema validators: the default for users.
    url = f"{url}{'&' if '?' in url else '?'}maxIdleTimeMS=60000"
    plain = f"{url}&validator=false"
    note, caps, max_reps = "", {}, None
    if "secantusVersion" in info:
        # The tests' server: SecantusDB, written in Python. It sorts a thread to read its
        # newest messages (about a second for 10,000), and at full sizes it is the one busy
        # process for over half an hour (25 minutes of server CPU did not finish one
        # repetition), so it runs the quick sizes, fewer W2L reads and 3 repetitions.
        note = (f"bound by the test server's own speed (SecantusDB {info['secantusVersion']}, "
                "a Python implementation)")
        caps = {
            f.name: getattr(QUICK, f.name)
            for f in fields(Sizes)
            if getattr(QUICK, f.name) < getattr(Sizes(), f.name)
        }
        caps["long_reads"] = 20
        max_reps = 3
    return Contenders(
        library=LibraryTarget(store_url(plain, library)),
        raw=RawMongoTarget(parse_url(url)[0], raw),
        raw_schema_url=store_url(plain, raw),
        cleanup=cleanup,
        note=note,
        caps=caps,
        max_reps=max_reps,
    )


BACKENDS: dict[str, Backend] = {
    "sqlite": Backend("sqlite", (0.5, 0.3), _sqlite, "stdlib sqlite3, same pragmas"),
    "libsql": Backend("libsql", (0.5, 0.3), _libsql, "libsql driver, same pragmas"),
    "postgres": Backend("postgres", (0.8, 0.6), _postgres, "psycopg 3 AsyncConnection"),
    "mariadb": Backend("mariadb", (0.8, 0.6), _mariadb, "asyncmy"),
    "redis": Backend("redis", (0.8, 0.6), _redis, "redis-py asyncio, pipelines + scripts"),
    "mongodb": Backend("mongodb", (0.8, 0.6), _mongodb, "pymongo AsyncMongoClient"),
}


def scratch_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="composite-store-bench-", dir=os.environ.get("TMPDIR")))
