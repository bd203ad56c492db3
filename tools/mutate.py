"""Mutation testing over a committed list of mutants: does the conformance suite kill each one?

``python tools/mutate.py [--sample N] [--seed S] [--only TEXT] [--list]`` reads
``tools/mutants.toml``; for each chosen mutant it applies the one text replacement (refusing one
whose ``old`` text is not found exactly once, so a stale mutant fails loudly), runs the
mutant's modules with ``python -m pytest -x -q``, restores the file (also on Ctrl-C), and
prints killed / survived with the kill rate. Exit status 1 when a mutant survived or is stale.
``--sample N`` picks N mutants at random (``--seed``, default 0, keeps CI's sample stable).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "tools" / "mutants.toml"


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    modules: tuple[str, ...]
    k: str | None = None


def load(path: Path = MUTANTS) -> list[Mutant]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [
        Mutant(m["name"], m["file"], m["old"], m["new"], tuple(m["modules"]), m.get("k"))
        for m in data["mutant"]
    ]


def run(mutant: Mutant) -> str:
    """Apply ``mutant``, run its modules, restore; return killed, survived or stale."""
    path = ROOT / mutant.file
    original = path.read_text(encoding="utf-8")
    if original.count(mutant.old) != 1:
        return "stale"
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
               *mutant.modules, *(["-k", mutant.k] if mutant.k else [])]
    try:
        path.write_text(original.replace(mutant.old, mutant.new), encoding="utf-8")
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    finally:
        path.write_text(original, encoding="utf-8")
    if done.returncode == 5:
        # pytest ran no test: the mutant's modules and -k select nothing, so nothing can kill
        # it; that is a broken entry, not a kill.
        return "stale"
    return "survived" if done.returncode == 0 else "killed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, help="run N mutants picked at random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", help="run the mutants whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args(argv)
    mutants = load()
    if args.only:
        mutants = [m for m in mutants if args.only in m.name]
    if args.sample is not None and args.sample < len(mutants):
        mutants = random.Random(args.seed).sample(mutants, args.sample)
    if args.list:
        print("\n".join(f"{m.name}  ({m.file})" for m in mutants))
        return 0
    outcomes: dict[str, int] = {"killed": 0, "survived": 0, "stale": 0}
    for mutant in mutants:
        started = time.monotonic()
        outcome = run(mutant)
        outcomes[outcome] += 1
        print(f"{outcome:>8}  {time.monotonic() - started:5.1f}s  {mutant.name}", flush=True)
    scored = outcomes["killed"] + outcomes["survived"]
    rate = 100.0 * outcomes["killed"] / scored if scored else 0.0
    print(f"\n{outcomes['killed']} killed, {outcomes['survived']} survived, "
          f"{outcomes['stale']} stale: kill rate {rate:.0f}%")
    return 0 if outcomes["survived"] == outcomes["stale"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
