"""``composite-store check``: the report, the JSON, the exit status, and untouched data."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from composite_store import Thread, open_store
from composite_store.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path, script: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command line in a fresh process (as a user would), or ``script`` before it."""
    code = script or (
        "import sys; from composite_store.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
    )


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An existing SQLite file with data, checked; everything before and after."""
    folder = tmp_path_factory.mktemp("existing")
    db = folder / "x.db"

    async def seed() -> None:
        async with open_store(f"sqlite:///{db}") as store:
            await store.memory.save_thread(
                thread=Thread(id="keep", resource_id="u1", title="precious")
            )

    asyncio.run(seed())
    before = _snapshot(folder)
    report = folder.parent / f"{folder.name}-report.json"
    done = _cli(
        "check", f"sqlite:///{db}", "--domain", "memory", "--domain", "workflows",
        "--json", "--output", str(report), cwd=folder,
    )
    return {"folder": folder, "db": db, "before": before, "done": done, "report": report}


def test_check_passes_and_prints_a_row_per_domain(checked: dict[str, Any]) -> None:
    done = checked["done"]
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith(f"composite-store check sqlite:///{checked['db']}")
    assert "namespace: sqlite:////" in out and "composite-store-ns-" in out
    header = next(line for line in out.splitlines() if line.startswith("domain"))
    assert header.split() == ["domain", "passed", "failed", "skipped", "xfailed"]
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[4:10] if line}
    for group in ("memory", "workflows", "capabilities", "router", "total"):
        assert group in rows and rows[group][1] == "0", out
    assert "scores" not in rows, "an unchosen domain was checked"
    assert "\nOK: " in out


def test_check_leaves_the_existing_file_untouched(checked: dict[str, Any]) -> None:
    assert _snapshot(checked["folder"]) == checked["before"], "files next to x.db changed"

    async def read() -> Thread | None:
        async with open_store(f"sqlite:///{checked['db']}") as store:
            page = await store.memory.list_threads()
            assert [t.id for t in page.items] == ["keep"]
            return await store.memory.get_thread_by_id(thread_id="keep")

    kept = asyncio.run(read())
    assert kept is not None and kept.title == "precious"


def test_check_writes_json_and_drops_its_namespace(checked: dict[str, Any]) -> None:
    data = json.loads(checked["report"].read_text("utf-8"))
    assert data["ok"] is True and data["totals"]["failed"] == 0
    assert set(data["domains"]) == {"memory", "workflows", "capabilities", "router"}
    assert sum(data["domains"]["memory"].values()) > 100
    assert {t["outcome"] for t in data["tests"]} <= {"passed", "skipped", "xfailed"}
    namespace = Path(data["namespace"].removeprefix("sqlite:///")).parent
    assert namespace.name.startswith("composite-store-ns-")
    assert not namespace.exists(), "the throwaway namespace was not dropped"


def test_check_fails_on_a_broken_adapter(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from composite_store.cli import main
        from composite_store.admin.provision import FileProvisioner, register_provisioner
        from composite_store.registry import register_adapter
        from tests.test_broken_adapter import BrokenSqliteStore

        class Target(BrokenSqliteStore):
            def __init__(self, url, **options):
                super().__init__(url.replace("broken-sqlite", "sqlite", 1), **options)

        register_adapter("broken-sqlite", Target)
        register_provisioner("broken-sqlite", FileProvisioner())
        sys.exit(main(sys.argv[1:]))
        """
    )
    report = tmp_path / "report.json"
    done = _cli(
        "check", "broken-sqlite:///x.db", "-k", "Schema", "--json", "--output", str(report),
        cwd=tmp_path, script=script,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "\nFAILED: " in done.stdout
    assert "[memory] TestCheckSchema::test_documented_index_exists[messages-" in done.stdout
    failed = {t["id"] for t in json.loads(report.read_text("utf-8"))["tests"]
              if t["outcome"] == "failed"}
    assert "TestCheckSchema::test_column_types_are_compatible[threads]" in failed
    assert not (tmp_path / "x.db").exists(), "check opened the URL's own file"


def test_check_refuses_an_unknown_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "postgress://localhost/db"]) == 1
    err = capsys.readouterr().err
    assert "no adapter for URL scheme 'postgress'" in err and "did you mean 'postgres'" in err


def test_check_refuses_an_unknown_domain(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "memory://", "--domain", "memroy"])
    assert exc.value.code == 2
    assert "invalid choice: 'memroy'" in capsys.readouterr().err
