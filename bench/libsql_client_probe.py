"""Why the libSQL adapter drives the ``libsql`` engine and not ``libsql-client`` (README).

``libsql-client``'s ``file:`` URLs run Python's stdlib ``sqlite3`` (its ``sqlite3_utils``
module), so an embedded file gets the machine's SQLite, not libSQL's: here 3.40, which has no
``jsonb()`` and cannot read the JSONB that Mastra writes; and every call hops to a thread.
The ``libsql`` package embeds the libSQL engine (SQLite 3.45). Run it beside either:

    uv run --with libsql-client==0.3.1 python bench/libsql_client_probe.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

READS = 2000


async def _client(path: Path) -> tuple[str, str, float]:
    import libsql_client

    async with libsql_client.create_client(f"file:{path}") as client:
        version = (await client.execute("SELECT sqlite_version()")).rows[0][0]
        try:
            jsonb = (await client.execute("SELECT json(jsonb('{\"a\":1}'))")).rows[0][0]
        except Exception as exc:  # noqa: BLE001 - the finding is the error
            jsonb = f"error: {exc}"
        await client.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT)")
        await client.batch([("INSERT INTO t (x) VALUES (?)", [f"v{i}"]) for i in range(READS)])
        started = time.perf_counter()
        for i in range(READS):
            await client.execute("SELECT x FROM t WHERE id = ?", [i + 1])
        return str(version), str(jsonb), time.perf_counter() - started


def _engine(path: Path) -> tuple[str, str, float]:
    import libsql

    conn = libsql.connect(str(path))
    version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    jsonb = conn.execute("SELECT json(jsonb('{\"a\":1}'))").fetchone()[0]
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT)")
    conn.executemany("INSERT INTO t (x) VALUES (?)", [(f"v{i}",) for i in range(READS)])
    conn.commit()
    started = time.perf_counter()
    for i in range(READS):
        conn.execute("SELECT x FROM t WHERE id = ?", (i + 1,)).fetchone()
    return str(version), str(jsonb), time.perf_counter() - started


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    rows = [
        ("libsql-client 0.3.1, file: URL", *asyncio.run(_client(folder / "client.db"))),
        ("libsql engine", *_engine(folder / "engine.db")),
    ]
    print(f"| driver | SQLite | json(jsonb(...)) | {READS} point reads |")
    print("|---|---|---|---:|")
    for name, version, jsonb, seconds in rows:
        print(f"| {name} | {version} | {jsonb} | {seconds * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
