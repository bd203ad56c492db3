"""Pure read-modify-write rules of workflow step results and state updates (Mastra's)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

__all__ = ["apply_state", "apply_step_result", "empty_snapshot"]


def empty_snapshot(run_id: str) -> dict[str, Any]:
    """The snapshot Mastra starts from when a step result arrives before any snapshot."""
    return {
        "context": {},
        "activePaths": [],
        "activeStepsPath": {},
        "timestamp": int(time.time() * 1000),
        "suspendedPaths": {},
        "resumeLabels": {},
        "serializedStepGraph": [],
        "value": {},
        "waitingPaths": {},
        "status": "pending",
        "runId": run_id,
        "requestContext": {},
    }


def apply_step_result(
    snapshot: Mapping[str, Any] | None,
    *,
    run_id: str,
    step_id: str,
    result: Any,
    request_context: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Record ``result`` under ``context[step_id]`` and merge ``request_context``."""
    updated = dict(snapshot) if snapshot is not None else empty_snapshot(run_id)
    updated["context"] = {**(updated.get("context") or {}), step_id: result}
    updated["requestContext"] = {
        **(updated.get("requestContext") or {}),
        **(request_context or {}),
    }
    return updated


def apply_state(
    snapshot: Mapping[str, Any] | None, opts: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Shallow-merge ``opts`` into the snapshot; a missing snapshot (or one without context)
    stays missing."""
    if snapshot is None or snapshot.get("context") is None:
        return None
    return {**snapshot, **opts}
