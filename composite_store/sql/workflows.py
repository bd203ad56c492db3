"""The workflows domain in SQL, written once for every relational backend."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.expression import Executable

from composite_store.domains.workflows import RunQuery, SnapshotUpdate, WorkflowsDomain
from composite_store.records.trusted import from_row
from composite_store.records.workflows import WorkflowRun
from composite_store.schema import table
from composite_store.sql.domain import SqlDomain

__all__ = ["SqlWorkflows"]

SNAPSHOTS = table("workflow_snapshot")
KEY = ["workflow_name", "run_id"]


class SqlWorkflows(SqlDomain, WorkflowsDomain):
    """Workflow run snapshots on a relational backend."""

    async def _persist(self, run: WorkflowRun, *, keep_created_at: bool) -> None:
        # The stored row read off the record's attributes: stored() (model_dump) would copy
        # the whole snapshot once more (~25 us for 5 KB), and it is only encoded from here.
        row = self.db.values(
            SNAPSHOTS,
            {
                "workflow_name": run.workflow_name,
                "run_id": run.run_id,
                "resourceId": run.resource_id,
                "snapshot": run.snapshot,
                "createdAt": run.created_at,
                "updatedAt": run.updated_at,
            },
        )
        keep = [c for c in ("createdAt", "createdAtZ") if keep_created_at and c in row]
        [(stmt, values)] = self.upsert("workflow_snapshot", [row], KEY, keep)
        # One upsert: its own transaction (one round trip), run inline on SQLite.
        await self.db.run(
            lambda conn: stmt.execute(conn, values), write=True, single=True, short=True
        )

    async def _get_run(self, run_id: str, workflow_name: str | None) -> WorkflowRun | None:
        def build(named: bool) -> Executable:
            tbl = self.tables["workflow_snapshot"]
            stmt = self.select_all("workflow_snapshot").where(
                tbl.c.run_id == sa.bindparam("run_id")
            )
            if named:
                stmt = stmt.where(tbl.c.workflow_name == sa.bindparam("workflow_name"))
            # A bound LIMIT: Oracle renders a literal one into the SQL at execution.
            return stmt.order_by(tbl.c.createdAt.desc()).limit(sa.bindparam("limit"))

        stmt = self.prepared(build, workflow_name is not None)
        values = {"run_id": run_id, "workflow_name": workflow_name, "limit": 1}

        return await self.db.run(
            lambda conn: stmt.record(conn, WorkflowRun, values), single=True, short=True
        )

    async def _list_runs(self, query: RunQuery) -> tuple[list[WorkflowRun], int | None]:
        stmt, count = self.runs_statements(query)
        return await self.read_page(WorkflowRun, stmt, count if query.count else None)

    def runs_statements(self, query: RunQuery) -> tuple[sa.Select[Any], sa.Select[Any]]:
        """The page and count statements of ``list_workflow_runs`` (``bench.explain`` shows
        their plans)."""
        tbl = self.tables["workflow_snapshot"]
        where = []
        if query.workflow_name is not None:
            where.append(tbl.c.workflow_name == query.workflow_name)
        if query.resource_id is not None:
            where.append(tbl.c.resourceId == query.resource_id)
        if query.status is not None:
            where.append(self.db.dialect.json_field(tbl.c.snapshot, "status") == query.status)
        if query.created is not None:
            if query.created.start is not None:
                where.append(tbl.c.createdAt >= query.created.start)
            if query.created.end is not None:
                where.append(tbl.c.createdAt <= query.created.end)
        stmt = (
            self.select_all("workflow_snapshot")
            .where(*where)
            .order_by(tbl.c.createdAt.desc(), tbl.c.run_id.desc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)
        return stmt, count

    async def _delete_run(self, run_id: str, workflow_name: str) -> None:
        tbl = self.tables["workflow_snapshot"]
        stmt = tbl.delete().where(tbl.c.run_id == run_id, tbl.c.workflow_name == workflow_name)
        await self.db.run(lambda conn: conn.execute(stmt), write=True, single=True, short=True)

    async def _update_snapshot(
        self, workflow_name: str, run_id: str, update: SnapshotUpdate, now: datetime
    ) -> dict[str, Any] | None:
        tbl = self.tables["workflow_snapshot"]
        select = self.select_all("workflow_snapshot").where(
            tbl.c.workflow_name == workflow_name, tbl.c.run_id == run_id
        )
        if self.db.dialect.supports_for_update:
            select = select.with_for_update()

        def apply(conn: Connection) -> dict[str, Any] | None:
            row = conn.execute(select).mappings().first()
            if row is None:
                snapshot = update(None)
                if snapshot is None:
                    return None
                run = WorkflowRun.model_construct(
                    workflow_name=workflow_name,
                    run_id=run_id,
                    resource_id=None,
                    snapshot=snapshot,
                    created_at=now,
                    updated_at=now,
                )
                try:
                    # Where writers lock rows rather than the database, another one may
                    # create the run between our SELECT and INSERT: then lock and update it.
                    with conn.begin_nested():
                        conn.execute(tbl.insert().values(self.db.values(SNAPSHOTS, run.stored())))
                    return snapshot
                except sa.exc.IntegrityError:
                    row = conn.execute(select).mappings().first()
                    if row is None:
                        raise
            current = from_row(WorkflowRun, row)
            snapshot = update(current.snapshot)
            if snapshot is None:
                return None
            conn.execute(
                tbl.update()
                .where(tbl.c.workflow_name == workflow_name, tbl.c.run_id == run_id)
                .values(snapshot=snapshot, **self.db.timestamp_values(SNAPSHOTS, "updatedAt", now))
            )
            return snapshot

        return await self.db.run(apply, write=True)
