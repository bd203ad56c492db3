"""The datasets domain on MongoDB: datasets, SCD-2 versioned items and the version log."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pymongo import DESCENDING
from pymongo.errors import DuplicateKeyError

from composite_store.domains.datasets import DatasetsDomain, DatasetUpdate, ItemQuery
from composite_store.records.datasets import Dataset, DatasetItem, DatasetVersion
from composite_store.rules.item_history import Planner, VersionPlan
from composite_store.rules.paging import Window
from composite_store.schema import table
from composite_store_mongodb.cas import MAX_ATTEMPTS, update_document, with_loader
from composite_store_mongodb.connection import Document, Session
from composite_store_mongodb.documents import NO_ID, document, from_document
from composite_store_mongodb.domain import MongoDomain
from composite_store_mongodb.paging import page_of
from composite_store_mongodb.queries import range_condition

__all__ = ["MongoDatasets"]

DATASETS, ITEMS, VERSIONS = table("datasets"), table("dataset_items"), table("dataset_versions")
_NEWEST_FIRST = [("createdAt", DESCENDING), ("id", DESCENDING)]


def _visible(dataset_id: str, version: int | None) -> dict[str, Any]:
    """The live rows of the dataset: current ones, or those dataset version ``version`` sees."""
    if version is None:
        return {"datasetId": dataset_id, "validTo": None, "isDeleted": False}
    return {
        "datasetId": dataset_id,
        "datasetVersion": range_condition(None, version),
        "isDeleted": False,
        "$or": [{"validTo": None}, {"validTo": {"$gt": version}}],
    }


def _json_text(value: Any) -> str:
    # The JSON text SQLite holds for the value, so that search matches the same items.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _matches(doc: Document, needle: str) -> bool:
    if needle in _json_text(doc.get("input")).lower():
        return True
    truth = doc.get("groundTruth")
    return truth is not None and needle in _json_text(truth).lower()


class MongoDatasets(MongoDomain, DatasetsDomain):
    """Datasets by ``id``, item rows by (id, datasetVersion), version log by (datasetId,
    version).

    An item mutation claims the dataset's next version with a compare-and-set on the version it
    read, so concurrent mutations of one dataset serialise on every deployment; on a replica
    set or sharded cluster the whole mutation is one transaction.
    """

    # -- datasets --------------------------------------------------------------------------------

    async def _insert_dataset(self, dataset: Dataset) -> bool:
        coll = self.c("datasets")

        async def insert(_: Session) -> bool:
            try:
                await coll.insert_one(document(DATASETS, dataset))
            except DuplicateKeyError:
                return False
            return True

        return await self.conn.run(insert)

    async def _get_dataset(self, dataset_id: str) -> Dataset | None:
        coll = self.c("datasets")
        doc = await self.conn.run(lambda _: coll.find_one({"id": dataset_id}, NO_ID))
        return from_document(Dataset, doc) if doc is not None else None

    async def _current_items(self, dataset_id: str) -> list[DatasetItem]:
        coll = self.c("dataset_items")
        docs = await self.conn.run(
            lambda _: coll.find(_visible(dataset_id, None), NO_ID).to_list()
        )
        return [from_document(DatasetItem, d) for d in docs]

    async def _update_dataset(self, dataset_id: str, update: DatasetUpdate) -> Dataset | None:
        async def compute(current: Document) -> Document:
            dataset = from_document(Dataset, current)

            async def load(_: None) -> list[DatasetItem]:
                return await self._current_items(dataset_id)

            # The items are read only when the update asks for them (a changed schema); the
            # compare-and-set on every field, the version included, then refuses the write if
            # an item mutation landed in between.
            updated = await with_loader(
                lambda loader: update(dataset, lambda: loader(None)), load
            )
            return document(DATASETS, updated)

        new = await update_document(
            self.conn, self.c("datasets"), DATASETS, {"id": dataset_id}, compute
        )
        return from_document(Dataset, new) if new is not None else None

    async def _delete_dataset(self, dataset_id: str) -> None:
        datasets, items, versions = (
            self.c("datasets"), self.c("dataset_items"), self.c("dataset_versions")
        )

        async def delete(session: Session) -> None:
            await items.delete_many({"datasetId": dataset_id}, session=session)
            await versions.delete_many({"datasetId": dataset_id}, session=session)
            await datasets.delete_one({"id": dataset_id}, session=session)

        await self.conn.run(delete, atomic=True)

    async def _list_datasets(self, window: Window) -> tuple[list[Dataset], int]:
        docs, total = await page_of(self.conn, self.c("datasets"), {}, _NEWEST_FIRST, window, True)
        return [from_document(Dataset, d) for d in docs], total or 0

    # -- items -----------------------------------------------------------------------------------

    async def _apply_items(
        self, dataset_id: str, item_ids: Sequence[str], planner: Planner
    ) -> VersionPlan | None:
        datasets, items, versions = (
            self.c("datasets"), self.c("dataset_items"), self.c("dataset_versions")
        )
        wanted = list(item_ids)

        async def attempt(session: Session) -> tuple[bool, VersionPlan | None]:
            found = await datasets.find_one({"id": dataset_id}, NO_ID, session=session)
            dataset = from_document(Dataset, found) if found is not None else None
            latest = {
                d["id"]: from_document(DatasetItem, d)
                for d in await items.find(
                    {"id": {"$in": wanted}, "validTo": None}, NO_ID, session=session
                ).to_list()
            }
            plan = planner(dataset, latest)
            if plan is None:
                return True, None
            assert dataset is not None  # the planners raise NotFoundError otherwise
            # Claim the next version: only one writer moves the dataset from the version it
            # read, so concurrent mutations of one dataset serialise.
            claimed = await datasets.update_one(
                {"id": plan.dataset_id, "version": dataset.version},
                {"$set": {"version": plan.version}},
                session=session,
            )
            if claimed.matched_count != 1:
                return False, None
            if plan.close:
                await items.update_many(
                    {"id": {"$in": list(plan.close)}, "validTo": None},
                    {"$set": {"validTo": plan.version}},
                    session=session,
                )
            if plan.insert:
                await items.insert_many(
                    [document(ITEMS, row) for row in plan.insert], session=session
                )
            await versions.insert_one(document(VERSIONS, plan.log), session=session)
            return True, plan

        for _ in range(MAX_ATTEMPTS):
            done, plan = await self.conn.run(attempt, atomic=True)
            if done:
                return plan
        raise AssertionError("unreachable: a lost version claim means another one landed")

    async def _get_item(self, item_id: str, version: int | None) -> DatasetItem | None:
        coll = self.c("dataset_items")
        query: dict[str, Any] = {"id": item_id, "isDeleted": False}
        if version is None:
            query["validTo"] = None
        else:
            query["datasetVersion"] = version
        doc = await self.conn.run(lambda _: coll.find_one(query, NO_ID))
        return from_document(DatasetItem, doc) if doc is not None else None

    async def _list_items(self, query: ItemQuery) -> tuple[list[DatasetItem], int | None]:
        coll = self.c("dataset_items")
        conditions = _visible(query.dataset_id, query.version)
        if query.search is None:
            docs, total = await page_of(
                self.conn, coll, conditions, _NEWEST_FIRST, query.window, query.count
            )
            return [from_document(DatasetItem, d) for d in docs], total
        # Search matches the JSON text of input/groundTruth, which MongoDB does not hold: the
        # dataset's visible rows are read (by the datasetId index) and matched here.
        needle = query.search.lower()
        docs = await self.conn.run(
            lambda _: coll.find(conditions, NO_ID).sort(_NEWEST_FIRST).to_list()
        )
        found = [d for d in docs if _matches(d, needle)]
        w = query.window
        end = w.stop
        rows = [from_document(DatasetItem, d) for d in found[w.offset : end]]
        return rows, len(found) if query.count else None

    async def _item_history(self, item_id: str) -> list[DatasetItem]:
        coll = self.c("dataset_items")
        docs = await self.conn.run(
            lambda _: coll.find({"id": item_id}, NO_ID)
            .sort([("datasetVersion", DESCENDING)])
            .to_list()
        )
        return [from_document(DatasetItem, d) for d in docs]

    async def _list_versions(
        self, dataset_id: str, window: Window
    ) -> tuple[list[DatasetVersion], int]:
        docs, total = await page_of(
            self.conn,
            self.c("dataset_versions"),
            {"datasetId": dataset_id},
            [("version", DESCENDING)],
            window,
            True,
        )
        return [from_document(DatasetVersion, d) for d in docs], total or 0
