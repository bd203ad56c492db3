"""Open what a command-line argument names: a store URL, or a routing config file."""

from __future__ import annotations

from pathlib import Path

from composite_store.composite import CompositeStore
from composite_store.errors import ValidationError
from composite_store.registry import open_store
from composite_store.store import Store

__all__ = ["open_target"]


def open_target(value: str) -> Store:
    """``value`` as a store: a URL (``sqlite:///agent.db``) opens that store; a path to a TOML
    file (``composite-store.toml``, or a ``pyproject.toml`` with ``[tool.composite-store]``)
    opens the composite it routes. No I/O happens until ``init()``."""
    if "://" in value:
        return open_store(value)
    path = Path(value)
    if path.is_file():
        return CompositeStore.from_config(path)
    raise ValidationError(
        f"{value!r} is neither a store URL (scheme://...) nor a config file; give a URL such "
        "as sqlite:///agent.db or the path of a composite-store.toml"
    )
