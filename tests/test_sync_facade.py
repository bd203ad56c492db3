"""The blocking facade: plain code, inside a running event loop (Jupyter), typed results."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from composite_store import CompositeStoreError, Thread
from composite_store import sync as sync_facade

ROOT = Path(__file__).resolve().parents[1]


def test_plain_code(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "typing"))
    try:
        from sync_facade_user import main
    finally:
        sys.path.pop(0)
    found = main(tmp_path)
    assert isinstance(found, Thread) and found.title == "Hi"


def test_inside_a_running_event_loop(tmp_path: Path) -> None:
    """A Jupyter cell runs inside ipykernel's running loop: the facade must still work."""

    async def cell() -> Thread | None:
        asyncio.get_running_loop()  # a loop is running here, as in a notebook
        with sync_facade.open_store(f"sqlite:///{tmp_path / 'nb.db'}") as store:
            store.memory.save_thread(thread={"id": "t1", "resource_id": "u1", "title": "nb"})
            return store.memory.get_thread_by_id(thread_id="t1")

    found = asyncio.run(cell())
    assert found is not None and found.title == "nb"


def test_from_its_own_loop_is_a_clear_error() -> None:
    async def inner() -> None:
        sync_facade.run(asyncio.sleep(0))

    with pytest.raises(CompositeStoreError, match="its own loop"):
        sync_facade.run(inner())


def test_sync_types_are_generated_from_the_contracts() -> None:
    generated = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_sync_types.py")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    current = (ROOT / "composite_store" / "sync_types.py").read_text(encoding="utf-8")
    assert generated == current, (
        "composite_store/sync_types.py is out of date with the domain contracts; run "
        "`uv run python tools/gen_sync_types.py > composite_store/sync_types.py`"
    )
