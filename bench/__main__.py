"""``python -m bench``: run the workloads on every available backend, library vs raw driver.

    uv run python -m bench                 # full sizes, 7 interleaved repetitions, all backends
    uv run python -m bench --quick         # small sizes, 2 repetitions
    uv run python -m bench --backend sqlite --reps 9 --markdown docs/bench-sqlite.md
    uv run python -m bench --backend postgres --concurrency 32   # W2c from 32 tasks
    uv run python -m bench --scale smoke   # the at-scale reads instead (bench/scale.py)

Backends: sqlite, libsql (embedded), postgres, mariadb, redis, mongodb (servers found as the
tests find them); one that cannot be reached is skipped with its reason. W2c is W2 issued from
``--concurrency`` tasks at once (default 16): the async API's throughput under concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import resource
import shutil
import statistics
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench import workloads as w
from bench.backends import BACKENDS, Backend, scratch_dir
from bench.targets.base import Target
from bench.targets.library import LibraryTarget

#: workload -> (kind, description): kind "batch" or "point" picks the target row.
WORKLOADS: dict[str, tuple[str, str]] = {
    "W1": ("batch", "write threads x messages, batches of 10"),
    "W2": ("point", "newest 20 messages of a random thread"),
    "W2i": ("point", "W2 + 2-before/2-after include window"),
    "W2c": ("point", "W2 from --concurrency concurrent tasks"),
    "W3": ("point", "page through 1000 threads, 50 a page"),
    "W4 write": ("point", "working-memory update (~1 KB)"),
    "W4 read": ("point", "working-memory read"),
    "W5 save": ("batch", "workflow snapshot save (~5 KB)"),
    "W5 load": ("point", "workflow snapshot load"),
    "W6 write": ("batch", "trace of 10 spans written as one batch"),
    "W6 read": ("point", "trace read back whole"),
}


@dataclass
class Samples:
    """Per repetition: ops/s; pooled: latencies."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def add(self, lat: list[float], wall: float | None = None) -> None:
        if not lat:
            return
        self.rates.append(len(lat) / (wall if wall is not None else sum(lat)))
        self.latencies.extend(lat)


Results = dict[tuple[str, str], Samples]


@dataclass
class Report:
    """What one run measured: the table's rows, the skipped backends and the machine's load."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    #: Backends that could not be reached (or whose driver is missing), and why.
    skipped: dict[str, str] = field(default_factory=dict)
    #: Backends that failed during the run, and how; the others' results are kept.
    failed: dict[str, str] = field(default_factory=dict)
    load: list[tuple[float, float, float]] = field(default_factory=list)


#: One workload of a repetition on one target: (name, latencies, wall seconds or None) rows.
Step = Callable[[Target, w.Sizes, int], Awaitable[list[tuple[str, list[float], float | None]]]]


async def _w1(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    await t.reset()
    return [("W1", await w.w1_write(t, s), None)]


async def _w2(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    return [("W2", await w.w2_newest(t, s, random.Random(seed)), None)]


async def _w2i(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    return [("W2i", await w.w2i_window(t, s, random.Random(seed + 1)), None)]


async def _w2c(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    start = time.perf_counter()
    lat = await w.w2c_concurrent(t, s, random.Random(seed + 2))
    return [("W2c", lat, time.perf_counter() - start)]


async def _w3(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    return [("W3", await w.w3_pages(t, s), None)]


async def _w4(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    writes, reads = await w.w4_working_memory(t, s)
    return [("W4 write", writes, None), ("W4 read", reads, None)]


async def _w5(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    saves, loads = await w.w5_snapshots(t, s)
    return [("W5 save", saves, None), ("W5 load", loads, None)]


async def _w6(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    if not t.supports_spans:
        return []
    writes, reads = await w.w6_traces(t, s)
    return [("W6 write", writes, None), ("W6 read", reads, None)]


async def _w2l(t: Target, s: w.Sizes, seed: int) -> list[tuple[str, list[float], float | None]]:
    await t.reset()
    long_lat, short_lat = await w.w2l_long_thread(t, s, random.Random(seed + 3))
    return [("W2L long", long_lat, None), ("W2L short", short_lat, None)]


#: The workloads of one repetition, in order (each later one may read an earlier one's data).
STEPS: tuple[Step, ...] = (_w1, _w2, _w2i, _w2c, _w3, _w4, _w5, _w6, _w2l)


async def run_once(
    targets: list[Target], s: w.Sizes, results: Results, seed: int
) -> None:
    """One repetition: every workload on each target, interleaved workload by workload (each
    target keeps its own data from one workload to the next). The machine's load moves within
    seconds when it is shared, so each workload's two contenders run back to back rather than
    a whole repetition apart; who goes first alternates from one workload to the next."""
    for i, step in enumerate(STEPS):
        order = targets if (seed + i) % 2 == 0 else targets[::-1]
        for t in order:
            for name, lat, wall in await step(t, s, seed):
                results.setdefault((name, t.kind), Samples()).add(lat, wall)


async def bench_backend(backend: Backend, s: w.Sizes, reps: int) -> tuple[Results, str]:
    """Interleaved repetitions of every workload on the library and the raw driver; returns
    the samples and the backend's note (what bounds its ratios, if anything)."""
    scratch = scratch_dir()
    try:
        contenders = await backend.make(scratch)
        note = contenders.note
        capped = {k: v for k, v in contenders.caps.items() if getattr(s, k) > v}
        if capped:
            s = dataclasses.replace(s, **capped)
            note += "; capped: " + ", ".join(f"{k}={v}" for k, v in capped.items())
        if contenders.max_reps is not None and reps > contenders.max_reps:
            reps = contenders.max_reps
            note += f"; {reps} repetitions"
        try:
            if contenders.raw_schema_url:
                schema = LibraryTarget(contenders.raw_schema_url)
                await schema.open()
                await schema.close()
            await contenders.library.open()
            try:
                await contenders.raw.open()
                # W6 runs where the library store has observability, on both sides.
                contenders.raw.supports_spans = contenders.library.supports_spans
                results: Results = {}
                for rep in range(reps):
                    await run_once([contenders.library, contenders.raw], s, results, seed=rep)
            finally:
                await contenders.raw.close()
                await contenders.library.close()
        finally:
            if contenders.cleanup is not None:
                await contenders.cleanup()
        return results, note.lstrip("; ")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summarize(backend: Backend, results: Results, note: str = "") -> list[dict[str, Any]]:
    rows = []
    names = [n for n in WORKLOADS if (n, "library") in results and (n, "raw") in results]
    for name in names:
        lib, raw = results[(name, "library")], results[(name, "raw")]
        lib_rate, raw_rate = statistics.median(lib.rates), statistics.median(raw.rates)
        kind = WORKLOADS[name][0]
        target = backend.targets[0] if kind == "batch" else backend.targets[1]
        ratio = lib_rate / raw_rate
        rows.append(
            {
                "backend": backend.name,
                "workload": name,
                "kind": kind,
                "library_ops_s": lib_rate,
                "raw_ops_s": raw_rate,
                "library_spread": (max(lib.rates) - min(lib.rates)) / lib_rate,
                "raw_spread": (max(raw.rates) - min(raw.rates)) / raw_rate,
                "library_p50_ms": pct(lib.latencies, 0.5) * 1000,
                "library_p95_ms": pct(lib.latencies, 0.95) * 1000,
                "raw_p50_ms": pct(raw.latencies, 0.5) * 1000,
                "raw_p95_ms": pct(raw.latencies, 0.95) * 1000,
                "ratio": ratio,
                "target": target,
                "meets": ratio >= target,
                "note": note,
            }
        )
    for kind in ("library", "raw"):
        long_, short = results.get(("W2L long", kind)), results.get(("W2L short", kind))
        if long_ and short:
            ratio = statistics.median(long_.rates) / statistics.median(short.rates)
            rows.append(
                {
                    "backend": backend.name,
                    "workload": f"W2L ({kind})",
                    "kind": "long/short",
                    "library_ops_s": statistics.median(long_.rates),
                    "raw_ops_s": statistics.median(short.rates),
                    "ratio": ratio,
                    "target": 0.9,
                    "meets": ratio >= 0.9,
                    "note": note,
                }
            )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    out = [
        "| backend | workload | library ops/s | raw ops/s | ratio | target | "
        "lib p50 / p95 ms | raw p50 / p95 ms | spread lib / raw | note |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        verdict = "ok" if r["meets"] else "MISSED"
        if r["kind"] == "long/short":
            out.append(
                f"| {r['backend']} | {r['workload']} | long {r['library_ops_s']:.0f} | "
                f"short {r['raw_ops_s']:.0f} | {r['ratio']:.2f} | >= 0.9 {verdict} "
                f"| | | | {r['note']} |"
            )
            continue
        out.append(
            f"| {r['backend']} | {r['workload']} | {r['library_ops_s']:.0f} | "
            f"{r['raw_ops_s']:.0f} | {r['ratio']:.2f} | >= {r['target']} {verdict} | "
            f"{r['library_p50_ms']:.2f} / {r['library_p95_ms']:.2f} | "
            f"{r['raw_p50_ms']:.2f} / {r['raw_p95_ms']:.2f} | "
            f"{r['library_spread']:.0%} / {r['raw_spread']:.0%} | {r['note']} |"
        )
    return "\n".join(out)


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """Per backend: the worst ratio of the batch and of the point workloads, and W2L."""
    lines = []
    for name in dict.fromkeys(r["backend"] for r in rows):
        mine = [r for r in rows if r["backend"] == name]
        parts = []
        for kind in ("batch", "point"):
            of_kind = [r for r in mine if r["kind"] == kind]
            if of_kind:
                worst = min(of_kind, key=lambda r: r["ratio"])
                missed = [r["workload"] for r in of_kind if not r["meets"]]
                parts.append(
                    f"{kind} min {worst['ratio']:.2f} ({worst['workload']}, target "
                    f">= {worst['target']}{'; missed: ' + ', '.join(missed) if missed else ''})"
                )
        w2l = next((r for r in mine if r["workload"] == "W2L (library)"), None)
        if w2l is not None:
            parts.append(f"W2L {w2l['ratio']:.2f}")
        lines.append(f"{name}: " + "; ".join(parts))
    return lines


def run(names: list[str], sizes: w.Sizes, reps: int) -> Report:
    """Bench each backend in ``names`` in turn (one event loop each)."""
    report = Report(load=[os.getloadavg()])
    for name in names:
        backend = BACKENDS[name]
        started = time.perf_counter()
        try:
            results, note = asyncio.run(bench_backend(backend, sizes, reps))
        except (ConnectionError, OSError, ImportError) as exc:
            report.skipped[name] = f"{type(exc).__name__}: {exc}"
            print(f"# {name}: skipped ({report.skipped[name]})", file=sys.stderr)
            continue
        except Exception as exc:  # noqa: BLE001 - one backend's failure must not lose the rest
            report.failed[name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            print(f"# {name}: FAILED ({report.failed[name]})", file=sys.stderr)
            continue
        report.rows.extend(summarize(backend, results, note))
        report.load.append(os.getloadavg())
        print(f"# {name}: {time.perf_counter() - started:.1f}s, load average "
              f"{report.load[-1][0]:.2f}", file=sys.stderr)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=sorted(BACKENDS),
                        help="backend(s) to run; default: every available one")
    parser.add_argument("--quick", action="store_true", help="small sizes, 2 repetitions")
    parser.add_argument("--reps", type=int, help="interleaved repetitions (default 7; quick 2)")
    parser.add_argument("--concurrency", type=int,
                        help=f"tasks issuing W2c at once (default {w.FULL.concurrency})")
    parser.add_argument("--json", help="write the rows as JSON to this file")
    parser.add_argument("--markdown", help="write the table as Markdown to this file")
    parser.add_argument("--scale", choices=["smoke", "full"],
                        help="run the at-scale reads instead (python -m bench.scale; with "
                             "--backend sqlite/postgres)")
    args = parser.parse_args(argv)
    if args.scale:
        from bench import scale

        forwarded = ["--scale", args.scale]
        for name in args.backend or []:
            forwarded += ["--backend", name]
        if args.markdown:
            forwarded += ["--markdown", args.markdown]
        return scale.main(forwarded)
    sizes = w.QUICK if args.quick else w.FULL
    if args.concurrency:
        sizes = dataclasses.replace(sizes, concurrency=args.concurrency)
    reps = args.reps or (2 if args.quick else 7)
    report = run(args.backend or list(BACKENDS), sizes, reps)
    table = markdown(report.rows)
    print(table)
    print()
    for line in verdicts(report.rows):
        print(line)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    loads = ", ".join(f"{one:.2f}" for one, _, _ in report.load)
    print(f"\npeak memory of the process: {peak:.0f} MiB; repetitions: {reps}; "
          f"sizes: {'quick' if args.quick else 'full'}; W2c concurrency: {sizes.concurrency}; "
          f"1-minute load average at start and after each backend: {loads}")
    for name, why in report.skipped.items():
        print(f"skipped {name}: {why}")
    for name, why in report.failed.items():
        print(f"FAILED {name}: {why}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"rows": report.rows, "skipped": report.skipped, "failed": report.failed,
                       "peak_mib": peak, "reps": reps, "sizes": dataclasses.asdict(sizes),
                       "load": report.load}, fh, indent=2)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(table + "\n")
    return 1 if report.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
