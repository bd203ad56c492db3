"""SCD-2 versioning of dataset items: what one mutating call writes, and what a version sees.

Every item mutation bumps the dataset's version by exactly one (a batch bumps once) and logs
that version in ``mastra_dataset_versions``. An item's history is a list of rows: a new item
is one row written at the new version; an update closes the current row (``validTo`` = the new
version) and writes a new row; a delete closes it and writes a tombstone (``isDeleted``).

This module is pure: it turns the state a backend read inside its transaction into a
:class:`VersionPlan`, which the backend writes in that same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from composite_store.errors import ConflictError, NotFoundError
from composite_store.records.base import coerce, uuid4_str
from composite_store.records.datasets import Dataset, DatasetItem, DatasetItemInput, DatasetVersion

__all__ = [
    "Planner",
    "VersionPlan",
    "is_current",
    "plan_delete",
    "plan_insert",
    "plan_update",
    "visible_at",
]


@dataclass(frozen=True, slots=True)
class VersionPlan:
    """The writes of one item mutation; a backend applies all of them or none."""

    dataset_id: str
    #: The dataset's new version (its old version plus one).
    version: int
    #: Items whose current row gets ``validTo = version``.
    close: tuple[str, ...]
    #: Rows to insert, all written at ``version``: new items, new item versions, tombstones.
    insert: tuple[DatasetItem, ...]
    #: The ``mastra_dataset_versions`` row logging ``version``.
    log: DatasetVersion

    @property
    def written(self) -> list[DatasetItem]:
        """The live rows this plan writes (tombstones excluded), in request order."""
        return [row for row in self.insert if not row.is_deleted]


#: Build the plan from the dataset (None when it does not exist) and the latest row of each
#: requested item id (its row with ``validTo`` NULL, a tombstone included), or return None to
#: write nothing. Raising aborts the operation before anything is written.
Planner = Callable[[Dataset | None, Mapping[str, DatasetItem]], VersionPlan | None]


def is_current(row: DatasetItem) -> bool:
    """Whether ``row`` is its item's current, live version."""
    return row.valid_to is None and not row.is_deleted


def visible_at(row: DatasetItem, version: int) -> bool:
    """Whether dataset version ``version`` sees ``row``: written at or before it, not yet
    replaced at it, and not a tombstone."""
    return (
        row.dataset_version <= version
        and (row.valid_to is None or row.valid_to > version)
        and not row.is_deleted
    )


def _require(dataset: Dataset | None, dataset_id: str) -> Dataset:
    if dataset is None:
        raise NotFoundError(f"dataset {dataset_id!r} not found")
    return dataset


def _plan(
    dataset: Dataset, close: Sequence[str], rows: Sequence[DatasetItem], now: datetime
) -> VersionPlan:
    version = dataset.version + 1
    log = DatasetVersion.model_construct(
        id=uuid4_str(), dataset_id=dataset.id, version=version, created_at=now
    )
    return VersionPlan(dataset.id, version, tuple(close), tuple(rows), log)


def plan_insert(
    dataset_id: str,
    dataset: Dataset | None,
    latest: Mapping[str, DatasetItem],
    items: Sequence[DatasetItemInput],
    now: datetime,
) -> VersionPlan:
    """Add ``items`` (validated inputs with unique ids) to the dataset as one new version.

    Raises ``NotFoundError`` for a missing dataset and ``ConflictError`` when an id is taken
    (item ids are unique across datasets and versions).
    """
    found = _require(dataset, dataset_id)
    taken = [item.id for item in items if item.id in latest]
    if taken:
        raise ConflictError(
            f"dataset item id(s) already exist: {taken}; omit `id` to get a new UUID"
        )
    version = found.version + 1
    rows = [
        DatasetItem.model_construct(
            id=item.id,
            dataset_id=found.id,
            dataset_version=version,
            valid_to=None,
            is_deleted=False,
            input=item.input,
            ground_truth=item.ground_truth,
            request_context=item.request_context,
            metadata=item.metadata,
            source=item.source,
            created_at=now,
            updated_at=now,
        )
        for item in items
    ]
    return _plan(found, (), rows, now)


def plan_update(
    dataset_id: str,
    dataset: Dataset | None,
    latest: Mapping[str, DatasetItem],
    item_id: str,
    changes: Mapping[str, Any],
    now: datetime,
) -> VersionPlan:
    """Replace the given fields of the item (``changes`` by attribute name) as a new version.

    The new row keeps the item's ``created_at``. Raises ``NotFoundError`` when the dataset is
    missing, or the item is missing, deleted or in another dataset; ``ValidationError`` when a
    changed value is invalid.
    """
    found = _require(dataset, dataset_id)
    current = _live(latest, item_id, dataset_id)
    merged = {
        **current.model_dump(),
        **changes,
        "dataset_version": found.version + 1,
        "valid_to": None,
        "is_deleted": False,
        "updated_at": now,
    }
    row = coerce(DatasetItem, merged, what=f"dataset item {item_id!r}")
    return _plan(found, (item_id,), (row,), now)


def plan_delete(
    dataset_id: str,
    dataset: Dataset | None,
    latest: Mapping[str, DatasetItem],
    item_ids: Sequence[str],
    now: datetime,
    *,
    batch: bool,
) -> VersionPlan | None:
    """Delete items as one new version: close each current row and write its tombstone.

    Missing and already deleted items are skipped; when nothing is left, return None (no
    version is written). A single delete (``batch=False``) raises ``NotFoundError`` for an item
    of another dataset; a batch skips it. A batch raises ``NotFoundError`` for a missing
    dataset even when it deletes nothing.
    """
    if batch:
        _require(dataset, dataset_id)
    targets: list[DatasetItem] = []
    for item_id in dict.fromkeys(item_ids):
        row = latest.get(item_id)
        if row is None or row.is_deleted:
            continue
        if row.dataset_id != dataset_id:
            if batch:
                continue
            raise _foreign(item_id, dataset_id, row.dataset_id)
        targets.append(row)
    if not targets:
        return None
    found = _require(dataset, dataset_id)
    version = found.version + 1
    tombstones = [
        row.model_copy(
            update={
                "dataset_version": version,
                "valid_to": None,
                "is_deleted": True,
                "updated_at": now,
            }
        )
        for row in targets
    ]
    return _plan(found, [row.id for row in targets], tombstones, now)


def _live(latest: Mapping[str, DatasetItem], item_id: str, dataset_id: str) -> DatasetItem:
    row = latest.get(item_id)
    if row is None or row.is_deleted:
        raise NotFoundError(f"dataset item {item_id!r} not found")
    if row.dataset_id != dataset_id:
        raise _foreign(item_id, dataset_id, row.dataset_id)
    return row


def _foreign(item_id: str, dataset_id: str, owner: str) -> NotFoundError:
    return NotFoundError(
        f"dataset item {item_id!r} not found in dataset {dataset_id!r} "
        f"(it belongs to dataset {owner!r})"
    )
