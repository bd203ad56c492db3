"""The experiments domain in SQL, written once for every relational backend."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store.domains.experiments import (
    ExperimentQuery,
    ExperimentsDomain,
    ExperimentUpdate,
    ResultConflict,
    ResultQuery,
    ResultUpdate,
)
from composite_store.records.experiments import Experiment, ExperimentResult
from composite_store.records.trusted import from_row
from composite_store.schema import table
from composite_store.sql.domain import SqlDomain

__all__ = ["SqlExperiments"]

EXPERIMENTS, RESULTS = table("experiments"), table("experiment_results")


class SqlExperiments(SqlDomain, ExperimentsDomain):
    """Experiments and their results on a relational backend."""

    # -- helpers ---------------------------------------------------------------------------------

    def _row(self, conn: Connection, base: str, key: str, *, lock: bool = False) -> Any:
        stmt = self.select_all(base).where(self.tables[base].c.id == key)
        if lock and self.db.dialect.supports_for_update:
            stmt = stmt.with_for_update()
        return conn.execute(stmt).mappings().first()

    # -- experiments -------------------------------------------------------------------------------

    async def _insert_experiment(self, experiment: Experiment) -> bool:
        tbl = self.tables["experiments"]
        row = self.db.values(EXPERIMENTS, experiment.stored())

        def insert(conn: Connection) -> bool:
            if conn.execute(sa.select(tbl.c.id).where(tbl.c.id == experiment.id)).first():
                return False
            conn.execute(tbl.insert().values(row))
            return True

        return await self.db.run(insert, write=True)

    async def _get_experiment(self, experiment_id: str) -> Experiment | None:
        def read(conn: Connection) -> Experiment | None:
            row = self._row(conn, "experiments", experiment_id)
            return from_row(Experiment, row) if row is not None else None

        return await self.db.run(read)

    async def _update_experiment(
        self, experiment_id: str, update: ExperimentUpdate
    ) -> Experiment | None:
        tbl = self.tables["experiments"]

        def apply(conn: Connection) -> Experiment | None:
            row = self._row(conn, "experiments", experiment_id, lock=True)
            if row is None:
                return None
            updated = update(from_row(Experiment, row))
            values = self.db.values(EXPERIMENTS, updated.stored())
            del values["id"]
            conn.execute(tbl.update().where(tbl.c.id == experiment_id).values(values))
            return updated

        return await self.db.run(apply, write=True)

    async def _list_experiments(self, query: ExperimentQuery) -> tuple[list[Experiment], int]:
        tbl = self.tables["experiments"]
        filters = {
            "datasetId": query.dataset_id,
            "targetType": query.target_type,
            "targetId": query.target_id,
            "status": query.status,
        }
        where = [tbl.c[name] == value for name, value in filters.items() if value is not None]
        stmt = (
            self.select_all("experiments")
            .where(*where)
            .order_by(tbl.c.createdAt.desc(), tbl.c.id.desc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(tbl).where(*where)

        return await self.read_page(Experiment, stmt, count)

    async def _delete_experiment(self, experiment_id: str) -> None:
        tbl, results = self.tables["experiments"], self.tables["experiment_results"]

        def delete(conn: Connection) -> None:
            conn.execute(results.delete().where(results.c.experimentId == experiment_id))
            conn.execute(tbl.delete().where(tbl.c.id == experiment_id))

        await self.db.run(delete, write=True)

    # -- results -----------------------------------------------------------------------------------

    async def _insert_result(self, result: ExperimentResult) -> ResultConflict | None:
        results = self.tables["experiment_results"]
        row = self.db.values(RESULTS, result.stored())

        def insert(conn: Connection) -> ResultConflict | None:
            # Locking the experiment row keeps a concurrent delete_experiment from orphaning
            # the result between this check and the insert.
            if self._row(conn, "experiments", result.experiment_id, lock=True) is None:
                return "missing_experiment"
            if conn.execute(sa.select(results.c.id).where(results.c.id == result.id)).first():
                return "id_taken"
            same_item = sa.select(results.c.id).where(
                results.c.experimentId == result.experiment_id,
                results.c.itemId == result.item_id,
            )
            if conn.execute(same_item).first():
                return "item_taken"
            conn.execute(results.insert().values(row))
            return None

        return await self.db.run(insert, write=True)

    async def _get_result(self, result_id: str) -> ExperimentResult | None:
        def read(conn: Connection) -> ExperimentResult | None:
            row = self._row(conn, "experiment_results", result_id)
            return from_row(ExperimentResult, row) if row is not None else None

        return await self.db.run(read)

    async def _update_result(
        self, result_id: str, update: ResultUpdate
    ) -> ExperimentResult | None:
        results = self.tables["experiment_results"]

        def apply(conn: Connection) -> ExperimentResult | None:
            row = self._row(conn, "experiment_results", result_id, lock=True)
            if row is None:
                return None
            updated = update(from_row(ExperimentResult, row))
            values = self.db.values(RESULTS, updated.stored())
            del values["id"]
            conn.execute(results.update().where(results.c.id == result_id).values(values))
            return updated

        return await self.db.run(apply, write=True)

    async def _list_results(self, query: ResultQuery) -> tuple[list[ExperimentResult], int]:
        results = self.tables["experiment_results"]
        where = []
        if query.experiment_id is not None:
            where.append(results.c.experimentId == query.experiment_id)
        if query.status is not None:
            where.append(results.c.status == query.status)
        stmt = (
            self.select_all("experiment_results")
            .where(*where)
            .order_by(results.c.startedAt.asc(), results.c.id.asc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(results).where(*where)

        return await self.read_page(ExperimentResult, stmt, count)

    async def _delete_results(self, experiment_id: str) -> None:
        results = self.tables["experiment_results"]
        stmt = results.delete().where(results.c.experimentId == experiment_id)
        await self.db.run(lambda conn: conn.execute(stmt), write=True)

    async def _review_groups(self) -> list[tuple[str, str | None, int]]:
        results = self.tables["experiment_results"]
        stmt = sa.select(
            results.c.experimentId, results.c.status, sa.func.count()
        ).group_by(results.c.experimentId, results.c.status)

        def read(conn: Connection) -> list[tuple[str, str | None, int]]:
            return [(e, s, int(n)) for e, s, n in conn.execute(stmt)]

        return await self.db.run(read)
