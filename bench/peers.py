"""``python -m bench.peers``: the peer harness (Mastra, raw drivers, this library) run several
times with the processes placed on the CPUs in a known way, and composite-store's ratio to
Mastra and to the raw driver per workload column, as median and minimum over the runs.

    uv run python -m bench.peers --harness ../shared/peers-bench --runs 3 \\
        --placement split,same --markdown /tmp/peers.md
    uv run python -m bench.peers --harness ../shared/peers-bench --backend sqlite --runs 3

Why placements: on a machine of two virtual CPUs, one request/response round trip between the
client and the PostgreSQL backend costs about 25 us when the scheduler puts both on one CPU
and about 80 us when they are on two (a halted virtual CPU is woken through the hypervisor),
and the scheduler moves them between the two for seconds at a time. An unpinned run mixes
both, differently for each peer, so that one peer's figure could move by 2x between runs of
the same code (docs/benchmarks.md, "Session 2026-12-05"). Here every peer of a run gets the
same placement:

- ``split``: the PostgreSQL cluster on CPU 1, the harness (each peer's client) on CPU 0;
- ``same``: both on CPU 0;
- ``free``: no pinning (the scheduler's choice, as the harness runs by itself).

For a placement other than ``free`` the cluster is started here, pinned, with the same data
directory, port and settings the harness uses for its own (``/tmp/peerpg``, 55432): the
harness then finds it answering and leaves it alone. The harness is copied once to a work
folder (``--work``; its npm and pip installs stay there for later runs) and never modified.
SQLite peers have no server: their placements only pin the client.

The harness runs its peers one after the other, in the order it is given. Runs alternate it:
Mastra's peer first in the odd-numbered rounds, ours first in the even-numbered ones, so that
over an even number of runs whatever the first or last peer of a run meets (a machine just
started on the work, the writeback of the peers before it) falls on each side equally. Each
run's order is in the per-run table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The harness's result keys and headings, in its report's order.
COLUMNS = [
    ("w1_msgs", "W1 msg"),
    ("w1_threads", "W1 thr"),
    ("w2_read_recent", "W2"),
    ("w2_include_ctx", "W2i"),
    ("w3_paginate", "W3"),
    ("w4_update", "W4 upd"),
    ("w4_read", "W4 read"),
    ("w5_persist", "W5 save"),
    ("w5_load", "W5 load"),
    ("w6_spans_write", "W6 spans"),
    ("w6_trace_read", "W6 traces"),
]
#: Peers by backend: (Mastra's, the raw driver's, ours), as the harness names them.
PEERS = {
    "postgres": ("mastra-pg", "raw-pg", "project-pg"),
    "sqlite": ("mastra-libsql", "raw-sqlite", "project-sqlite"),
}
#: The result file of each peer (results/<peer>__<backend>.json).
RESULT_FILES = {
    "mastra-pg": "mastra__postgres.json",
    "raw-pg": "raw-psycopg3__postgres.json",
    "project-pg": "composite-store__postgres.json",
    "mastra-libsql": "mastra__libsql.json",
    "raw-sqlite": "raw-sqlite3-normal__sqlite.json",
    "project-sqlite": "composite-store__sqlite.json",
}
#: (server CPUs, client CPUs) of each placement; None: not pinned.
PLACEMENTS: dict[str, tuple[str | None, str | None]] = {
    "split": ("1", "0"),
    "same": ("0", "0"),
    "free": (None, None),
}
PGBIN = Path(os.environ.get("PGBIN", "/usr/lib/postgresql/15/bin"))
PGROOT = Path(os.environ.get("PGROOT", "/tmp/peerpg"))
PGPORT = os.environ.get("PGPORT", "55432")


def peer_order(backend: str, round_: int) -> tuple[str, ...]:
    """The order the harness runs ``backend``'s peers in, in round ``round_`` (from 0):
    Mastra's first in even rounds, reversed (ours first) in odd ones."""
    peers = PEERS[backend]
    return peers if round_ % 2 == 0 else peers[::-1]


@dataclass
class Run:
    """One harness run: each peer's median rate per column, and the order they ran in."""

    placement: str
    order: tuple[str, ...]
    rates: dict[str, dict[str, float]] = field(default_factory=dict)

    def ratio(self, peer: str, other: str, column: str) -> float | None:
        ours, theirs = self.rates.get(peer, {}).get(column), self.rates.get(other, {}).get(column)
        return ours / theirs if ours and theirs else None


def _as_postgres(cmd: Sequence[str]) -> list[str]:
    """``cmd`` as the cluster's owner (the harness's ``postgres`` user) when we are root."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else list(cmd)


def _pg_ready() -> bool:
    ready = subprocess.run(
        [str(PGBIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", PGPORT], check=False
    )
    return ready.returncode == 0


def _stop_cluster() -> None:
    if _pg_ready():
        subprocess.run(
            _as_postgres([str(PGBIN / "pg_ctl"), "-D", str(PGROOT / "data"), "-m", "fast",
                          "-w", "stop"]),
            check=True, stdout=subprocess.DEVNULL,
        )


def _start_cluster(cpus: str) -> None:
    """The harness's cluster (initdb as it does it, if missing), started pinned to ``cpus``."""
    _stop_cluster()
    data = PGROOT / "data"
    if not (data / "PG_VERSION").exists():
        PGROOT.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(PGROOT, "postgres")
        subprocess.run(
            _as_postgres([str(PGBIN / "initdb"), "-D", str(data), "-A", "trust", "-U",
                          "postgres", "-E", "UTF8", "--no-locale"]),
            check=True, stdout=subprocess.DEVNULL,
        )
    options = f"-p {PGPORT} -k {PGROOT} -c listen_addresses=127.0.0.1"
    subprocess.run(
        ["taskset", "-c", cpus, *_as_postgres([str(PGBIN / "pg_ctl"), "-D", str(data), "-l",
                                               str(PGROOT / "server.log"), "-w", "-o", options,
                                               "start"])],
        check=True, stdout=subprocess.DEVNULL,
    )


def _harness_copy(harness: Path, work: Path) -> Path:
    copy = work / "peers-bench"
    if not (copy / "run_all.sh").exists():
        shutil.copytree(harness, copy, ignore=shutil.ignore_patterns("node_modules", "results"))
        for path in [copy, *copy.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)  # the shared copy is read-only
    return copy


def run_once(
    copy: Path,
    project: Path,
    backend: str,
    placement: str,
    env: dict[str, str],
    log: Path,
    order: Sequence[str],
) -> Run:
    """One harness run of the backend's three peers in ``order``, main workloads, in
    ``placement``."""
    server, client = PLACEMENTS[placement]
    results = copy / "results"
    shutil.rmtree(results, ignore_errors=True)
    if backend == "postgres":
        if server is None:
            _stop_cluster()  # the harness starts (and stops) its own, unpinned
        else:
            _start_cluster(server)
    command = [str(copy / "run_all.sh")]
    if client is not None:
        command = ["taskset", "-c", client, *command]
    run_env = {**os.environ, **env, "PROJECT": str(project), "PEERS": " ".join(order),
               "WORKLOADS": "main", "RESULTS_DIR": str(results)}
    try:
        with log.open("a") as out:
            done = subprocess.run(command, cwd=project, env=run_env, stdout=out,
                                  stderr=subprocess.STDOUT, check=False)
    finally:
        if backend == "postgres" and server is not None:
            _stop_cluster()
    if done.returncode != 0:
        raise RuntimeError(f"the harness failed ({done.returncode}); see {log}")
    run = Run(placement, tuple(order))
    for peer in order:
        data = json.loads((results / RESULT_FILES[peer]).read_text())
        run.rates[peer] = {
            key: float(value["rate"]) for key, value in data["median"].items() if value
        }
    return run


def _cell(values: Iterable[float | None]) -> str:
    found = [v for v in values if v is not None]
    if not found:
        return "n/a"
    low = min(found)
    text = f"{statistics.median(found):.2f} ({low:.2f})"
    return f"**{text}**" if low < 1 else text


def report(runs: Sequence[Run], backend: str) -> str:
    """Markdown: per placement, composite-store over Mastra and over the raw driver, median
    (minimum) over the runs; a minimum below 1.00 in bold."""
    mastra, raw, ours = PEERS[backend]
    heads = " | ".join(h for _, h in COLUMNS)
    lines = [f"| {backend}: placement, ratio (runs) | {heads} |",
             "|---|" + "---:|" * len(COLUMNS)]
    for placement in dict.fromkeys(r.placement for r in runs):
        mine = [r for r in runs if r.placement == placement]
        for other, name in ((mastra, "Mastra"), (raw, "raw")):
            cells = " | ".join(_cell(r.ratio(ours, other, key) for r in mine) for key, _ in COLUMNS)
            lines.append(f"| {placement}, over {name} ({len(mine)}) | {cells} |")
    return "\n".join(lines)


def rates_table(runs: Sequence[Run]) -> str:
    """Markdown: every run's ops/s per peer and column."""
    heads = " | ".join(h for _, h in COLUMNS)
    lines = [f"| run | peer (in the order run) | {heads} |", "|---|---|" + "---:|" * len(COLUMNS)]
    for i, run in enumerate(runs, 1):
        for peer in run.order:
            rates = run.rates.get(peer, {})
            cells = " | ".join(f"{rates[k]:,.0f}" if k in rates else "n/a" for k, _ in COLUMNS)
            lines.append(f"| {i} {run.placement} | {peer} | {cells} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", type=Path, required=True,
                        help="the peer harness (../shared/peers-bench); copied, never modified")
    parser.add_argument("--backend", choices=sorted(PEERS), default="postgres")
    parser.add_argument("--placement", default="split,same",
                        help="comma-separated, run in turn: " + ", ".join(PLACEMENTS))
    parser.add_argument("--runs", type=int, default=3, help="runs of each placement")
    parser.add_argument("--work", type=Path, help="folder for the harness's copy (kept)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="passed to the harness (sizes: W1_THREADS=1000, REPS=5, ...)")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args(argv)
    placements = [p.strip() for p in args.placement.split(",") if p.strip()]
    unknown = sorted(set(placements) - set(PLACEMENTS))
    if unknown:
        parser.error(f"unknown placement(s) {unknown}; known: {', '.join(PLACEMENTS)}")
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        parser.error("placements need taskset and two CPUs")
    env = dict(item.split("=", 1) for item in args.env)
    work = args.work or Path(tempfile.mkdtemp(prefix="peers-"))
    work.mkdir(parents=True, exist_ok=True)
    copy = _harness_copy(args.harness.resolve(), work)
    project = Path(__file__).resolve().parent.parent
    log = work / "harness.log"
    runs: list[Run] = []
    # Placements in turn within each round, so that a drift of the machine spreads over all.
    for round_ in range(args.runs):
        for placement in placements:
            print(f"run {round_ + 1}/{args.runs}, {placement} (log: {log})", file=sys.stderr)
            order = peer_order(args.backend, round_)
            runs.append(run_once(copy, project, args.backend, placement, env, log, order))
    rates = rates_table(runs)
    text = f"{report(runs, args.backend)}\n\nops/s per run:\n\n{rates}\n"
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
