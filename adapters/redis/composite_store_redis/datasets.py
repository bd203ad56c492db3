"""The datasets domain on Redis: a dataset, its SCD-2 item rows and its version log on one slot.

A dataset is ``mastra_datasets:{<dataset id>}``; its item rows are
``mastra_dataset_items:{<dataset id>}:<item id>:<datasetVersion>`` and its version rows
``mastra_dataset_versions:{<dataset id>}:<version id>``. In the dataset's slot too: its rows
by datasetVersion (``dataset_id_version_idx``, what time travel reads: the rows written at
or before a version), its current live rows by createdAt (``current_...``: the listing of
today's items), each item's rows by datasetVersion (its history; the top one is its latest
row), its version rows by version and the unique keys ``datasetid_version_key:{<dataset
id>}:<version>``. So an item mutation (close the current rows, insert the new ones, bump the
dataset's version, log it) is one script guarded by the dataset's version, on a cluster too.
``id_datasetid_idx:{<item id>}`` / ``{<version id>}`` point from ids to their dataset. Whole-
table sets list datasets (createdAt), item rows and version rows for export.

A listing at an earlier version, or with a search, reads the dataset's rows from its sets (a
bounded read of one aggregate) and filters and orders them here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from composite_store.domains.base import Capabilities
from composite_store.domains.datasets import DatasetsDomain, DatasetUpdate, ItemQuery
from composite_store.records.base import Record
from composite_store.records.datasets import Dataset, DatasetItem, DatasetVersion
from composite_store.rules.item_history import Planner, VersionPlan, is_current, visible_at
from composite_store.rules.paging import Window
from composite_store.schema import table
from composite_store_redis import records, transfer
from composite_store_redis.batch import Batch
from composite_store_redis.codec import decode_record, dump_json, from_stored
from composite_store_redis.domain import RedisDomain
from composite_store_redis.keys import pack, sorted_index, unpack

__all__ = ["RedisDatasets"]

_DATASETS, _ITEMS, _VERSIONS = table("datasets"), table("dataset_items"), table("dataset_versions")
_I, _V = "dataset_items", "dataset_versions"
_CURRENT = "_current"
ALL_DATASETS = sorted_index("datasets", [], "createdAt", ["id"])
ROWS = sorted_index(_I, ["datasetId"], "datasetVersion", ["id", "datasetVersion"])
CURRENT = sorted_index(
    _I, ["datasetId", _CURRENT], "createdAt", ["id", "datasetVersion"], derived=(_CURRENT,),
    kind="current",
)
HISTORY = sorted_index(_I, ["datasetId", "id"], "datasetVersion", ["datasetVersion"])
ALL_ROWS = sorted_index(_I, [], "datasetVersion", ["datasetId", "id", "datasetVersion"])
ITEM_INDEXES = (ROWS, CURRENT, HISTORY, ALL_ROWS)
VERSIONS = sorted_index(_V, ["datasetId"], "version", ["id"])
ALL_VERSIONS = sorted_index(_V, [], "version", ["datasetId", "id"])
VERSION_INDEXES = (VERSIONS, ALL_VERSIONS)
ITEM_DATASET = "id_datasetid_idx"
VERSION_DATASET = "id_datasetid_idx"
VERSION_NUMBER = "datasetid_version_key"


def _dataset(fields: Mapping[str, str]) -> Dataset:
    return from_stored(Dataset, decode_record(_DATASETS, fields))


def _item(fields: Mapping[str, str]) -> DatasetItem:
    return from_stored(DatasetItem, decode_record(_ITEMS, fields))


def _version(fields: Mapping[str, str]) -> DatasetVersion:
    return from_stored(DatasetVersion, decode_record(_VERSIONS, fields))


def _indexed(stored: Mapping[str, Any]) -> dict[str, Any]:
    """An item row's stored values plus whether it is its item's current live row."""
    current = stored.get("validTo") is None and not stored.get("isDeleted")
    return {**stored, _CURRENT: "1" if current else None}


def _matches(row: DatasetItem, needle: str) -> bool:
    if needle in dump_json(row.input).lower():
        return True
    return row.ground_truth is not None and needle in dump_json(row.ground_truth).lower()


def _newest_first(rows: list[DatasetItem], window: Window) -> list[DatasetItem]:
    rows.sort(key=lambda r: (r.created_at is not None, r.created_at, r.id), reverse=True)
    end = window.stop
    return rows[window.offset : end]


class _NeedItems(Exception):
    """An update asked for the dataset's current items, not read yet."""


class RedisDatasets(RedisDomain, DatasetsDomain):
    """Datasets with SCD-2 versioned items on Redis (standalone or cluster)."""

    tables = ("datasets", "dataset_items", "dataset_versions")
    indexes = (ALL_DATASETS, *ITEM_INDEXES, *VERSION_INDEXES)
    pointers = (
        (_I, ITEM_DATASET, "id", "datasetId"),
        (_V, VERSION_DATASET, "id", "datasetId"),
    )
    uniques = ((_V, VERSION_NUMBER, ("datasetId", "version")),)
    standalone_capabilities: ClassVar[Capabilities] = Capabilities(
        atomic_batches=True, concurrent_updates=True, transactions=True
    )
    # A dataset's records share a slot; id pointers and whole-table sets follow in theirs.
    cluster_capabilities: ClassVar[Capabilities] = Capabilities(concurrent_updates=True)

    # -- keys --------------------------------------------------------------------------------------

    def _dataset_key(self, dataset_id: str) -> str:
        return self.keys.record("datasets", dataset_id)

    def _row_key(self, dataset_id: str, item_id: str, version: int | str) -> str:
        return self.keys.record(_I, dataset_id, f"{item_id}:{version}")

    def _version_key(self, dataset_id: str, version_id: str) -> str:
        return self.keys.record(_V, dataset_id, pack(version_id))

    def _item_pointer(self, item_id: str) -> str:
        return self.keys.pointer(_I, ITEM_DATASET, item_id)

    def _version_pointer(self, version_id: str) -> str:
        return self.keys.pointer(_V, VERSION_DATASET, version_id)

    def _number_key(self, dataset_id: str, version: int) -> str:
        return f"{self.keys.pointer(_V, VERSION_NUMBER, dataset_id)}:{version}"

    async def read_raw(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        # docstring inherited
        self._check()
        self._known_table(table)
        if table == "datasets":
            return await self._raw(table, self._dataset_key(key["id"]))
        if table == "dataset_items":
            found = await records.locate(
                self,
                self._item_pointer(key["id"]),
                lambda d: self._row_key(d, key["id"], key["datasetVersion"]),
            )
            return None if found is None else await self._raw(table, found[0])
        found = await records.locate(
            self, self._version_pointer(key["id"]), lambda d: self._version_key(d, key["id"])
        )
        return None if found is None else await self._raw(table, found[0])

    # -- reads of one dataset ----------------------------------------------------------------------

    async def _rows(self, dataset_id: str, members: Sequence[str]) -> list[DatasetItem]:
        """The item rows behind members ``(item id, datasetVersion)``."""
        keys = [self._row_key(dataset_id, *unpack(m)) for m in members]
        return [_item(raw) for raw in await transfer.read_hashes(self, keys) if raw]

    async def _current(self, dataset_id: str) -> list[DatasetItem]:
        page = await self.conn.page(*self.index_set(CURRENT, [dataset_id, "1"]))
        return [r for r in await self._rows(dataset_id, page.members) if is_current(r)]

    async def _latest(
        self, item_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, dict[str, str]]]:
        """Item id -> (the dataset its pointer names, its latest row's hash or {})."""
        owners = await self.conn.read([["GET", self._item_pointer(i)] for i in item_ids])
        known = [(i, o) for i, o in zip(item_ids, owners, strict=True) if o is not None]
        tops = await self.conn.read(
            [
                ["ZRANGE", self.keys.index(HISTORY, [o, i]), "0", "0", "REV"]
                for i, o in known
            ]
        )
        keys = [
            (i, self._row_key(o, i, unpack(top[0])[0]) if top else None)
            for (i, o), top in zip(known, tops, strict=True)
        ]
        rows = await transfer.read_hashes(self, [k for _, k in keys if k is not None])
        found: dict[str, tuple[str | None, dict[str, str]]] = {
            i: (o, {}) for i, o in zip(item_ids, owners, strict=True)
        }
        it = iter(rows)
        for i, k in keys:
            if k is not None:
                found[i] = (found[i][0], next(it))
        return found

    # -- datasets ----------------------------------------------------------------------------------

    async def _insert_dataset(self, dataset: Dataset) -> bool:
        # docstring inherited
        return await records.insert(
            self, self._dataset_key(dataset.id), _DATASETS, (ALL_DATASETS,), dataset.stored()
        )

    async def _get_dataset(self, dataset_id: str) -> Dataset | None:
        # docstring inherited
        [raw] = await self.conn.read([["HGETALL", self._dataset_key(dataset_id)]])
        return _dataset(raw) if raw else None

    async def _update_dataset(self, dataset_id: str, update: DatasetUpdate) -> Dataset | None:
        # docstring inherited
        key = self._dataset_key(dataset_id)

        async def attempt() -> tuple[Dataset | None] | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            if not raw:
                return (None,)
            loaded: list[list[DatasetItem]] = []

            def items() -> list[DatasetItem]:
                if not loaded:
                    raise _NeedItems
                return [r.model_copy(deep=True) for r in loaded[0]]

            try:
                updated = update(_dataset(raw), items)
            except _NeedItems:
                loaded.append(await self._current(dataset_id))
                updated = update(_dataset(raw), items)
            batch = self.batch()
            # The version guard also fails when an item mutation ran since the read.
            records.guard(batch, key, _DATASETS, raw)
            records.put(self, batch, key, _DATASETS, (ALL_DATASETS,), raw, updated.stored())
            return (updated,) if await self.conn.apply(batch) else None

        (result,) = await self.optimistic(attempt, f"update_dataset({dataset_id!r})")
        return result

    async def _delete_dataset(self, dataset_id: str) -> None:
        # docstring inherited
        key = self._dataset_key(dataset_id)

        async def attempt() -> bool | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            rows = await self.conn.page(*self.index_set(ROWS, [dataset_id]))
            versions = await self.conn.page(
                *self.index_set(VERSIONS, [dataset_id]),
                records=self.keys.record_prefix(_V, dataset_id),
            )
            assert versions.records is not None
            batch = self.batch()
            records.guard(batch, key, _DATASETS, raw)
            records.drop(self, batch, key, _DATASETS, (ALL_DATASETS,), raw)
            row_keys = [self._row_key(dataset_id, *unpack(m)) for m in rows.members]
            item_ids: dict[str, None] = {}
            for rkey, row in zip(row_keys, await transfer.read_hashes(self, row_keys), strict=True):
                if row:
                    records.drop(self, batch, rkey, _ITEMS, ITEM_INDEXES, row)
                    item_ids[row["id"]] = None
            for member, version in zip(versions.members, versions.records, strict=True):
                if not version:
                    continue
                version_id = unpack(member)[0]
                vkey = self._version_key(dataset_id, version_id)
                records.drop(self, batch, vkey, _VERSIONS, VERSION_INDEXES, version)
                batch.delete(self._number_key(dataset_id, int(version["version"])))
                batch.delete(self._version_pointer(version_id))
            for item_id in item_ids:
                # An id a later dataset took keeps its pointer.
                pointer = self._item_pointer(item_id)
                batch.expect_value(pointer, dataset_id)
                batch.delete(pointer)
            if not batch:
                return True
            return await self.conn.apply(batch) or None

        await self.optimistic(attempt, f"delete_dataset({dataset_id!r})")

    async def _list_datasets(self, window: Window) -> tuple[list[Dataset], int]:
        # docstring inherited
        page = await self.conn.page(
            *self.index_set(ALL_DATASETS, []),
            reverse=True,
            offset=window.offset,
            count=window.fetch,
            total=True,
        )
        found = await transfer.read_hashes(
            self, [self._dataset_key(unpack(m)[0]) for m in page.members]
        )
        return [_dataset(raw) for raw in found if raw], page.total or 0

    # -- items -------------------------------------------------------------------------------------

    async def _apply_items(
        self, dataset_id: str, item_ids: Sequence[str], planner: Planner
    ) -> VersionPlan | None:
        # docstring inherited
        key = self._dataset_key(dataset_id)

        async def attempt() -> tuple[VersionPlan | None] | None:
            [raw] = await self.conn.read([["HGETALL", key]])
            found = await self._latest(item_ids)
            latest = {
                i: _item(row) for i, (_, row) in found.items() if row and "validTo" not in row
            }
            plan = planner(_dataset(raw) if raw else None, latest)
            if plan is None:
                return (None,)
            batch = self.batch()
            # The dataset's slot first: its guarded step runs before the pointers' on a cluster.
            batch.expect_field(key, "version", raw.get("version"))
            batch.set_fields(key, {"version": str(plan.version)})
            self._write_plan(batch, plan, latest)
            for item_id in dict.fromkeys(r.id for r in plan.insert):
                pointer = self._item_pointer(item_id)
                batch.expect_value(pointer, found[item_id][0] if item_id in found else None)
                batch.set_string(pointer, dataset_id)
            return (plan,) if await self.conn.apply(batch) else None

        (result,) = await self.optimistic(attempt, f"dataset {dataset_id!r} items")
        return result

    def _write_plan(
        self, batch: Batch, plan: VersionPlan, latest: Mapping[str, DatasetItem]
    ) -> None:
        """Close the current rows, insert the new ones and log the version (dataset slot)."""
        did = plan.dataset_id
        for item_id in plan.close:
            row = latest[item_id]
            rkey = self._row_key(did, item_id, row.dataset_version)
            old = row.stored()
            batch.expect_exists(rkey)
            batch.set_fields(rkey, {"validTo": str(plan.version)})
            self.reindex(
                batch, ITEM_INDEXES, _indexed(old), _indexed({**old, "validTo": plan.version})
            )
        for row in plan.insert:
            rkey = self._row_key(did, row.id, row.dataset_version)
            records.guard(batch, rkey, _ITEMS, None)
            records.put(self, batch, rkey, _ITEMS, (), None, row.stored())
            self.reindex(batch, ITEM_INDEXES, None, _indexed(row.stored()))
        self._put_version(batch, plan.log, None)

    def _put_version(
        self, batch: Batch, version: DatasetVersion, raw: Mapping[str, str] | None
    ) -> None:
        vkey = self._version_key(version.dataset_id, version.id)
        if raw:
            batch.delete(self._number_key(version.dataset_id, int(raw["version"])))
        records.guard(batch, vkey, _VERSIONS, raw)
        records.put(self, batch, vkey, _VERSIONS, VERSION_INDEXES, raw, version.stored())
        number_key = self._number_key(version.dataset_id, version.version)
        if not raw:
            batch.expect_value(number_key, None)
        batch.set_string(number_key, version.id)
        batch.set_string(self._version_pointer(version.id), version.dataset_id)

    async def _get_item(self, item_id: str, version: int | None) -> DatasetItem | None:
        # docstring inherited
        if version is None:
            _, raw = (await self._latest([item_id]))[item_id]
            row = _item(raw) if raw else None
            return row if row is not None and is_current(row) else None
        found = await records.locate(
            self, self._item_pointer(item_id), lambda d: self._row_key(d, item_id, version)
        )
        row = _item(found[1]) if found is not None else None
        return row if row is not None and not row.is_deleted else None

    async def _list_items(self, query: ItemQuery) -> tuple[list[DatasetItem], int | None]:
        # docstring inherited
        did, w = query.dataset_id, query.window
        if query.version is None and query.search is None:
            page = await self.conn.page(
                *self.index_set(CURRENT, [did, "1"]),
                reverse=True,
                offset=w.offset,
                count=w.fetch,
                total=query.count,
            )
            rows = [r for r in await self._rows(did, page.members) if is_current(r)]
            return rows, page.total
        if query.version is None:
            found = await self._current(did)
        else:
            version = query.version
            page = await self.conn.page(*self.index_set(ROWS, [did]), high=str(version))
            found = [r for r in await self._rows(did, page.members) if visible_at(r, version)]
        if query.search is not None:
            needle = query.search.lower()
            found = [r for r in found if _matches(r, needle)]
        return _newest_first(found, w), len(found) if query.count else None

    async def _item_history(self, item_id: str) -> list[DatasetItem]:
        # docstring inherited
        [owner] = await self.conn.read([["GET", self._item_pointer(item_id)]])
        if owner is None:
            return []
        page = await self.conn.page(*self.index_set(HISTORY, [owner, item_id]), reverse=True)
        keys = [self._row_key(owner, item_id, unpack(m)[0]) for m in page.members]
        return [_item(raw) for raw in await transfer.read_hashes(self, keys) if raw]

    async def _list_versions(
        self, dataset_id: str, window: Window
    ) -> tuple[list[DatasetVersion], int]:
        # docstring inherited
        page = await self.conn.page(
            *self.index_set(VERSIONS, [dataset_id]),
            reverse=True,
            offset=window.offset,
            count=window.fetch,
            total=True,
            records=self.keys.record_prefix(_V, dataset_id),
        )
        assert page.records is not None
        return [_version(raw) for raw in page.records if raw], page.total or 0

    # -- export and import -------------------------------------------------------------------------

    async def _export(
        self, table: str, cursor: str | None, limit: int
    ) -> tuple[list[Record], str | None]:
        # docstring inherited
        if table == "datasets":
            return await self._export_from(
                ALL_DATASETS, cursor, limit, lambda m: self._dataset_key(unpack(m)[0]), _dataset
            )
        if table == "dataset_items":
            return await self._export_from(
                ALL_ROWS, cursor, limit, lambda m: self._row_key(*unpack(m)), _item
            )
        return await self._export_from(
            ALL_VERSIONS, cursor, limit, lambda m: self._version_key(*unpack(m)), _version
        )

    async def _fetch(self, table: str, keys: list[tuple[Any, ...]]) -> list[Record]:
        # docstring inherited
        if table == "datasets":
            return await self._fetch_keys([self._dataset_key(k[0]) for k in keys], _dataset)
        pointer: Callable[[str], str] = (
            self._item_pointer if table == "dataset_items" else self._version_pointer
        )
        owners = await self.conn.read([["GET", pointer(k[0])] for k in keys])
        if table == "dataset_items":
            located = [
                self._row_key(o, k[0], k[1]) for k, o in zip(keys, owners, strict=True) if o
            ]
            return await self._fetch_keys(located, _item)
        located = [self._version_key(o, k[0]) for k, o in zip(keys, owners, strict=True) if o]
        return await self._fetch_keys(located, _version)

    async def _import(self, table: str, records_: list[Record]) -> None:
        # docstring inherited
        for record in records_:
            if isinstance(record, Dataset):
                await records.upsert(
                    self, self._dataset_key(record.id), _DATASETS, (ALL_DATASETS,),
                    record.stored(),
                )
                continue

            async def attempt(r: Record = record) -> bool | None:
                return await self._import_one(r)

            await self.optimistic(attempt, f"import into {table}")

    async def _import_one(self, record: Record) -> bool | None:
        batch = self.batch()
        if isinstance(record, DatasetItem):
            key = self._row_key(record.dataset_id, record.id, record.dataset_version)
            [raw] = await self.conn.read([["HGETALL", key]])
            records.guard(batch, key, _ITEMS, raw)
            records.put(self, batch, key, _ITEMS, (), raw, record.stored())
            old = _indexed(decode_record(_ITEMS, raw)) if raw else None
            self.reindex(batch, ITEM_INDEXES, old, _indexed(record.stored()))
            batch.set_string(self._item_pointer(record.id), record.dataset_id)
        elif isinstance(record, DatasetVersion):
            key = self._version_key(record.dataset_id, record.id)
            [raw] = await self.conn.read([["HGETALL", key]])
            self._put_version(batch, record, raw or None)
        return await self.conn.apply(batch) or None

    async def _count(self, table: str) -> int:
        # docstring inherited
        index = {"datasets": ALL_DATASETS, "dataset_items": ALL_ROWS}.get(table, ALL_VERSIONS)
        return await transfer.count_index(self, index)
