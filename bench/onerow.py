"""``python -m bench.onerow``: where a one-row call's time goes on PostgreSQL: the client's CPU
(user and system) and the wall time per call, the part of that CPU spent awaiting the driver
(its libpq calls and the event loop's turns for the reply: the rest is the library's own
Python, run as a real call runs it, between waits), and with ``--stub`` the library's own
Python alone (the driver replaced by a stub that answers at once, every call hot in the
caches).

    uv run python -m bench.onerow --url postgresql://postgres@127.0.0.1:5432/test
    uv run python -m bench.onerow --url ... --stub                 # the library's Python only
    uv run python -m bench.onerow --url ... --snapshot /tmp/fx/snapshot_template.json
    taskset -c 0 uv run python -m bench.onerow --url ...          # pinned, as docs/benchmarks.md

Calls, as the peer harness makes them (W5 save, W1 thread creation, W4 read):
``persist_workflow_snapshot`` of a ~5 KB snapshot (``bench.workloads.snapshot``, or the JSON
object in ``--snapshot``, its ``runId`` set per call), ``save_thread`` of a new thread, and
``get_resource_by_id`` of a resource holding 1 KB of working memory. Each runs ``--calls``
times per repetition, in a scratch schema dropped after. ``bench/onerow_mastra.mjs`` makes
the same calls through Mastra's ``@mastra/pg`` (docs/benchmarks.md, "Session 2026-12-07
(second)"). No timing is asserted anywhere: the figures are for reading side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import composite_store as cs
from bench import workloads as w


def _stub(real: Any) -> Any:
    """The driver of ``--stub``: a write is answered at once (one row counted); a read with the
    reply the real driver gave the same statement and values first (it must find its row)."""
    replies: dict[tuple[str, tuple[Any, ...]], Any] = {}

    async def answer(driver: Any, sql: str, bound: Any, fetch: bool) -> Any:
        if not fetch:
            return None, 1
        key = (sql, tuple(bound))
        if key not in replies:
            replies[key] = await real(driver, sql, bound, fetch)
        return replies[key]

    return answer


def _timed(call: Any, spent: list[float]) -> Any:
    """``call`` (the driver executor), adding the CPU time of each await of it to ``spent[0]``."""

    async def timed(driver: Any, sql: str, bound: Any, fetch: bool) -> Any:
        start = time.thread_time()
        try:
            return await call(driver, sql, bound, fetch)
        finally:
            spent[0] += time.thread_time() - start

    return timed


async def run(
    url: str,
    calls: int,
    reps: int,
    stub: bool,
    template: dict[str, Any] | None,
    schema: str = "bench_onerow",
) -> None:
    from composite_store_postgres import PostgresStore, provision

    await provision.drop_namespace(url, schema)
    await provision.create_namespace(url, schema)
    store = PostgresStore(provision.store_url(url, schema))
    try:
        await store.init()
        memory, workflows = store.memory, store.workflows
        now = datetime.now(UTC)
        await memory.save_resource(
            resource=cs.Resource(
                id="res-1",
                working_memory="# Working memory\n" + "x" * 1007,
                metadata={},
                created_at=now,
                updated_at=now,
            )
        )
        db = memory.db
        if stub:
            db._direct = _stub(db._direct)  # the stub is the point of --stub
        # CPU spent awaiting the driver (time.thread_time: this thread's user + system), the
        # stub included: the event loop runs nothing else meanwhile.
        in_driver = [0.0]
        db._direct = _timed(db._direct, in_driver)
        serial = itertools.count()

        def snapshot(i: int) -> dict[str, Any]:
            if template is None:
                return w.snapshot(i)
            return {**template, "runId": f"run-{i:06d}"}

        async def save() -> None:
            i = next(serial)
            await workflows.persist_workflow_snapshot(
                workflow_name=f"wf-{i % 5}", run_id=f"run-{i:06d}", snapshot=snapshot(i)
            )

        async def thread() -> None:
            i = next(serial)
            await memory.save_thread(
                thread=cs.Thread(id=f"t-{i}", resource_id="u", title=f"title {i}", metadata={})
            )

        async def read() -> None:
            got = await memory.get_resource_by_id(resource_id="res-1")
            assert got is not None and got.working_memory.startswith("# Working memory")

        ops: dict[str, Callable[[], Awaitable[None]]] = {
            "snapshot save": save,
            "thread save": thread,
            "working-memory read": read,
        }
        for op in ops.values():  # warm: statements prepared, caches filled
            for _ in range(50):
                await op()
        print(f"per call, {calls} calls a repetition{' (driver stubbed)' if stub else ''}")
        print("| call | rep | user us | system us | wall us | of the CPU, awaiting the driver us |")
        print("|---|---:|---:|---:|---:|---:|")
        for rep in range(1, reps + 1):
            for name, op in ops.items():
                in_driver[0] = 0.0
                before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
                for _ in range(calls):
                    await op()
                after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - start
                user = (after.ru_utime - before.ru_utime) / calls * 1e6
                system = (after.ru_stime - before.ru_stime) / calls * 1e6
                driver = in_driver[0] / calls * 1e6
                print(
                    f"| {name} | {rep} | {user:.1f} | {system:.1f} | {wall / calls * 1e6:.0f} "
                    f"| {driver:.1f} |"
                )
    finally:
        await store.close()
        await provision.drop_namespace(url, schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL database URL")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--stub", action="store_true", help="the library's Python alone")
    parser.add_argument("--snapshot", type=Path, help="a JSON object to save as the snapshot")
    parser.add_argument("--schema", default="bench_onerow", help="the scratch schema (dropped)")
    args = parser.parse_args(argv)
    template = json.loads(args.snapshot.read_text()) if args.snapshot else None
    asyncio.run(run(args.url, args.calls, args.reps, args.stub, template, args.schema))
    return 0


if __name__ == "__main__":
    sys.exit(main())
