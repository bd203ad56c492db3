"""Merge rules: shallow metadata merges, message content merges, JSON deep merges."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["deep_merge", "merge_message_content", "shallow_merge"]


def shallow_merge(
    current: Mapping[str, Any] | None, patch: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """Return ``current`` with the top-level keys of ``patch`` replaced (Mastra's metadata rule)."""
    if patch is None:
        return dict(current) if current is not None else None
    return {**(current or {}), **patch}


def merge_message_content(current: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge a content update: top-level keys replace, ``metadata`` merges one level deep."""
    merged = {**current, **patch}
    if "metadata" in patch and isinstance(current.get("metadata"), Mapping):
        merged["metadata"] = {**current["metadata"], **(patch["metadata"] or {})}
    return merged


def deep_merge(current: Any, patch: Any) -> Any:
    """Merge ``patch`` into ``current``: objects merge recursively, ``None`` deletes a key,
    arrays and scalars replace. Neither argument is modified."""
    if not isinstance(patch, Mapping) or not isinstance(current, Mapping):
        return copy.deepcopy(patch)
    result = copy.deepcopy(dict(current))
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result
