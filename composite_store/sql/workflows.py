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
from composite_store.sql.domain import SHORT_PAGE, SqlDomain
from composite_store.sql.engine import Prepared
from composite_store.sql.totals import TOTAL, with_total

__all__ = ["SqlWorkflows"]

SNAPSHOTS = table("workflow_snapshot")
KEY = ["workflow_name", "run_id"]


#: Which filters a runs query has (workflow name, resource, status, start, end).
Filters = tuple[bool, bool, bool, bool, bool]


def _run_filters(query: RunQuery) -> Filters:
    """Which filters a runs query has: the shape of its statements."""
    created = query.created
    return (
        query.workflow_name is not None,
        query.resource_id is not None,
        query.status is not None,
        created is not None and created.start is not None,
        created is not None and created.end is not None,
    )


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
        # One upsert: its own transaction (one round trip), run inline on SQLite.
        await self.save_rows("workflow_snapshot", [row], KEY, keep)

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

        return stmt.record_of(WorkflowRun, await self.db.fetch(stmt, values))

    async def _list_runs(self, query: RunQuery) -> tuple[list[WorkflowRun], int | None]:
        page, values = self.runs_page(query)
        count = self._runs_count(_run_filters(query))

        w = query.window
        # One statement, the total in it (sql.totals); a page past the end counts alone.
        found, total = await self.read_counted(
            page, count, values, counted=query.count,
            short=w.fetch is not None and w.fetch <= SHORT_PAGE,
        )
        rows = page.mappings(found)
        if query.count:
            for r in rows:
                del r[TOTAL]
        return [from_row(WorkflowRun, r) for r in rows], total

    def runs_page(self, query: RunQuery) -> tuple[Prepared, dict[str, Any]]:
        """The prepared page statement of ``list_workflow_runs`` and its values
        (``bench.explain`` shows its plan)."""
        w = query.window
        stmt = self._runs_page(_run_filters(query), w.limit is not None, query.count)
        values: dict[str, Any] = {
            "workflow_name": query.workflow_name,
            "rid": query.resource_id,
            "status": query.status,
            "start": query.created.start if query.created is not None else None,
            "end": query.created.end if query.created is not None else None,
        }
        if w.limit is not None:
            values.update(offset=w.offset, limit=w.fetch)
        return stmt, values

    def _run_conditions(
        self, named: bool, by_resource: bool, by_status: bool, start: bool, end: bool
    ) -> list[Any]:
        tbl = self.tables["workflow_snapshot"]
        where: list[Any] = []
        if named:
            where.append(tbl.c.workflow_name == sa.bindparam("workflow_name"))
        if by_resource:
            where.append(tbl.c.resourceId == sa.bindparam("rid"))
        if by_status:
            status = self.db.dialect.json_field(tbl.c.snapshot, "status")
            where.append(status == sa.bindparam("status", type_=sa.Text))
        if start:
            where.append(tbl.c.createdAt >= sa.bindparam("start"))
        if end:
            where.append(tbl.c.createdAt <= sa.bindparam("end"))
        return where

    def _runs_counting(
        self, named: bool, by_resource: bool, by_status: bool, start: bool, end: bool
    ) -> sa.Select[Any]:
        where = self._run_conditions(named, by_resource, by_status, start, end)
        return sa.select(sa.func.count()).select_from(self.tables["workflow_snapshot"]).where(
            *where
        )

    def _runs_count(self, filters: Filters) -> Prepared:
        return self.prepared(self._runs_counting, *filters)

    def _runs_page(self, filters: Filters, limited: bool, counted: bool) -> Prepared:
        """Runs newest first (ties by run_id), filtered as ``filters`` say (``_run_filters``);
        ``limited``: from ``:offset``, at most ``:limit``; ``counted``: each row carries the
        total last (``sql.totals``)."""

        def build(
            named: bool,
            by_resource: bool,
            by_status: bool,
            start: bool,
            end: bool,
            limited: bool,
            counted: bool,
        ) -> Executable:
            tbl = self.tables["workflow_snapshot"]
            filters = (named, by_resource, by_status, start, end)
            stmt = (
                self.select_all("workflow_snapshot")
                .where(*self._run_conditions(*filters))
                .order_by(tbl.c.createdAt.desc(), tbl.c.run_id.desc())
            )
            if counted:
                stmt = with_total(stmt, self._runs_counting(*filters))
            if limited:
                stmt = stmt.offset(sa.bindparam("offset")).limit(sa.bindparam("limit"))
            return stmt

        return self.prepared(build, *filters, limited, counted)

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
