"""The workflows domain on MongoDB: workflow run snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from composite_store.domains.workflows import RunQuery, SnapshotUpdate, WorkflowsDomain
from composite_store.errors import ConflictError
from composite_store.records.workflows import WorkflowRun
from composite_store.schema import table
from composite_store_mongodb.cas import MAX_ATTEMPTS
from composite_store_mongodb.connection import Session
from composite_store_mongodb.documents import NO_ID, document, from_document, literal, literals
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of
from composite_store_mongodb.queries import dated

__all__ = ["MongoWorkflows"]

SNAPSHOTS = table("workflow_snapshot")


class MongoWorkflows(MongoDomain, WorkflowsDomain):
    """Workflow snapshots keyed by the unique index on (workflow_name, run_id)."""

    async def _persist(self, run: WorkflowRun, *, keep_created_at: bool) -> None:
        runs = self.c("workflow_snapshot")
        values = document(SNAPSHOTS, run)
        created = values.pop("createdAt")
        changes = literals(values)
        # One upsert; an existing run keeps its createdAt unless the caller gave one.
        changes["createdAt"] = {"$ifNull": ["$createdAt", created]} if keep_created_at else created
        key = {"workflow_name": run.workflow_name, "run_id": run.run_id}
        await self.conn.run(lambda _: runs.update_one(key, [{"$set": changes}], upsert=True))

    async def _get_run(self, run_id: str, workflow_name: str | None) -> WorkflowRun | None:
        runs = self.c("workflow_snapshot")
        query: dict[str, Any] = {"run_id": run_id}
        if workflow_name is not None:
            query["workflow_name"] = workflow_name
        doc = await self.conn.run(
            lambda _: runs.find_one(query, NO_ID, sort=[("createdAt", DESCENDING)])
        )
        return from_document(WorkflowRun, doc) if doc is not None else None

    async def _list_runs(self, query: RunQuery) -> tuple[list[WorkflowRun], int | None]:
        conditions: dict[str, Any] = {}
        if query.workflow_name is not None:
            conditions["workflow_name"] = query.workflow_name
        if query.resource_id is not None:
            conditions["resourceId"] = query.resource_id
        if query.status is not None:
            conditions["snapshot.status"] = query.status
        created = dated(query.created)
        if created:
            conditions["createdAt"] = created
        docs, total = await page_of(
            self.conn,
            self.c("workflow_snapshot"),
            conditions,
            [("createdAt", DESCENDING), ("run_id", DESCENDING)],
            query.window,
            query.count,
        )
        return [from_document(WorkflowRun, d) for d in docs], total

    async def _delete_run(self, run_id: str, workflow_name: str) -> None:
        runs = self.c("workflow_snapshot")
        key = {"workflow_name": workflow_name, "run_id": run_id}
        await self.conn.run(lambda _: runs.delete_one(key))

    async def _update_snapshot(
        self, workflow_name: str, run_id: str, update: SnapshotUpdate, now: datetime
    ) -> dict[str, Any] | None:
        runs = self.c("workflow_snapshot")
        key = {"workflow_name": workflow_name, "run_id": run_id}

        async def attempt(_: Session) -> tuple[bool, dict[str, Any] | None]:
            """One compare-and-set round: (written or declined, the new snapshot)."""
            doc = await runs.find_one(key, {"_id": 0, "snapshot": 1})
            current: dict[str, Any] | None = doc.get("snapshot") if doc is not None else None
            snapshot = update(current)
            if snapshot is None:
                return True, None
            if doc is None:
                run = WorkflowRun.model_construct(
                    workflow_name=workflow_name,
                    run_id=run_id,
                    resource_id=None,
                    snapshot=snapshot,
                    created_at=now,
                    updated_at=now,
                )
                try:
                    await runs.insert_one(document(SNAPSHOTS, run))
                except DuplicateKeyError:
                    return False, None  # another writer created it first: go again
                return True, snapshot
            # Written only if the stored snapshot is still the one read: a single-document
            # compare-and-set, so concurrent writers never lose each other's changes. ($expr
            # compares values, so keys starting with '$' stay data.)
            result = await runs.update_one(
                {**key, "$expr": {"$eq": ["$snapshot", literal(current)]}},
                [{"$set": {"snapshot": literal(snapshot), "updatedAt": now}}],
            )
            return result.matched_count == 1, snapshot

        for _ in range(MAX_ATTEMPTS):
            done, snapshot = await self.conn.run(attempt)
            if done:
                return snapshot
        raise ConflictError(
            f"workflow run {workflow_name!r}/{run_id!r} kept changing under "
            f"{MAX_ATTEMPTS} concurrent updates; retry the update"
        )
