"""Every mutant of tools/mutants.toml still applies: its ``old`` text occurs once in its file, and
its modules exist (a refactor that makes one stale must update the list)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("mutate", ROOT / "tools" / "mutate.py")
assert spec is not None and spec.loader is not None
mutate = importlib.util.module_from_spec(spec)
sys.modules.setdefault("mutate", mutate)  # dataclasses look their module up
spec.loader.exec_module(mutate)


def test_every_mutant_applies_once() -> None:
    mutants = mutate.load()
    assert len(mutants) >= 10
    for mutant in mutants:
        text = (ROOT / mutant.file).read_text(encoding="utf-8")
        assert text.count(mutant.old) == 1, f"stale mutant: {mutant.name}"
        assert mutant.old != mutant.new, mutant.name
        for module in mutant.modules:
            assert (ROOT / module).exists(), f"{mutant.name}: no {module}"
