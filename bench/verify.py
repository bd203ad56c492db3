"""``python -m bench.verify``: each raw contender stores exactly what the library stores.

    uv run python -m bench.verify                  # every reachable backend
    uv run python -m bench.verify --backend redis

The raw baselines restate the library's physical layout by hand (columns and shadow
timestamps, Redis keys and index entries, MongoDB documents), so they can drift when an
adapter changes. This runs the same small workload through both contenders of a backend, reads
back everything each one stored, and reports every difference: tables and rows (every
physical column), keys with their types and values, documents. Timestamps taken from the clock
during the run ("now": updatedAt bumps, createdAt of snapshots) are masked, since the two runs
cannot share them; every other value must be equal. Last, it compares what the two
contenders' message reads return (W2's newest 20, W2i's page with a window around each
message): a contender that reads in fewer statements must still read the same messages.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from bench import workloads as w
from bench.backends import BACKENDS, Contenders, scratch_dir
from bench.targets.base import Target
from bench.targets.library import LibraryTarget

#: Small, but every write path runs: inserts and updates of working memory and snapshots.
SIZES = replace(
    w.QUICK, threads=3, messages_per_thread=12, batch=5, reads=5, page_threads=60,
    page_size=20, page_passes=1, wm_ops=120, snapshots=5, traces=3, spans_per_trace=4,
)
TABLES = ("threads", "messages", "resources", "workflow_snapshot", "ai_spans")
_ISO = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")

State = dict[str, list[str]]


async def fill(t: Target) -> None:
    await t.reset()
    await w.w1_write(t, SIZES)
    await w.w2i_window(t, SIZES, random.Random(1))
    await w.w3_pages(t, SIZES)
    await w.w4_working_memory(t, SIZES)
    await w.w5_snapshots(t, SIZES)
    await w.w5_snapshots(t, SIZES)  # the same runs again: the update path
    if t.supports_spans:
        await w.w6_traces(t, SIZES)


async def reads(t: Target) -> list[str]:
    """What the contender's message reads return on the filled store (W2 and W2i): each
    thread's newest 5 (fewer than its messages, so windows reach past the page), alone and
    with a window around each of its messages (2 before, 2 after)."""
    found = []
    for k in range(SIZES.threads):
        tid = f"t{k:04d}"
        found.append(f"{tid} newest: {await t.newest(tid, 5)}")
        for i in range(SIZES.messages_per_thread):
            mid = f"{tid}-m{i:05d}"
            found.append(f"{mid} window: {await t.newest_with_window(tid, 5, mid, 2, 2)}")
    return found


class Masker:
    """Replaces instants at or after ``since`` (taken from the clock during the run)."""

    def __init__(self, since: datetime) -> None:
        self.since = since

    def value(self, v: Any) -> str:
        if isinstance(v, datetime):
            moment = v if v.tzinfo else v.replace(tzinfo=UTC)
            return "<now>" if moment >= self.since else moment.isoformat()
        text = repr(v)
        return _ISO.sub(self._iso, text) if isinstance(v, str | dict | list) else text

    def score(self, ms: float) -> str:
        return "<now>" if ms >= self.since.timestamp() * 1000 else repr(ms)

    def _iso(self, m: re.Match[str]) -> str:
        found = datetime.fromisoformat(m.group().replace(" ", "T"))
        return self.value(found if found.tzinfo else found.replace(tzinfo=UTC))


async def sql_state(target: LibraryTarget, mask: Masker) -> State:
    """Every row of every workload table, all physical columns, read untyped."""
    db = target.store.memory.db  # type: ignore[attr-defined]

    def read(conn: Any) -> State:
        state: State = {}
        for name in TABLES:
            tbl = db.tables[name]
            raw = sa.table(tbl.name, *[sa.column(c.name) for c in tbl.columns], schema=tbl.schema)
            rows = conn.execute(sa.select(raw)).all()
            state[name] = sorted(
                " | ".join(f"{c.name}={mask.value(v)}" for c, v in zip(tbl.columns, row,
                                                                           strict=True))
                for row in rows
            )
        return state

    state: State = await db.run(read)
    return state


async def redis_state(client: Any, prefix: str, mask: Masker) -> State:
    state: State = {}
    async for key in client.scan_iter(match=f"{prefix}*", count=1000):
        if key.endswith(":catalog"):
            continue
        kind = await client.type(key)
        if kind == "hash":
            found = await client.hgetall(key)
            value = sorted(f"{f}={mask.value(v)}" for f, v in found.items())
        elif kind == "zset":
            found = await client.zrange(key, 0, -1, withscores=True)
            value = [f"{m!r}@{mask.score(s)}" for m, s in found]
        else:
            value = [mask.value(await client.get(key))]
        state[f"{kind} {key.removeprefix(prefix)}"] = value
    return state


async def mongo_state(db: Any, mask: Masker) -> State:
    state: State = {}
    for name in TABLES:
        docs = await db[f"mastra_{name}"].find({}, {"_id": False}).to_list()
        state[name] = sorted(
            " | ".join(f"{k}={mask.value(v)}" for k, v in sorted(d.items())) for d in docs
        )
    return state


async def states(name: str, c: Contenders, raw_schema: LibraryTarget | None,
                 mask: Masker) -> tuple[State, State]:
    library = c.library
    assert isinstance(library, LibraryTarget)
    if name == "redis":
        raw: Any = c.raw
        prefix = library.store.memory.keys.prefix  # type: ignore[attr-defined]
        return await redis_state(raw.redis, prefix, mask), await redis_state(raw.redis, raw.p,
                                                                               mask)
    if name == "mongodb":
        lib_db = library.store.memory.conn.db  # type: ignore[attr-defined]
        raw_db = c.raw.db  # type: ignore[attr-defined]
        return await mongo_state(lib_db, mask), await mongo_state(raw_db, mask)
    assert raw_schema is not None
    return await sql_state(library, mask), await sql_state(raw_schema, mask)


async def verify(name: str) -> list[str]:
    """The differences between what the two contenders of backend ``name`` stored."""
    scratch = scratch_dir()
    try:
        c = await BACKENDS[name].make(scratch)
        raw_schema = LibraryTarget(c.raw_schema_url) if c.raw_schema_url else None
        try:
            if raw_schema is not None:
                await raw_schema.open()
            await c.library.open()
            await c.raw.open()
            c.raw.supports_spans = c.library.supports_spans
            mask = Masker(datetime.now(UTC) - timedelta(seconds=5))
            await fill(c.library)
            await fill(c.raw)
            lib, raw = await states(name, c, raw_schema, mask)
            lib["reads"], raw["reads"] = await reads(c.library), await reads(c.raw)
        finally:
            await c.raw.close()
            await c.library.close()
            if raw_schema is not None:
                await raw_schema.close()
            if c.cleanup is not None:
                await c.cleanup()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    problems = []
    for key in sorted(set(lib) | set(raw)):
        a, b = lib.get(key), raw.get(key)
        if a is None or b is None:
            problems.append(f"{key}: only the {'library' if b is None else 'raw'} wrote it")
        elif a != b:
            diff = next((x, y) for x, y in zip(a + [""] * len(b), b + [""] * len(a),
                                              strict=False) if x != y)
            problems.append(f"{key}: library {diff[0][:300]!r} != raw {diff[1][:300]!r} "
                            f"({len(a)} vs {len(b)} entries)")
    if not lib:
        problems.append("nothing was stored")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=sorted(BACKENDS))
    args = parser.parse_args(argv)
    failed = False
    for name in args.backend or list(BACKENDS):
        try:
            problems = asyncio.run(verify(name))
        except (ConnectionError, OSError, ImportError) as exc:
            print(f"{name}: skipped ({type(exc).__name__}: {exc})")
            continue
        failed = failed or bool(problems)
        print(f"{name}: {'same stored state' if not problems else 'DIFFERENT'}")
        for line in problems:
            print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
