"""The datasets domain contract: datasets, their SCD-2 versioned items and their version log."""

from __future__ import annotations

from abc import abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from composite_store.domains.args import (
    UNSET,
    given,
    optional_int,
    page_window,
    require_id,
    require_ids,
    require_list,
)
from composite_store.domains.base import Domain
from composite_store.errors import ConflictError, NotFoundError, ValidationError
from composite_store.records.base import coerce, now_utc
from composite_store.records.datasets import Dataset, DatasetItem, DatasetItemInput, DatasetVersion
from composite_store.rules.item_history import (
    Planner,
    VersionPlan,
    plan_delete,
    plan_insert,
    plan_update,
)
from composite_store.rules.item_schemas import ItemValidator, check_schema
from composite_store.rules.paging import Window, build_page, window
from composite_store.types import Page, Pagination

__all__ = ["DatasetUpdate", "DatasetsDomain", "ItemQuery"]

#: Default page size of every datasets listing.
DEFAULT_PER_PAGE = 100

#: A pure function from the stored dataset (and a loader of its current items) to the updated
#: dataset; raising aborts the update before anything is written.
DatasetUpdate = Callable[[Dataset, Callable[[], list[DatasetItem]]], Dataset]


@dataclass(frozen=True, slots=True)
class ItemQuery:
    """A normalised item listing, handed to the backend hook."""

    dataset_id: str
    #: None: the current rows; else the rows dataset version ``version`` sees.
    version: int | None
    #: Case-insensitive substring of the JSON text of ``input`` or ``groundTruth``.
    search: str | None
    window: Window
    count: bool


class DatasetsDomain(Domain):
    """Datasets of examples with versioned items (Mastra's datasets storage).

    Every item mutation bumps the dataset's ``version`` by exactly one (a batch bumps once) and
    logs it in the version list, so any earlier version can be read back (``list_items(
    version=)``, ``get_items_by_version``). ``update_dataset`` does not bump the version.
    Items are checked against the dataset's ``input_schema`` / ``ground_truth_schema`` (JSON
    Schema) inside the write: an invalid item raises ``ValidationError`` and nothing is written.
    """

    domain: ClassVar[str] = "datasets"

    # -- datasets ----------------------------------------------------------------------------------

    async def create_dataset(
        self,
        *,
        name: str,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        input_schema: Mapping[str, Any] | None = None,
        ground_truth_schema: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        target_type: str | None = None,
        target_ids: Sequence[str] | None = None,
        scorer_ids: Sequence[str] | None = None,
        id: str | None = None,
    ) -> Dataset:
        """Create an empty dataset at version 0 (no version is logged) and return it.

        ``id`` defaults to a new UUID. Raises ``ValidationError`` for an invalid schema and
        ``ConflictError`` when ``id`` is taken.
        """
        self._check()
        check_schema(input_schema, what="input_schema")
        check_schema(ground_truth_schema, what="ground_truth_schema")
        now = now_utc()
        fields: dict[str, Any] = {
            "name": name,
            "description": description,
            "metadata": metadata,
            "input_schema": input_schema,
            "ground_truth_schema": ground_truth_schema,
            "tags": tags,
            "target_type": target_type,
            "target_ids": target_ids,
            "scorer_ids": scorer_ids,
            "version": 0,
            "created_at": now,
            "updated_at": now,
        }
        if id is not None:
            fields["id"] = require_id(id, "id")
        dataset = coerce(Dataset, fields, what="dataset")
        if not await self._insert_dataset(dataset):
            raise ConflictError(f"dataset {dataset.id!r} already exists")
        return dataset

    async def get_dataset_by_id(self, *, id: str) -> Dataset | None:
        """Return the dataset, or None."""
        self._check()
        return await self._get_dataset(require_id(id, "id"))

    async def update_dataset(
        self,
        *,
        id: str,
        name: str = UNSET,
        description: str | None = UNSET,
        metadata: Mapping[str, Any] | None = UNSET,
        input_schema: Mapping[str, Any] | None = UNSET,
        ground_truth_schema: Mapping[str, Any] | None = UNSET,
        tags: Sequence[str] | None = UNSET,
        target_type: str | None = UNSET,
        target_ids: Sequence[str] | None = UNSET,
        scorer_ids: Sequence[str] | None = UNSET,
    ) -> Dataset:
        """Replace the given fields (``None`` clears an optional one), bump ``updated_at`` and
        return the dataset; the version is unchanged.

        A changed schema must hold for every current item, else ``ValidationError`` and nothing
        is written. Raises ``NotFoundError`` when the dataset does not exist.
        """
        self._check()
        dataset_id = require_id(id, "id")
        changes = given(
            name=name,
            description=description,
            metadata=metadata,
            input_schema=input_schema,
            ground_truth_schema=ground_truth_schema,
            tags=tags,
            target_type=target_type,
            target_ids=target_ids,
            scorer_ids=scorer_ids,
        )
        for key in ("input_schema", "ground_truth_schema"):
            if key in changes:
                check_schema(changes[key], what=key)
        now = now_utc()

        def update(current: Dataset, items: Callable[[], list[DatasetItem]]) -> Dataset:
            merged = coerce(
                Dataset,
                {**current.model_dump(), **changes, "updated_at": now},
                what=f"dataset {dataset_id!r}",
            )
            if (merged.input_schema, merged.ground_truth_schema) != (
                current.input_schema,
                current.ground_truth_schema,
            ):
                validator = ItemValidator.for_dataset(merged)
                if validator.active:
                    validator.check_all(
                        (f"items[{row.id!r}]", row.input, row.ground_truth) for row in items()
                    )
            return merged

        updated = await self._update_dataset(dataset_id, update)
        if updated is None:
            raise NotFoundError(f"dataset {dataset_id!r} not found")
        return updated

    async def delete_dataset(self, *, id: str) -> None:
        """Delete the dataset with all its item rows and its version log; a missing dataset is
        not an error. Experiments (another domain) keep their ``dataset_id``."""
        self._check()
        await self._delete_dataset(require_id(id, "id"))

    async def list_datasets(
        self, *, pagination: Pagination | Mapping[str, Any] | None = None
    ) -> Page[Dataset]:
        """List datasets, newest first (ties by id)."""
        self._check()
        w = page_window(pagination, default=DEFAULT_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_datasets(w)
        return build_page(rows, w, total)

    # -- items -------------------------------------------------------------------------------------

    async def add_item(
        self,
        *,
        dataset_id: str,
        input: Any,
        ground_truth: Any = None,
        request_context: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: Mapping[str, Any] | None = None,
        id: str | None = None,
    ) -> DatasetItem:
        """Add one item as a new dataset version and return it (``dataset_version`` is the new
        version). Same rules as :meth:`batch_insert_items`."""
        item: dict[str, Any] = {
            "input": input,
            "ground_truth": ground_truth,
            "request_context": request_context,
            "metadata": metadata,
            "source": source,
        }
        if id is not None:
            item["id"] = id
        (added,) = await self._insert_items(dataset_id, [item], single=True)
        return added

    async def batch_insert_items(
        self, *, dataset_id: str, items: Sequence[DatasetItemInput | Mapping[str, Any]]
    ) -> list[DatasetItem]:
        """Add items as ONE new dataset version and return them in order.

        Each item is a ``DatasetItemInput`` or a dict (``input`` required; ``ground_truth``,
        ``request_context``, ``metadata``, ``source`` and ``id`` optional, any spelling). Ids
        default to new UUIDs. All or nothing: raises ``NotFoundError`` for a missing dataset,
        ``ValidationError`` when an item is invalid or fails the dataset's schemas, and
        ``ConflictError`` when an id exists. An empty list writes nothing.
        """
        return await self._insert_items(dataset_id, items, single=False)

    async def update_item(
        self,
        *,
        id: str,
        dataset_id: str,
        input: Any = UNSET,
        ground_truth: Any = UNSET,
        request_context: Mapping[str, Any] | None = UNSET,
        metadata: Mapping[str, Any] | None = UNSET,
        source: Mapping[str, Any] | None = UNSET,
    ) -> DatasetItem:
        """Write a new version of the item with the given fields replaced and return it.

        The current row is closed (``valid_to`` = the new version) and a new row written; the
        item keeps its ``created_at``. Raises ``NotFoundError`` when the dataset or the item
        does not exist, the item is deleted or belongs to another dataset, and
        ``ValidationError`` when the result fails the dataset's schemas (nothing written).
        """
        self._check()
        item_id = require_id(id, "id")
        did = require_id(dataset_id, "dataset_id")
        changes = given(
            input=input,
            ground_truth=ground_truth,
            request_context=request_context,
            metadata=metadata,
            source=source,
        )
        now = now_utc()

        def planner(dataset: Dataset | None, latest: Mapping[str, DatasetItem]) -> VersionPlan:
            plan = plan_update(did, dataset, latest, item_id, changes, now)
            assert dataset is not None  # plan_update raised otherwise
            (row,) = plan.written
            ItemValidator.for_dataset(dataset).check(
                row.input, row.ground_truth, where=f"item {item_id!r}"
            )
            return plan

        plan = await self._apply_items(did, [item_id], planner)
        assert plan is not None
        return plan.written[0]

    async def delete_item(self, *, id: str, dataset_id: str) -> None:
        """Delete the item as a new dataset version (its row is closed and a tombstone written).

        A missing or already deleted item is not an error (nothing is written); an item of
        another dataset raises ``NotFoundError``.
        """
        self._check()
        item_id = require_id(id, "id")
        did = require_id(dataset_id, "dataset_id")
        now = now_utc()

        def planner(
            dataset: Dataset | None, latest: Mapping[str, DatasetItem]
        ) -> VersionPlan | None:
            return plan_delete(did, dataset, latest, [item_id], now, batch=False)

        await self._apply_items(did, [item_id], planner)

    async def batch_delete_items(self, *, dataset_id: str, item_ids: Sequence[str]) -> None:
        """Delete items as ONE new dataset version; ids that are missing, already deleted or
        of another dataset are skipped, and when none is left nothing is written. Raises
        ``NotFoundError`` for a missing dataset."""
        self._check()
        did = require_id(dataset_id, "dataset_id")
        ids = list(dict.fromkeys(require_ids(item_ids, "item_ids")))
        now = now_utc()

        def planner(
            dataset: Dataset | None, latest: Mapping[str, DatasetItem]
        ) -> VersionPlan | None:
            return plan_delete(did, dataset, latest, ids, now, batch=True)

        await self._apply_items(did, ids, planner)

    async def list_items(
        self,
        *,
        dataset_id: str,
        version: int | None = None,
        search: str | None = None,
        pagination: Pagination | Mapping[str, Any] | None = None,
    ) -> Page[DatasetItem]:
        """List the dataset's items, newest first (ties by id).

        ``version=None`` lists the current items; a version lists the items as that dataset
        version saw them. ``search`` keeps items whose ``input`` or ``ground_truth``, as JSON
        text, contains it, ignoring case (of ASCII letters on every backend; of other letters
        where the backend folds them). Whitespace inside that JSON text may differ by backend:
        search for values, not JSON syntax.
        """
        self._check()
        did = require_id(dataset_id, "dataset_id")
        v = optional_int(version, "version")
        if search is not None and not isinstance(search, str):
            raise ValidationError(f"search must be a string, got {type(search).__name__}")
        w = page_window(pagination, default=DEFAULT_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_items(ItemQuery(did, v, search or None, w, True))
        return build_page(rows, w, total)

    async def get_item_by_id(
        self, *, id: str, dataset_version: int | None = None
    ) -> DatasetItem | None:
        """Return the item's current row, or with ``dataset_version`` the row written at exactly
        that dataset version; None when there is none or it is a tombstone."""
        self._check()
        return await self._get_item(
            require_id(id, "id"), optional_int(dataset_version, "dataset_version")
        )

    async def get_items_by_version(self, *, dataset_id: str, version: int) -> list[DatasetItem]:
        """Return every item as dataset version ``version`` saw it, newest first (ties by id)."""
        self._check()
        did = require_id(dataset_id, "dataset_id")
        v = optional_int(version, "version")
        if v is None:
            raise ValidationError("version is required (an integer >= 0)")
        rows, _ = await self._list_items(
            ItemQuery(did, v, None, window(0, False, default=False), False)
        )
        return rows

    async def get_item_history(self, *, item_id: str) -> list[DatasetItem]:
        """Return every stored row of the item, tombstones included, newest version first."""
        self._check()
        return await self._item_history(require_id(item_id, "item_id"))

    async def list_dataset_versions(
        self, *, dataset_id: str, pagination: Pagination | Mapping[str, Any] | None = None
    ) -> Page[DatasetVersion]:
        """List the dataset's logged versions, highest first."""
        self._check()
        did = require_id(dataset_id, "dataset_id")
        w = page_window(pagination, default=DEFAULT_PER_PAGE)
        if w.empty:
            return build_page([], w, 0)
        rows, total = await self._list_versions(did, w)
        return build_page(rows, w, total)

    # -- shared steps ------------------------------------------------------------------------------

    async def _insert_items(
        self, dataset_id: str, items: Any, *, single: bool
    ) -> list[DatasetItem]:
        self._check()
        did = require_id(dataset_id, "dataset_id")
        inputs = [
            coerce(DatasetItemInput, item, what="item" if single else f"items[{i}]")
            for i, item in enumerate(require_list(items, "items"))
        ]
        repeated = sorted(k for k, n in Counter(i.id for i in inputs).items() if n > 1)
        if repeated:
            raise ValidationError(f"item ids repeat within the batch: {repeated}")
        if not inputs:
            if await self._get_dataset(did) is None:
                raise NotFoundError(f"dataset {did!r} not found")
            return []
        now = now_utc()

        def planner(dataset: Dataset | None, latest: Mapping[str, DatasetItem]) -> VersionPlan:
            plan = plan_insert(did, dataset, latest, inputs, now)
            assert dataset is not None  # plan_insert raised otherwise
            ItemValidator.for_dataset(dataset).check_all(
                ("item" if single else f"items[{n}]", i.input, i.ground_truth)
                for n, i in enumerate(inputs)
            )
            return plan

        plan = await self._apply_items(did, [i.id for i in inputs], planner)
        assert plan is not None
        return plan.written

    # -- hooks -------------------------------------------------------------------------------------

    @abstractmethod
    async def _insert_dataset(self, dataset: Dataset) -> bool:
        """Insert the dataset; return False (writing nothing) when its id is taken."""

    @abstractmethod
    async def _get_dataset(self, dataset_id: str) -> Dataset | None:
        """Return the dataset or None."""

    @abstractmethod
    async def _update_dataset(self, dataset_id: str, update: DatasetUpdate) -> Dataset | None:
        """Atomically read the dataset, call ``update(dataset, current_items)`` (the loader
        returns the dataset's current item rows) and store every field of the result; return
        it, or None when the dataset does not exist."""

    @abstractmethod
    async def _delete_dataset(self, dataset_id: str) -> None:
        """Delete the dataset, all its item rows and its version log, atomically."""

    @abstractmethod
    async def _list_datasets(self, window: Window) -> tuple[list[Dataset], int]:
        """Return up to ``limit + 1`` datasets from ``offset`` by (createdAt, id) descending,
        and the total."""

    @abstractmethod
    async def _apply_items(
        self, dataset_id: str, item_ids: Sequence[str], planner: Planner
    ) -> VersionPlan | None:
        """Atomically: read the dataset (None when missing) and the latest row (``validTo``
        NULL, tombstones included, any dataset) of each of ``item_ids``, call ``planner`` and,
        unless it returns None, write its plan: set the dataset's ``version`` (``updatedAt``
        unchanged), set ``validTo`` on the current rows of ``plan.close``, insert
        ``plan.insert`` and ``plan.log``. Concurrent calls on one dataset must serialise (a lock
        on the dataset row, or an exclusive write transaction). Return the plan."""

    @abstractmethod
    async def _get_item(self, item_id: str, version: int | None) -> DatasetItem | None:
        """Return the current live row (``version`` None) or the live row written at exactly
        ``version``; None otherwise."""

    @abstractmethod
    async def _list_items(self, query: ItemQuery) -> tuple[list[DatasetItem], int | None]:
        """Return up to ``limit + 1`` live rows from ``offset`` (current, or visible at
        ``query.version``) by (createdAt, id) descending, and the total when ``query.count``."""

    @abstractmethod
    async def _item_history(self, item_id: str) -> list[DatasetItem]:
        """Return every row of the item by datasetVersion descending."""

    @abstractmethod
    async def _list_versions(
        self, dataset_id: str, window: Window
    ) -> tuple[list[DatasetVersion], int]:
        """Return up to ``limit + 1`` version log rows from ``offset`` by version descending,
        and the total."""

