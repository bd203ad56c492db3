"""README.md stays true: its set-up commands, its list of tested backends, its runnable examples."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from composite_store_conformance import Suite

from composite_store.schema import DOMAINS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _section(heading: str) -> str:
    """The text of the README section under ``## heading``, up to the next ``## ``."""
    start = README.index(f"## {heading}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_readme_opens_with_the_two_set_up_commands() -> None:
    first = re.search(r"^```\w*\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)
    assert first is not None
    assert README.index(first.group(0)) < README.index("\n## "), "the commands must come first"
    commands = [line for line in first.group(1).splitlines() if line.strip()]
    assert len(commands) == 2, commands
    assert commands[0].startswith("pip install uv && uv run --no-dev composite-store demo")
    assert commands[1].startswith("uv run pytest")


def _excluded_backends() -> set[str]:
    found = re.search(r"^EXCLUDED_BACKENDS=\((.*)\)", CI, flags=re.MULTILINE)
    assert found is not None, ".ci/run lost its EXCLUDED_BACKENDS list"
    return set(found.group(1).split())


def _suite_domains(module: Path) -> set[str]:
    """The domains whose suites a conformance test module runs (from its test classes)."""
    loaded = importlib.import_module(f"tests.conformance.{module.stem}")
    domains: set[str] = set()
    for name, value in vars(loaded).items():
        if name.startswith("Test") and isinstance(value, type) and issubclass(value, Suite):
            domains.update(value.domains)
    return domains


def _table_rows() -> dict[str, str]:
    """Backends table: module file name -> the domains cell."""
    rows = {}
    for line in _section("Backends exercised by the tests").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`test_"):
            rows[cells[1].strip("`")] = cells[3]
    return rows


def test_backends_table_lists_every_module_ci_runs() -> None:
    excluded = _excluded_backends()
    on_disk = {
        p.name
        for p in (ROOT / "tests" / "conformance").glob("test_*.py")
        if p.stem.removeprefix("test_") not in excluded
    }
    listed = set(_table_rows())
    assert listed == on_disk, (
        f"README's backends table is out of date: missing {sorted(on_disk - listed)}, "
        f"no such module {sorted(listed - on_disk)}"
    )


def test_backends_table_names_the_domains_each_module_covers() -> None:
    for name, cell in _table_rows().items():
        covered = _suite_domains(ROOT / "tests" / "conformance" / name)
        expected = (
            "all seven"
            if covered == set(DOMAINS)
            else ", ".join(d for d in DOMAINS if d in covered)
        )
        assert cell == expected, f"{name}: README says {cell!r}, the module runs {expected!r}"


def test_sync_facade_example_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (example,) = _code_blocks(_section("Blocking use: the sync facade"), "python")
    monkeypatch.chdir(tmp_path)
    for name in ("COMPOSITE_STORE_URL", *(f"COMPOSITE_STORE_{d.upper()}_URL" for d in DOMAINS)):
        monkeypatch.delenv(name, raising=False)
    exec(compile(example, "README.md (sync facade)", "exec"), {})
    assert (tmp_path / "agent.db").is_file()
