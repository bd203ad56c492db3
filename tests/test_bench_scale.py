"""The at-scale bench cannot rot: its smoke size on SQLite, library against raw sqlite3, as
``python -m bench --scale smoke`` runs it (a table of every read at both sizes; no timing is
asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.__main__ import main


def test_the_smoke_scale_runs_every_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scale.md"
    assert main(["--scale", "smoke", "--backend", "sqlite", "--markdown", str(out)]) == 0
    table = out.read_text(encoding="utf-8")
    assert "| read | 2k / 200 lib / raw ms | 20k / 2k lib / raw ms |" in table
    for read in (
        "newest 20",
        "newest 20 + total",
        "include 2 + 2",
        "thread page 10 + total",
        "runs of a workflow",
        "runs of a resource",
        "working memory",
    ):
        assert f"| {read} | " in table
