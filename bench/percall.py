"""``python -m bench.percall``: client CPU and wall time per call, library vs raw, on
MariaDB/MySQL or PostgreSQL.

    uv run python -m bench.percall --url mysql://root@127.0.0.1:3306/ --calls 200
    uv run python -m bench.percall --url postgresql://postgres@127.0.0.1:5432/test
    uv run python -m bench.percall --url ... --profile "spans 10"   # cProfile of the library

Each operation runs ``--calls`` times on each contender, interleaved in one process (who goes
first alternating), for ``--rounds`` rounds; the figures are the best round's, per call:
``time.process_time`` (this process's CPU: the library's own cost, and the driver's) and wall
time. Contenders: the library (``bench.targets.library``) and the raw contender as bench/
runs it. On MariaDB/MySQL that is ``bench.targets.raw_mysql`` with asyncmy's defaults, plus the
same contender with asyncmy's statement cache on (``stmt_cache_size``, as the library's
engines connect): what the library costs over the same driver settings. On PostgreSQL it is
``bench.targets.raw_postgres``. Each contender gets a scratch database (schema) of its own,
dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench import workloads as w
from bench.targets.base import Target
from bench.targets.library import LibraryTarget

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


def _raw_contenders(url: str) -> tuple[Any, dict[str, Target]]:
    """The provisioning module of ``url``'s backend and its raw contenders by name, each on
    the scratch namespace ``percall_<name>``."""
    if url.startswith(("postgresql", "postgres")):
        from composite_store_postgres import provision as pg

        from bench.targets.raw_postgres import RawPostgresTarget

        return pg, {"raw": RawPostgresTarget(url, "percall_raw")}
    from composite_store_mysql import provision as my
    from composite_store_mysql.dialect import STATEMENT_CACHE

    from bench.targets.raw_mysql import RawMysqlTarget

    raw = RawMysqlTarget(my.store_url(url, "percall_raw"))
    cached = RawMysqlTarget(my.store_url(url, "percall_rawc"))
    cached.options["stmt_cache_size"] = STATEMENT_CACHE
    return my, {"raw": raw, "raw+cache": cached}


async def main(url: str, calls: int, rounds: int, profile: str | None) -> None:
    provision, raws = _raw_contenders(url)
    names = {"library": "percall_lib", "raw": "percall_raw", "raw+cache": "percall_rawc"}
    names = {who: n for who, n in names.items() if who == "library" or who in raws}
    for name in names.values():
        await provision.drop_namespace(url, name)
        await provision.create_namespace(url, name)
    for who in raws:  # the raw contenders' tables, as bench/ makes them
        schema = LibraryTarget(provision.store_url(url, names[who]))
        await schema.open()
        await schema.close()
    lib = LibraryTarget(provision.store_url(url, names["library"]))
    contenders: dict[str, Target] = {"library": lib, **raws}
    baseline = "raw+cache" if "raw+cache" in raws else "raw"
    await lib.open()
    for t in raws.values():
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
        print(f"| op | {' | '.join(contenders)} | library CPU over {baseline} |")
        print(f"|---|{'---:|' * (len(contenders) + 1)}")
        for op_name in OPS:
            if (op_name, "library") not in best:
                continue
            cells = [
                f"{best[(op_name, c)][0]:.0f} / {best[(op_name, c)][1]:.0f}" for c in contenders
            ]
            extra = best[(op_name, "library")][0] - best[(op_name, baseline)][0]
            print(f"| {op_name} | {' | '.join(cells)} | {extra:+.0f} |")
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    finally:
        for t in contenders.values():
            await t.close()
        for name in names.values():
            await provision.drop_namespace(url, name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", required=True,
        help="a MariaDB/MySQL server URL (no database), or a PostgreSQL database URL",
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--profile", choices=sorted(OPS), help="cProfile the library on this op")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.calls, args.rounds, args.profile))
