"""The workloads of DESIGN.md section 8, written once against ``Target``.

Each workload returns the latency of every timed operation; the harness turns those into
ops/s, p50 and p95. Data is generated from a fixed seed so both contenders see the same work.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from bench.targets.base import Msg, SpanRow, Target

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Sizes:
    threads: int = 200
    messages_per_thread: int = 50
    batch: int = 10
    reads: int = 1000
    page_threads: int = 1000
    page_size: int = 50
    page_passes: int = 3
    wm_ops: int = 1000
    snapshots: int = 1000
    traces: int = 100
    spans_per_trace: int = 10
    long_thread: int = 10_000
    long_reads: int = 300
    concurrency: int = 16


FULL = Sizes()
QUICK = Sizes(
    threads=20, messages_per_thread=20, reads=50, page_threads=100, page_passes=1, wm_ops=50,
    snapshots=50, traces=10, long_thread=1000, long_reads=30,
)

Timed = Callable[[], Awaitable[Any]]


async def timed(op: Timed, out: list[float]) -> Any:
    start = time.perf_counter()
    result = await op()
    out.append(time.perf_counter() - start)
    return result


def content(i: int) -> dict[str, Any]:
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 6
    return {"format": 2, "parts": [{"type": "text", "text": text}], "content": text}


def thread_messages(tid: str, n: int, start: int = 0) -> list[Msg]:
    return [
        Msg(
            id=f"{tid}-m{i:05d}",
            thread_id=tid,
            resource_id="bench-user",
            role="user" if i % 2 == 0 else "assistant",
            content=content(i),
            created_at=EPOCH + timedelta(seconds=i),
        )
        for i in range(start, start + n)
    ]


async def w1_write(t: Target, s: Sizes) -> list[float]:
    """W1: write threads x messages in batches."""
    lat: list[float] = []
    for n in range(s.threads):
        tid = f"t{n:04d}"
        await timed(partial(t.save_thread, tid, "bench-user", EPOCH), lat)
        msgs = thread_messages(tid, s.messages_per_thread)
        for i in range(0, len(msgs), s.batch):
            batch = msgs[i : i + s.batch]
            await timed(partial(t.save_messages, batch), lat)
    return lat


async def w2_newest(t: Target, s: Sizes, rng: random.Random) -> list[float]:
    """W2: newest 20 messages of random threads (needs W1's data)."""
    lat: list[float] = []
    for _ in range(s.reads):
        tid = f"t{rng.randrange(s.threads):04d}"
        ids = await timed(partial(t.newest, tid, 20), lat)
        assert len(ids) == min(20, s.messages_per_thread), ids
    return lat


async def w2i_window(t: Target, s: Sizes, rng: random.Random) -> list[float]:
    """W2i: W2 plus a 2-before/2-after include window around a random message."""
    lat: list[float] = []
    for _ in range(s.reads):
        tid = f"t{rng.randrange(s.threads):04d}"
        mid = f"{tid}-m{rng.randrange(s.messages_per_thread):05d}"
        ids = await timed(partial(t.newest_with_window, tid, 20, mid, 2, 2), lat)
        assert mid in ids
    return lat


async def w2c_concurrent(t: Target, s: Sizes, rng: random.Random) -> list[float]:
    """W2c: W2 from ``concurrency`` tasks at once (where an async API should shine)."""
    lat: list[float] = []
    picks = [f"t{rng.randrange(s.threads):04d}" for _ in range(s.reads)]
    queue = iter(picks)

    async def worker() -> None:
        for tid in queue:
            await timed(partial(t.newest, tid, 20), lat)

    await asyncio.gather(*(worker() for _ in range(s.concurrency)))
    return lat


async def w3_pages(t: Target, s: Sizes) -> list[float]:
    """W3: page through one resource's threads, ``page_size`` a page."""
    for n in range(s.page_threads):
        await t.save_thread(f"p{n:05d}", "pager", EPOCH + timedelta(seconds=n))
    lat: list[float] = []
    pages = s.page_threads // s.page_size
    for _ in range(s.page_passes):
        for page in range(pages):
            ids = await timed(partial(t.thread_page, "pager", page, s.page_size), lat)
            assert len(ids) == s.page_size
    return lat


async def w4_working_memory(t: Target, s: Sizes) -> tuple[list[float], list[float]]:
    """W4: working-memory updates and reads of ~1 KB across 100 resources."""
    writes: list[float] = []
    reads: list[float] = []
    for i in range(s.wm_ops):
        rid = f"r{i % 100:03d}"
        text = f"# Profile {i}\n" + ("- fact: value\n" * 70)[:1000]
        await timed(partial(t.update_working_memory, rid, text), writes)
        got = await timed(partial(t.get_working_memory, rid), reads)
        assert got == text
    return writes, reads


def snapshot(i: int) -> dict[str, Any]:
    return {
        "runId": f"run{i}",
        "status": "running",
        "value": {"step": i},
        "context": {f"step{k}": {"status": "success", "output": "x" * 400} for k in range(10)},
        "activePaths": [0, 1, 2],
        "serializedStepGraph": [{"type": "step", "step": {"id": f"s{k}"}} for k in range(10)],
        "timestamp": 1735689600000 + i,
    }


async def w5_snapshots(t: Target, s: Sizes) -> tuple[list[float], list[float]]:
    """W5: ~5 KB workflow snapshots saved, then loaded."""
    saves: list[float] = []
    loads: list[float] = []
    for i in range(s.snapshots):
        snap = snapshot(i)
        await timed(partial(t.save_snapshot, "bench-wf", f"run{i}", snap), saves)
    for i in range(s.snapshots):
        got = await timed(partial(t.load_snapshot, "bench-wf", f"run{i}"), loads)
        assert got is not None
    return saves, loads


def trace_spans(n: int, per_trace: int) -> list[SpanRow]:
    start = EPOCH + timedelta(seconds=n)
    return [
        SpanRow(
            trace_id=f"trace{n:04d}",
            span_id=f"span{k:02d}",
            parent_span_id=None if k == 0 else "span00",
            name=f"step {k}",
            span_type="AGENT_RUN" if k == 0 else "TOOL_CALL",
            started_at=start + timedelta(milliseconds=k),
            ended_at=start + timedelta(milliseconds=k + 5),
            attributes={"model": "gpt", "tokens": k * 10},
            input={"q": "x" * 200},
            output={"a": "y" * 200},
        )
        for k in range(per_trace)
    ]


async def w6_traces(t: Target, s: Sizes) -> tuple[list[float], list[float]]:
    """W6: traces of N spans written (one batch per trace), then read back whole."""
    writes: list[float] = []
    reads: list[float] = []
    for n in range(s.traces):
        spans = trace_spans(n, s.spans_per_trace)
        await timed(partial(t.save_spans, spans), writes)
    for n in range(s.traces):
        count = await timed(partial(t.read_trace, f"trace{n:04d}"), reads)
        assert count == s.spans_per_trace
    return writes, reads


async def w2l_long_thread(
    t: Target, s: Sizes, rng: random.Random
) -> tuple[list[float], list[float]]:
    """W2L: newest 20 of a ``long_thread``-message thread vs of 50-message threads."""
    await t.save_thread("long", "bench-user", EPOCH)
    for i in range(0, s.long_thread, 500):
        for j in range(i, min(i + 500, s.long_thread), 100):
            await t.save_messages(thread_messages("long", 100, start=j))
    small = [f"short{n}" for n in range(10)]
    for tid in small:
        await t.save_thread(tid, "bench-user", EPOCH)
        await t.save_messages(thread_messages(tid, 50))
    long_lat: list[float] = []
    short_lat: list[float] = []
    for _ in range(s.long_reads):
        await timed(partial(t.newest, "long", 20), long_lat)
        tid = rng.choice(small)
        await timed(partial(t.newest, tid, 20), short_lat)
    return long_lat, short_lat
