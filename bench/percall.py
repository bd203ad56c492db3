"""``python -m bench.percall``: client CPU and wall time per call on MariaDB/MySQL, library vs raw.

    uv run python -m bench.percall --url mysql://root@127.0.0.1:3306/ --calls 200
    uv run python -m bench.percall --url ... --profile "spans 10"   # cProfile of the library

Each operation runs ``--calls`` times on each contender, interleaved in one process (who goes
first alternating), for ``--rounds`` rounds; the figures are the best round's, per call:
``time.process_time`` (this process's CPU: the library's own cost, and the driver's) and wall
time. Contenders: the library (``bench.targets.library``), the raw asyncmy contender as bench/
runs it (``bench.targets.raw_mysql``, asyncmy's defaults), and that contender with asyncmy's
statement cache on (``stmt_cache_size``, as the library's engines connect): what the library
costs over the same driver settings. Each gets a scratch database of its own, dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time
from collections.abc import Awaitable, Callable
from typing import Any

from composite_store_mysql.dialect import STATEMENT_CACHE
from composite_store_mysql.provision import create_namespace, drop_namespace, store_url

from bench import workloads as w
from bench.targets.base import Target
from bench.targets.library import LibraryTarget
from bench.targets.raw_mysql import RawMysqlTarget

Op = Callable[[Target, int], Awaitable[Any]]
SPANS = [s for n in range(20) for s in w.trace_spans(n, 10)]
TRACES = sorted({s.trace_id for s in SPANS})


def _tid(i: int) -> str:
    return f"t{i % 20:04d}"


OPS: dict[str, Op] = {
    "thread save": lambda t, i: t.save_thread(f"s{i % 50}", "bench-user", w.EPOCH),
    "msgs 10": lambda t, i: t.save_messages(w.thread_messages(_tid(i), 10, (i % 5) * 10)),
    "newest 20": lambda t, i: t.newest(_tid(i), 20),
    "window": lambda t, i: t.newest_with_window(_tid(i), 20, f"{_tid(i)}-m{i % 50:05d}", 2, 2),
    "page 50": lambda t, i: t.thread_page("bench-user", 0, 50),
    "wm write": lambda t, i: t.update_working_memory("u1", f"y{i}" * 300),
    "wm read": lambda t, i: t.get_working_memory("u1"),
    "snap save": lambda t, i: t.save_snapshot("wf", f"r{i % 50}", w.snapshot(i)),
    "snap load": lambda t, i: t.load_snapshot("wf", f"r{i % 50}"),
    "spans 10": lambda t, i: t.save_spans(SPANS[(i % 20) * 10 : (i % 20) * 10 + 10]),
    "trace read": lambda t, i: t.read_trace(TRACES[i % 20]),
}


async def _fill(t: Target) -> None:
    await t.reset()
    for n in range(20):
        await t.save_thread(_tid(n), "bench-user", w.EPOCH)
        await t.save_messages(w.thread_messages(_tid(n), 50))
    for i in range(50):
        await t.save_snapshot("wf", f"r{i}", w.snapshot(i))
    for n in range(20):
        await t.save_spans(w.trace_spans(n, 10))
    await t.update_working_memory("u1", "x" * 1000)


async def main(url: str, calls: int, rounds: int, profile: str | None) -> None:
    names = {"library": "percall_lib", "raw": "percall_raw", "raw+cache": "percall_rawc"}
    for name in names.values():
        await drop_namespace(url, name)
        await create_namespace(url, name)
    for name in ("percall_raw", "percall_rawc"):  # the raw contenders' tables, as bench/ makes them
        schema = LibraryTarget(store_url(url, name))
        await schema.open()
        await schema.close()
    lib = LibraryTarget(store_url(url, names["library"]))
    raw = RawMysqlTarget(store_url(url, names["raw"]))
    cached = RawMysqlTarget(store_url(url, names["raw+cache"]))
    cached.options["stmt_cache_size"] = STATEMENT_CACHE
    contenders: dict[str, Target] = {"library": lib, "raw": raw, "raw+cache": cached}
    await lib.open()
    for t in (raw, cached):
        await t.open()
        t.supports_spans = lib.supports_spans
    try:
        for t in contenders.values():
            await _fill(t)
        best: dict[tuple[str, str], tuple[float, float]] = {}
        profiler = cProfile.Profile() if profile else None
        for rnd in range(rounds):
            for op_name, op in OPS.items():
                if profile and op_name != profile:
                    continue
                order = list(contenders.items())
                for who, t in order if rnd % 2 == 0 else reversed(order):
                    if profiler is not None and who == "library":
                        profiler.enable()
                    cpu, wall = time.process_time(), time.perf_counter()
                    for i in range(calls):
                        await op(t, i)
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    if profiler is not None and who == "library":
                        profiler.disable()
                    figures = (cpu / calls * 1e6, wall / calls * 1e6)
                    prev = best.get((op_name, who))
                    best[(op_name, who)] = figures if prev is None else min(prev, figures)
        print("us per call, best round: CPU / wall")
        print(f"| op | {' | '.join(contenders)} | library CPU over raw+cache |")
        print(f"|---|{'---:|' * (len(contenders) + 1)}")
        for op_name in OPS:
            if (op_name, "library") not in best:
                continue
            cells = [
                f"{best[(op_name, c)][0]:.0f} / {best[(op_name, c)][1]:.0f}" for c in contenders
            ]
            extra = best[(op_name, "library")][0] - best[(op_name, "raw+cache")][0]
            print(f"| {op_name} | {' | '.join(cells)} | {extra:+.0f} |")
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    finally:
        for t in contenders.values():
            await t.close()
        for name in names.values():
            await drop_namespace(url, name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a MariaDB/MySQL server URL (no database)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--profile", choices=sorted(OPS), help="cProfile the library on this op")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.calls, args.rounds, args.profile))
