"""Throwaway namespaces for tests and ``composite-store check``: a temporary libSQL file."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

__all__ = ["create", "drop"]


def create(base_url: str | None = None) -> str:
    """Return the URL of a new, empty libSQL file in its own temporary directory."""
    folder = Path(tempfile.mkdtemp(prefix="composite-store-libsql-"))
    return f"libsql:///{folder / 'store.db'}"


def drop(url: str) -> None:
    """Delete the file (and its directory) made by :func:`create`."""
    path = Path(url.removeprefix("libsql:///").removeprefix("libsql://"))
    if path.name == "store.db" and path.parent.name.startswith("composite-store-libsql-"):
        shutil.rmtree(path.parent, ignore_errors=True)
