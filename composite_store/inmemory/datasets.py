"""The datasets domain in process memory (the reference implementation)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from composite_store.domains.datasets import DatasetsDomain, DatasetUpdate, ItemQuery
from composite_store.inmemory.base import InMemoryDomain, paginate
from composite_store.inmemory.physical import Layout
from composite_store.records.datasets import Dataset, DatasetItem, DatasetVersion
from composite_store.rules.item_history import Planner, VersionPlan, is_current, visible_at
from composite_store.rules.paging import Window

__all__ = ["InMemoryDatasets"]

_NEVER = datetime.min.replace(tzinfo=UTC)


def _json_text(value: Any) -> str:
    # The text SQLite holds for the value, so that search matches the same items there.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _matches(row: DatasetItem, needle: str) -> bool:
    if needle in _json_text(row.input).lower():
        return True
    return row.ground_truth is not None and needle in _json_text(row.ground_truth).lower()


def _newest_first(row: Dataset | DatasetItem) -> tuple[datetime, str]:
    return (row.created_at or _NEVER, row.id)


class InMemoryDatasets(InMemoryDomain, DatasetsDomain):
    """Datasets, item rows keyed by (id, datasetVersion) and the version log, in dictionaries."""

    tables = ("datasets", "dataset_items", "dataset_versions")
    layouts = {
        "datasets": Layout(Dataset, ("id",)),
        "dataset_items": Layout(DatasetItem, ("id", "datasetVersion")),
        "dataset_versions": Layout(DatasetVersion, ("id",), unique=(("datasetId", "version"),)),
    }

    @property
    def _datasets(self) -> dict[str, Dataset]:
        return self.data.table("datasets")

    @property
    def _items(self) -> dict[tuple[str, int], DatasetItem]:
        return self.data.table("dataset_items")

    @property
    def _versions(self) -> dict[str, DatasetVersion]:
        return self.data.table("dataset_versions")

    def _rows_of(self, dataset_id: str) -> list[DatasetItem]:
        return [row for row in self._items.values() if row.dataset_id == dataset_id]

    # -- datasets ----------------------------------------------------------------------------------

    async def _insert_dataset(self, dataset: Dataset) -> bool:
        if dataset.id in self._datasets:
            return False
        self._datasets[dataset.id] = dataset.model_copy(deep=True)
        return True

    async def _get_dataset(self, dataset_id: str) -> Dataset | None:
        found = self._datasets.get(dataset_id)
        return found.model_copy(deep=True) if found is not None else None

    async def _update_dataset(self, dataset_id: str, update: DatasetUpdate) -> Dataset | None:
        current = self._datasets.get(dataset_id)
        if current is None:
            return None

        def items() -> list[DatasetItem]:
            return [r.model_copy(deep=True) for r in self._rows_of(dataset_id) if is_current(r)]

        updated = update(current.model_copy(deep=True), items)
        self._datasets[dataset_id] = updated.model_copy(deep=True)
        return updated

    async def _delete_dataset(self, dataset_id: str) -> None:
        self._datasets.pop(dataset_id, None)
        for key in [k for k, row in self._items.items() if row.dataset_id == dataset_id]:
            del self._items[key]
        for vid in [k for k, v in self._versions.items() if v.dataset_id == dataset_id]:
            del self._versions[vid]

    async def _list_datasets(self, window: Window) -> tuple[list[Dataset], int]:
        found = list(self._datasets.values())
        rows = paginate(found, _newest_first, descending=True, window=window)
        return [r.model_copy(deep=True) for r in rows], len(found)

    # -- items -------------------------------------------------------------------------------------

    async def _apply_items(
        self, dataset_id: str, item_ids: Sequence[str], planner: Planner
    ) -> VersionPlan | None:
        # No await between reading and writing: the whole call is atomic on the event loop.
        dataset = self._datasets.get(dataset_id)
        wanted = set(item_ids)
        latest = {
            row.id: row.model_copy(deep=True)
            for row in self._items.values()
            if row.id in wanted and row.valid_to is None
        }
        plan = planner(dataset.model_copy(deep=True) if dataset else None, latest)
        if plan is None:
            return None
        target = self._datasets[plan.dataset_id]
        self._datasets[plan.dataset_id] = target.model_copy(update={"version": plan.version})
        closing = set(plan.close)
        for key, row in self._items.items():
            if row.id in closing and row.valid_to is None:
                self._items[key] = row.model_copy(update={"valid_to": plan.version})
        for row in plan.insert:
            self._items[(row.id, row.dataset_version)] = row.model_copy(deep=True)
        self._versions[plan.log.id] = plan.log.model_copy()
        return plan

    async def _get_item(self, item_id: str, version: int | None) -> DatasetItem | None:
        for row in self._items.values():
            if row.id != item_id or row.is_deleted:
                continue
            if (row.valid_to is None) if version is None else (row.dataset_version == version):
                return row.model_copy(deep=True)
        return None

    async def _list_items(self, query: ItemQuery) -> tuple[list[DatasetItem], int | None]:
        version = query.version
        found = [
            row
            for row in self._rows_of(query.dataset_id)
            if (is_current(row) if version is None else visible_at(row, version))
        ]
        if query.search is not None:
            needle = query.search.lower()
            found = [row for row in found if _matches(row, needle)]
        rows = paginate(found, _newest_first, descending=True, window=query.window)
        return [r.model_copy(deep=True) for r in rows], len(found) if query.count else None

    async def _item_history(self, item_id: str) -> list[DatasetItem]:
        rows = [row for row in self._items.values() if row.id == item_id]
        rows.sort(key=lambda r: r.dataset_version, reverse=True)
        return [r.model_copy(deep=True) for r in rows]

    async def _list_versions(
        self, dataset_id: str, window: Window
    ) -> tuple[list[DatasetVersion], int]:
        found = [v for v in self._versions.values() if v.dataset_id == dataset_id]
        rows = paginate(found, lambda v: v.version, descending=True, window=window)
        return [v.model_copy() for v in rows], len(found)
