"""The workflows domain contract: workflow run snapshots."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from composite_store.domains.args import json_object, optional_id, optional_text, require_id
from composite_store.domains.base import Domain
from composite_store.errors import ValidationError
from composite_store.records.base import coerce, now_utc
from composite_store.records.workflows import WorkflowRun
from composite_store.rules.paging import Window, build_page, window
from composite_store.rules.workflow_state import apply_state, apply_step_result
from composite_store.types import DateRange, Page, PerPage

__all__ = ["RunQuery", "SnapshotUpdate", "WorkflowsDomain"]

#: A pure function from the stored snapshot (or None) to the new one (None: leave unchanged).
SnapshotUpdate = Callable[[dict[str, Any] | None], dict[str, Any] | None]


@dataclass(frozen=True, slots=True)
class RunQuery:
    """A normalised ``list_workflow_runs`` request, handed to the backend hook."""

    workflow_name: str | None
    resource_id: str | None
    status: str | None
    created: DateRange | None
    window: Window
    count: bool


def _snapshot(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValidationError(f"snapshot must be a dict, got {type(value).__name__}")
    return dict(value)


class WorkflowsDomain(Domain):
    """Workflow run snapshots keyed by (workflow_name, run_id)."""

    domain: ClassVar[str] = "workflows"

    async def persist_workflow_snapshot(
        self,
        *,
        workflow_name: str,
        run_id: str,
        snapshot: Mapping[str, Any],
        resource_id: str | None = None,
        created_at: datetime | str | None = None,
        updated_at: datetime | str | None = None,
    ) -> None:
        """Insert or replace the snapshot of a run; an update keeps the original createdAt."""
        self._check()
        now = now_utc()
        run = coerce(
            WorkflowRun,
            {
                "workflow_name": require_id(workflow_name, "workflow_name"),
                "run_id": require_id(run_id, "run_id"),
                "resource_id": optional_id(resource_id, "resource_id"),
                "snapshot": _snapshot(snapshot),
                "created_at": created_at or now,
                "updated_at": updated_at or now,
            },
            what="workflow run",
        )
        await self._persist(run, keep_created_at=created_at is None)

    async def load_workflow_snapshot(
        self, *, workflow_name: str, run_id: str
    ) -> dict[str, Any] | None:
        """Return the stored snapshot, or None."""
        self._check()
        run = await self._get_run(
            require_id(run_id, "run_id"), require_id(workflow_name, "workflow_name")
        )
        return run.snapshot if run is not None else None

    async def list_workflow_runs(
        self,
        *,
        workflow_name: str | None = None,
        from_date: datetime | str | None = None,
        to_date: datetime | str | None = None,
        resource_id: str | None = None,
        status: str | None = None,
        page: int | None = None,
        per_page: PerPage | None = None,
        include_total: bool = True,
    ) -> Page[WorkflowRun]:
        """List runs, newest first; without ``page``/``per_page`` every run (``per_page=False``).

        ``from_date``/``to_date`` bound ``createdAt`` inclusively; ``status`` matches
        ``snapshot.status``.
        """
        self._check()
        optional_id(workflow_name, "workflow_name")
        optional_id(resource_id, "resource_id")
        optional_text(status, "status")
        if page is None and per_page is None:
            w = window(0, False, default=False)
        else:
            w = window(page, per_page, default=100 if per_page is None else per_page)
        created = (
            coerce(DateRange, {"start": from_date, "end": to_date}, what="date range")
            if from_date is not None or to_date is not None
            else None
        )
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_runs(
            RunQuery(workflow_name, resource_id, status, created, w, include_total)
        )
        return build_page(rows, w, total)

    async def get_workflow_run_by_id(
        self, *, run_id: str, workflow_name: str | None = None
    ) -> WorkflowRun | None:
        """Return the run with this id (in ``workflow_name`` when given), or None."""
        self._check()
        return await self._get_run(
            require_id(run_id, "run_id"), optional_id(workflow_name, "workflow_name")
        )

    async def delete_workflow_run_by_id(self, *, run_id: str, workflow_name: str) -> None:
        """Delete one run; a missing run is not an error."""
        self._check()
        await self._delete_run(
            require_id(run_id, "run_id"), require_id(workflow_name, "workflow_name")
        )

    async def update_workflow_results(
        self,
        *,
        workflow_name: str,
        run_id: str,
        step_id: str,
        result: Any,
        request_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record one step's result in ``snapshot.context`` and merge ``request_context``;
        return the whole context. Creates the snapshot when missing.

        Atomic under concurrent writers where ``capabilities.concurrent_updates``.
        """
        self._check()
        require_id(step_id, "step_id")
        rid = require_id(run_id, "run_id")
        json_object({"result": result}, "result")
        merged_context = (
            json_object(request_context, "request_context")
            if request_context is not None
            else None
        )

        def update(current: dict[str, Any] | None) -> dict[str, Any]:
            # The merged snapshot is checked too (it nests the result two levels down), inside
            # the backend's read-modify-write and before its write.
            return json_object(
                apply_step_result(
                    current,
                    run_id=rid,
                    step_id=step_id,
                    result=result,
                    request_context=merged_context,
                ),
                "snapshot",
            )

        snapshot = await self._update_snapshot(
            require_id(workflow_name, "workflow_name"), rid, update, now_utc()
        )
        assert snapshot is not None  # update() never declines
        context: dict[str, Any] = snapshot.get("context", {})
        return context

    async def update_workflow_state(
        self, *, workflow_name: str, run_id: str, opts: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """Shallow-merge ``opts`` into the snapshot and return it; None for a missing run.

        Atomic under concurrent writers where ``capabilities.concurrent_updates``.
        """
        self._check()
        patch = json_object(opts, "opts")

        def update(current: dict[str, Any] | None) -> dict[str, Any] | None:
            merged = apply_state(current, patch)
            return None if merged is None else json_object(merged, "snapshot")

        return await self._update_snapshot(
            require_id(workflow_name, "workflow_name"),
            require_id(run_id, "run_id"),
            update,
            now_utc(),
        )

    # -- hooks -----------------------------------------------------------------------------------

    @abstractmethod
    async def _persist(self, run: WorkflowRun, *, keep_created_at: bool) -> None:
        """Upsert by (workflow_name, run_id); with ``keep_created_at`` an existing row keeps its
        createdAt."""

    @abstractmethod
    async def _get_run(self, run_id: str, workflow_name: str | None) -> WorkflowRun | None:
        """Return the run or None (any workflow when ``workflow_name`` is None)."""

    @abstractmethod
    async def _list_runs(self, query: RunQuery) -> tuple[list[WorkflowRun], int | None]:
        """Return up to ``limit + 1`` runs from ``offset``, newest first (tie-break by run_id),
        and the total when ``query.count``."""

    @abstractmethod
    async def _delete_run(self, run_id: str, workflow_name: str) -> None:
        """Delete one run."""

    @abstractmethod
    async def _update_snapshot(
        self, workflow_name: str, run_id: str, update: SnapshotUpdate, now: datetime
    ) -> dict[str, Any] | None:
        """Atomically apply ``update`` to the stored snapshot and store the result (creating the
        run when missing) with updatedAt=``now``; return the new snapshot. When ``update``
        returns None nothing is written and None is returned."""
