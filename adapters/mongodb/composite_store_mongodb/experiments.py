"""The experiments domain on MongoDB: experiment runs, their per-item results, review counts."""

from __future__ import annotations

from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

from composite_store.domains.experiments import (
    ExperimentQuery,
    ExperimentsDomain,
    ExperimentUpdate,
    ResultConflict,
    ResultQuery,
    ResultUpdate,
)
from composite_store.records.experiments import Experiment, ExperimentResult
from composite_store.schema import table
from composite_store_mongodb.cas import update_document
from composite_store_mongodb.connection import Document, Session
from composite_store_mongodb.documents import NO_ID, document, from_document
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of

__all__ = ["MongoExperiments"]

EXPERIMENTS, RESULTS = table("experiments"), table("experiment_results")


class MongoExperiments(MongoDomain, ExperimentsDomain):
    """Experiments keyed by ``id``; results keyed by ``id`` and unique per (experiment, item)."""

    # -- experiments -----------------------------------------------------------------------------

    async def _insert_experiment(self, experiment: Experiment) -> bool:
        coll = self.c("experiments")

        async def insert(_: Session) -> bool:
            try:
                await coll.insert_one(document(EXPERIMENTS, experiment))
            except DuplicateKeyError:
                return False
            return True

        return await self.conn.run(insert)

    async def _get_experiment(self, experiment_id: str) -> Experiment | None:
        coll = self.c("experiments")
        doc = await self.conn.run(lambda _: coll.find_one({"id": experiment_id}, NO_ID))
        return from_document(Experiment, doc) if doc is not None else None

    async def _update_experiment(
        self, experiment_id: str, update: ExperimentUpdate
    ) -> Experiment | None:
        async def compute(current: Document) -> Document:
            return document(EXPERIMENTS, update(from_document(Experiment, current)))

        new = await update_document(
            self.conn, self.c("experiments"), EXPERIMENTS, {"id": experiment_id}, compute
        )
        return from_document(Experiment, new) if new is not None else None

    async def _list_experiments(self, query: ExperimentQuery) -> tuple[list[Experiment], int]:
        given = {
            "datasetId": query.dataset_id,
            "targetType": query.target_type,
            "targetId": query.target_id,
            "status": query.status,
        }
        docs, total = await page_of(
            self.conn,
            self.c("experiments"),
            {k: v for k, v in given.items() if v is not None},
            [("createdAt", DESCENDING), ("id", DESCENDING)],
            query.window,
            True,
        )
        return [from_document(Experiment, d) for d in docs], total or 0

    async def _delete_experiment(self, experiment_id: str) -> None:
        experiments, results = self.c("experiments"), self.c("experiment_results")

        async def delete(session: Session) -> None:
            await results.delete_many({"experimentId": experiment_id}, session=session)
            await experiments.delete_one({"id": experiment_id}, session=session)

        await self.conn.run(delete, atomic=True)

    # -- results ---------------------------------------------------------------------------------

    async def _insert_result(self, result: ExperimentResult) -> ResultConflict | None:
        experiments, results = self.c("experiments"), self.c("experiment_results")
        doc = document(RESULTS, result)

        async def insert(session: Session) -> ResultConflict | None:
            # The unique indexes refuse a taken id or item even when a concurrent writer gets
            # between these reads and the insert (that surfaces as ConflictError).
            if await experiments.find_one(
                {"id": result.experiment_id}, {"_id": 1}, session=session
            ) is None:
                return "missing_experiment"
            if await results.find_one({"id": result.id}, {"_id": 1}, session=session):
                return "id_taken"
            taken = {"experimentId": result.experiment_id, "itemId": result.item_id}
            if await results.find_one(taken, {"_id": 1}, session=session):
                return "item_taken"
            await results.insert_one(dict(doc), session=session)
            return None

        return await self.conn.run(insert, atomic=True)

    async def _get_result(self, result_id: str) -> ExperimentResult | None:
        coll = self.c("experiment_results")
        doc = await self.conn.run(lambda _: coll.find_one({"id": result_id}, NO_ID))
        return from_document(ExperimentResult, doc) if doc is not None else None

    async def _update_result(
        self, result_id: str, update: ResultUpdate
    ) -> ExperimentResult | None:
        async def compute(current: Document) -> Document:
            return document(RESULTS, update(from_document(ExperimentResult, current)))

        new = await update_document(
            self.conn, self.c("experiment_results"), RESULTS, {"id": result_id}, compute
        )
        return from_document(ExperimentResult, new) if new is not None else None

    async def _list_results(self, query: ResultQuery) -> tuple[list[ExperimentResult], int]:
        conditions: dict[str, Any] = {}
        if query.experiment_id is not None:
            conditions["experimentId"] = query.experiment_id
        if query.status is not None:
            conditions["status"] = query.status
        docs, total = await page_of(
            self.conn,
            self.c("experiment_results"),
            conditions,
            [("startedAt", ASCENDING), ("id", ASCENDING)],
            query.window,
            True,
        )
        return [from_document(ExperimentResult, d) for d in docs], total or 0

    async def _delete_results(self, experiment_id: str) -> None:
        coll = self.c("experiment_results")
        await self.conn.run(lambda _: coll.delete_many({"experimentId": experiment_id}))

    async def _review_groups(self) -> list[tuple[str, str | None, int]]:
        coll = self.c("experiment_results")
        pipeline = [
            {"$group": {"_id": {"e": "$experimentId", "s": "$status"}, "n": {"$sum": 1}}}
        ]

        async def read(_: Session) -> list[Document]:
            return await (await coll.aggregate(pipeline)).to_list()

        return [
            (g["_id"]["e"], g["_id"].get("s"), int(g["n"])) for g in await self.conn.run(read)
        ]
