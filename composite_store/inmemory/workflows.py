"""The workflows domain in process memory (the reference implementation)."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from composite_store.domains.workflows import RunQuery, SnapshotUpdate, WorkflowsDomain
from composite_store.inmemory.base import InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.workflows import WorkflowRun

__all__ = ["InMemoryWorkflows"]


class InMemoryWorkflows(InMemoryDomain, WorkflowsDomain):
    """Workflow snapshots in a dictionary keyed by (workflow_name, run_id)."""

    tables = ("workflow_snapshot",)
    layouts = {"workflow_snapshot": Layout(WorkflowRun, ("workflow_name", "run_id"))}

    @property
    def _runs(self) -> dict[tuple[str, str], WorkflowRun]:
        return self.data.table("workflow_snapshot")

    async def _persist(self, run: WorkflowRun, *, keep_created_at: bool) -> None:
        key = (run.workflow_name, run.run_id)
        existing = self._runs.get(key)
        if existing is not None and keep_created_at:
            run = run.model_copy(update={"created_at": existing.created_at})
        self._runs[key] = run.model_copy(deep=True)

    async def _get_run(self, run_id: str, workflow_name: str | None) -> WorkflowRun | None:
        found = [
            r
            for (name, rid), r in self._runs.items()
            if rid == run_id and (workflow_name is None or name == workflow_name)
        ]
        if not found:
            return None
        return max(found, key=lambda r: r.created_at).model_copy(deep=True)

    async def _list_runs(self, query: RunQuery) -> tuple[list[WorkflowRun], int | None]:
        def matches(r: WorkflowRun) -> bool:
            if query.workflow_name is not None and r.workflow_name != query.workflow_name:
                return False
            if query.resource_id is not None and r.resource_id != query.resource_id:
                return False
            if query.status is not None and r.snapshot.get("status") != query.status:
                return False
            rng = query.created
            if rng is not None:
                if rng.start is not None and r.created_at < rng.start:
                    return False
                if rng.end is not None and r.created_at > rng.end:
                    return False
            return True

        found = [r for r in self._runs.values() if matches(r)]
        rows = paginate(
            found, lambda r: (r.created_at, r.run_id), descending=True, window=query.window
        )
        return [r.model_copy(deep=True) for r in rows], len(found) if query.count else None

    async def _delete_run(self, run_id: str, workflow_name: str) -> None:
        self._runs.pop((workflow_name, run_id), None)

    async def _update_snapshot(
        self, workflow_name: str, run_id: str, update: SnapshotUpdate, now: datetime
    ) -> dict[str, Any] | None:
        key = (workflow_name, run_id)
        current = self._runs.get(key)
        snapshot = update(copy.deepcopy(current.snapshot) if current is not None else None)
        if snapshot is None:
            return None
        if current is None:
            self._runs[key] = WorkflowRun.model_construct(
                workflow_name=workflow_name,
                run_id=run_id,
                resource_id=None,
                snapshot=copy.deepcopy(snapshot),
                created_at=now,
                updated_at=now,
            )
        else:
            self._runs[key] = current.model_copy(
                update={"snapshot": copy.deepcopy(snapshot), "updated_at": now}
            )
        return snapshot
