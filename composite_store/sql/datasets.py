"""The datasets domain in SQL, written once for every relational backend."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import ClassVar, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from composite_store.domains.datasets import DatasetsDomain, DatasetUpdate, ItemQuery
from composite_store.records.datasets import Dataset, DatasetItem, DatasetVersion
from composite_store.records.trusted import from_row
from composite_store.rules.item_history import Planner, VersionPlan
from composite_store.rules.paging import Window
from composite_store.schema import table
from composite_store.sql.domain import SqlDomain

__all__ = ["SqlDatasets"]

DATASETS, ITEMS, VERSIONS = table("datasets"), table("dataset_items"), table("dataset_versions")
#: Ids per IN list and rows per multi-row INSERT (Oracle caps IN lists at 1000).
_CHUNK = 500

T = TypeVar("T")


def _chunks(values: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


#: LIKE's escape character: not a backslash, which MySQL string literals would swallow.
_ESCAPE = "!"


def _like(text: str) -> str:
    """A LIKE pattern matching ``text`` (lower-cased) anywhere, its wildcards escaped."""
    escaped = text.lower().replace(_ESCAPE, _ESCAPE * 2)
    escaped = escaped.replace("%", f"{_ESCAPE}%").replace("_", f"{_ESCAPE}_")
    return f"%{escaped}%"


class SqlDatasets(SqlDomain, DatasetsDomain):
    """Datasets, SCD-2 item rows and the version log on a relational backend."""

    batch_limits: ClassVar[Mapping[str, int]] = {"ids": _CHUNK, "rows": _CHUNK}

    # -- helpers ---------------------------------------------------------------------------------

    def _dataset_row(self, conn: Connection, dataset_id: str, *, lock: bool) -> Dataset | None:
        stmt = self.select_all("datasets").where(self.tables["datasets"].c.id == dataset_id)
        if lock and self.db.dialect.supports_for_update:
            # Serialises item mutations of one dataset: each reads, then bumps, its version.
            stmt = stmt.with_for_update()
        row = conn.execute(stmt).mappings().first()
        return from_row(Dataset, row) if row is not None else None

    def _live(self) -> list[sa.ColumnElement[bool]]:
        items = self.tables["dataset_items"]
        return [items.c.validTo.is_(None), items.c.isDeleted == sa.false()]

    def _visible_at(self, version: int) -> list[sa.ColumnElement[bool]]:
        items = self.tables["dataset_items"]
        return [
            items.c.datasetVersion <= version,
            sa.or_(items.c.validTo.is_(None), items.c.validTo > version),
            items.c.isDeleted == sa.false(),
        ]

    # -- datasets ----------------------------------------------------------------------------------

    async def _insert_dataset(self, dataset: Dataset) -> bool:
        tbl = self.tables["datasets"]
        row = self.db.values(DATASETS, dataset.stored())

        def insert(conn: Connection) -> bool:
            if conn.execute(sa.select(tbl.c.id).where(tbl.c.id == dataset.id)).first():
                return False
            conn.execute(tbl.insert().values(row))
            return True

        return await self.db.run(insert, write=True)

    async def _get_dataset(self, dataset_id: str) -> Dataset | None:
        return await self.db.run(lambda conn: self._dataset_row(conn, dataset_id, lock=False))

    async def _update_dataset(self, dataset_id: str, update: DatasetUpdate) -> Dataset | None:
        tbl, items = self.tables["datasets"], self.tables["dataset_items"]

        def apply(conn: Connection) -> Dataset | None:
            current = self._dataset_row(conn, dataset_id, lock=True)
            if current is None:
                return None

            def current_items() -> list[DatasetItem]:
                stmt = self.select_all("dataset_items").where(
                    items.c.datasetId == dataset_id, *self._live()
                )
                return [from_row(DatasetItem, r) for r in conn.execute(stmt).mappings()]

            updated = update(current, current_items)
            values = self.db.values(DATASETS, updated.stored())
            del values["id"]
            conn.execute(tbl.update().where(tbl.c.id == dataset_id).values(values))
            return updated

        return await self.db.run(apply, write=True)

    async def _delete_dataset(self, dataset_id: str) -> None:
        tbl, items = self.tables["datasets"], self.tables["dataset_items"]
        versions = self.tables["dataset_versions"]

        def delete(conn: Connection) -> None:
            conn.execute(versions.delete().where(versions.c.datasetId == dataset_id))
            conn.execute(items.delete().where(items.c.datasetId == dataset_id))
            conn.execute(tbl.delete().where(tbl.c.id == dataset_id))

        await self.db.run(delete, write=True)

    async def _list_datasets(self, window: Window) -> tuple[list[Dataset], int]:
        tbl = self.tables["datasets"]
        stmt = self.select_all("datasets").order_by(tbl.c.createdAt.desc(), tbl.c.id.desc())
        if window.limit is not None:
            stmt = stmt.offset(window.offset).limit(window.fetch)
        count = sa.select(sa.func.count()).select_from(tbl)

        return await self.read_page(Dataset, stmt, count)

    # -- items -------------------------------------------------------------------------------------

    async def _apply_items(
        self, dataset_id: str, item_ids: Sequence[str], planner: Planner
    ) -> VersionPlan | None:
        datasets, items = self.tables["datasets"], self.tables["dataset_items"]
        versions = self.tables["dataset_versions"]
        ids = list(dict.fromkeys(item_ids))

        def apply(conn: Connection) -> VersionPlan | None:
            dataset = self._dataset_row(conn, dataset_id, lock=True)
            latest: dict[str, DatasetItem] = {}
            for chunk in _chunks(ids):
                stmt = self.select_all("dataset_items").where(
                    items.c.id.in_(chunk), items.c.validTo.is_(None)
                )
                for r in conn.execute(stmt).mappings():
                    latest[r["id"]] = from_row(DatasetItem, r)
            plan = planner(dataset, latest)
            if plan is None:
                return None
            conn.execute(
                datasets.update()
                .where(datasets.c.id == plan.dataset_id)
                .values(version=plan.version)
            )
            for closing in _chunks(plan.close):
                conn.execute(
                    items.update()
                    .where(items.c.id.in_(closing), items.c.validTo.is_(None))
                    .values(validTo=plan.version)
                )
            rows = [self.db.values(ITEMS, row.stored()) for row in plan.insert]
            for chunk_rows in _chunks(rows):
                conn.execute(items.insert(), list(chunk_rows))
            conn.execute(versions.insert().values(self.db.values(VERSIONS, plan.log.stored())))
            return plan

        return await self.db.run(apply, write=True)

    async def _get_item(self, item_id: str, version: int | None) -> DatasetItem | None:
        items = self.tables["dataset_items"]
        where = [items.c.id == item_id, items.c.isDeleted == sa.false()]
        where.append(
            items.c.validTo.is_(None) if version is None else items.c.datasetVersion == version
        )
        stmt = self.select_all("dataset_items").where(*where).limit(1)

        def read(conn: Connection) -> DatasetItem | None:
            row = conn.execute(stmt).mappings().first()
            return from_row(DatasetItem, row) if row is not None else None

        return await self.db.run(read)

    async def _list_items(self, query: ItemQuery) -> tuple[list[DatasetItem], int | None]:
        items = self.tables["dataset_items"]
        where = [items.c.datasetId == query.dataset_id]
        where.extend(self._live() if query.version is None else self._visible_at(query.version))
        if query.search is not None:
            pattern = _like(query.search)
            where.append(
                sa.or_(
                    *(
                        sa.func.lower(self.db.dialect.json_text(items.c[name])).like(
                            pattern, escape=_ESCAPE
                        )
                        for name in ("input", "groundTruth")
                    )
                )
            )
        stmt = (
            self.select_all("dataset_items")
            .where(*where)
            .order_by(items.c.createdAt.desc(), items.c.id.desc())
        )
        w = query.window
        if w.limit is not None:
            stmt = stmt.offset(w.offset).limit(w.fetch)
        count = sa.select(sa.func.count()).select_from(items).where(*where)

        return await self.read_page(DatasetItem, stmt, count if query.count else None)

    async def _item_history(self, item_id: str) -> list[DatasetItem]:
        items = self.tables["dataset_items"]
        stmt = (
            self.select_all("dataset_items")
            .where(items.c.id == item_id)
            .order_by(items.c.datasetVersion.desc())
        )
        return (await self.read_page(DatasetItem, stmt))[0]

    async def _list_versions(
        self, dataset_id: str, window: Window
    ) -> tuple[list[DatasetVersion], int]:
        versions = self.tables["dataset_versions"]
        where = versions.c.datasetId == dataset_id
        stmt = self.select_all("dataset_versions").where(where).order_by(versions.c.version.desc())
        if window.limit is not None:
            stmt = stmt.offset(window.offset).limit(window.fetch)
        count = sa.select(sa.func.count()).select_from(versions).where(where)

        return await self.read_page(DatasetVersion, stmt, count)
