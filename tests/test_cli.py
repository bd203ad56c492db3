"""The ``composite-store`` command line, run in-process through ``main()`` and as a process."""

from __future__ import annotations

import importlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import composite_store
from composite_store import cli, registry
from composite_store.config import ENV_DEFAULT, env_var
from composite_store.inmemory import InMemoryMemory, InMemoryStore, InMemoryWorkflows
from composite_store.schema import DOMAINS


@pytest.fixture(autouse=True)
def _clean_routing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Each test runs in an empty directory with no routing from the environment."""
    for name in (ENV_DEFAULT, *(env_var(d) for d in DOMAINS)):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _clean_env() -> dict[str, str]:
    routing = {ENV_DEFAULT, *(env_var(d) for d in DOMAINS)}
    return {k: v for k, v in os.environ.items() if k not in routing}


# -- parser and registry -------------------------------------------------------------------------


def test_every_registered_command_module_adds_a_parser() -> None:
    for name in cli.COMMANDS:
        assert callable(importlib.import_module(name).add_parser), name
    parser = cli.build_parser()
    help_text = parser.format_help()
    assert "demo" in help_text
    assert "version" in help_text


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "usage: composite-store" in capsys.readouterr().err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["version"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"composite-store {composite_store.__version__}"
    assert "composite-store-conformance" in out


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"composite-store {composite_store.__version__}"


# -- demo ----------------------------------------------------------------------------------------


def test_demo_on_the_embedded_default(
    capsys: pytest.CaptureFixture[str], _clean_routing: Path
) -> None:
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    db = _clean_routing / "composite-store-demo.db"
    assert db.is_file()
    assert "  memory                sqlite sqlite:///composite-store-demo.db" in out
    assert "  workflows             sqlite sqlite:///composite-store-demo.db" in out
    assert "Every record read back equals what was written" in out
    assert f"Data file: {db.resolve()}" in out
    # The records really are in the file, in the documented tables.
    with sqlite3.connect(db) as conn:
        titles = conn.execute("SELECT title FROM mastra_threads").fetchall()
        roles = conn.execute("SELECT role FROM mastra_messages ORDER BY createdAt").fetchall()
        memory = conn.execute("SELECT workingMemory FROM mastra_resources").fetchone()
        runs = conn.execute("SELECT workflow_name, run_id FROM mastra_workflow_snapshot").fetchall()
    assert titles == [("Planning a trip to Lisbon",)]
    assert [r for (r,) in roles] == ["user", "assistant", "user"]
    assert memory[0].startswith("# User")
    assert runs == [("trip-planner", "demo-run-1")]


def test_demo_twice_is_harmless(capsys: pytest.CaptureFixture[str], _clean_routing: Path) -> None:
    assert cli.main(["demo"]) == 0
    assert cli.main(["demo"]) == 0
    capsys.readouterr()
    with sqlite3.connect(_clean_routing / "composite-store-demo.db") as conn:
        assert conn.execute("SELECT count(*) FROM mastra_messages").fetchone() == (3,)


def test_demo_mixes_backends(capsys: pytest.CaptureFixture[str], _clean_routing: Path) -> None:
    assert cli.main(["demo", "--url", "memory://", "--workflows-url", "sqlite:///wf.db"]) == 0
    out = capsys.readouterr().out
    assert "  memory                memory (in-process)" in out
    assert "  workflows             sqlite sqlite:///wf.db" in out
    assert "snapshot trip-planner/demo-run-1" in out
    assert (_clean_routing / "wf.db").is_file()
    assert not (_clean_routing / "composite-store-demo.db").exists()
    assert "Data file" not in out  # the default (memory://) is no file


def test_demo_follows_the_environment_when_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, _clean_routing: Path
) -> None:
    monkeypatch.setenv(ENV_DEFAULT, "memory://")
    assert cli.main(["demo", "--use-config"]) == 0
    assert "  memory                memory (in-process)" in capsys.readouterr().out
    assert not (_clean_routing / "composite-store-demo.db").exists()


def test_demo_writes_only_to_its_own_database_by_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, _clean_routing: Path
) -> None:
    """An application's routes (environment, composite-store.toml) are not the demo's."""
    app_db = _clean_routing / "production.db"
    (_clean_routing / "composite-store.toml").write_text(f'default = "sqlite:///{app_db}"\n')
    monkeypatch.setenv(env_var("workflows"), f"sqlite:///{_clean_routing / 'prod-wf.db'}")
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "  memory                sqlite sqlite:///composite-store-demo.db" in out
    assert "  workflows             sqlite sqlite:///composite-store-demo.db" in out
    assert (_clean_routing / "composite-store-demo.db").is_file()
    assert not app_db.exists()
    assert not (_clean_routing / "prod-wf.db").exists()


def test_demo_unknown_scheme_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", "--url", "postgress://db/agent"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("composite-store: error: ")
    assert "no adapter for URL scheme 'postgress'" in err
    assert "did you mean 'postgres'?" in err


class _SecretMemory(InMemoryMemory):
    url = ""

    def describe(self) -> str:
        return f"memory {self.url}"  # deliberately unredacted: the demo must redact it


class _SecretStore(InMemoryStore):
    """An in-memory store that reports its URL, password included, from ``describe()``."""

    backend = "secretmem"

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__()
        memory = _SecretMemory(data=self.data)
        memory.url = url
        self._domains["memory"] = memory
        self._domains["workflows"] = InMemoryWorkflows(data=self.data)


def test_demo_redacts_credentials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry._registry, "secretmem", _SecretStore)
    assert cli.main(["demo", "--url", "secretmem://ada:hunter2@db.example/agent"]) == 0
    out = capsys.readouterr().out
    assert "secretmem://ada:***@db.example/agent" in out
    assert "hunter2" not in out


# -- as a process ------------------------------------------------------------------------------


def _console_script() -> str:
    found = Path(sys.executable).parent / "composite-store"
    if not found.exists():
        pytest.fail(f"the composite-store console script is not installed next to {sys.executable}")
    return str(found)


@pytest.mark.parametrize("how", ["script", "module"])
def test_demo_as_a_process(how: str, _clean_routing: Path) -> None:
    command = (
        [_console_script()] if how == "script" else [sys.executable, "-m", "composite_store.cli"]
    )
    done = subprocess.run(
        [*command, "demo"],
        cwd=_clean_routing,
        env=_clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Every record read back equals what was written" in done.stdout
    assert done.stderr == ""
    assert (_clean_routing / "composite-store-demo.db").is_file()


def test_error_exit_status_as_a_process(_clean_routing: Path) -> None:
    done = subprocess.run(
        [_console_script(), "demo", "--url", "nosuchscheme://x"],
        cwd=_clean_routing,
        env=_clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "no adapter for URL scheme 'nosuchscheme'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(_clean_routing: Path) -> None:
    # `composite-store demo | head -1`: the pipe closes after the first line. Unbuffered, so
    # that the first line arrives while the demo still has lines to write.
    process = subprocess.Popen(
        [_console_script(), "demo"],
        cwd=_clean_routing,
        env={**_clean_env(), "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    errors = process.stderr.read().decode()
    status = process.wait(timeout=120)
    assert first.startswith(b"composite-store ")
    assert "Traceback" not in errors and "BrokenPipeError" not in errors, errors
    assert status == 141
