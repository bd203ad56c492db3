"""Datasets domain behaviour: datasets, SCD-2 item history, time travel, schemas, batches."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from composite_store import (
    ConflictError,
    Dataset,
    DatasetItem,
    DatasetItemInput,
    NotFoundError,
    Pagination,
    Store,
    ValidationError,
)
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import PAGINATION_EDGES

__all__ = ["DatasetsSuite"]

UNICODE = "Grüße \u2013 你好 🚀"
PROMPT_SCHEMA = {
    "type": "object",
    "properties": {"prompt": {"type": "string"}},
    "required": ["prompt"],
}


def ids(items: list[Any]) -> list[str]:
    return [item.id for item in items]


def inputs(items: list[DatasetItem]) -> list[Any]:
    return [item.input for item in items]


async def dataset(store: Store, did: str = "d1", **kw: Any) -> Dataset:
    kw.setdefault("name", f"dataset {did}")
    return await store.datasets.create_dataset(id=did, **kw)


async def state(store: Store, did: str) -> tuple[int, int, list[str]]:
    """(dataset version, number of logged versions, ids of the current items)."""
    found = await store.datasets.get_dataset_by_id(id=did)
    assert found is not None
    versions = await store.datasets.list_dataset_versions(dataset_id=did)
    items = await store.datasets.list_items(dataset_id=did, pagination=Pagination(per_page=False))
    return found.version, versions.total or 0, sorted(ids(items.items))


class DatasetsSuite(Suite):
    """Every rule of the datasets domain (DESIGN.md sections 2, 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("datasets",)

    # -- datasets ----------------------------------------------------------------------------------

    async def test_create_dataset_starts_at_version_zero_without_a_version_row(
        self, cs_store: Store
    ) -> None:
        created = await cs_store.datasets.create_dataset(name="fresh")
        assert len(created.id) == 36  # a UUID4 by default
        assert created.version == 0
        assert created.created_at is not None and created.created_at.tzinfo is not None
        versions = await cs_store.datasets.list_dataset_versions(dataset_id=created.id)
        assert versions.items == [] and versions.total == 0

    async def test_create_dataset_round_trips_every_field(self, cs_store: Store) -> None:
        created = await cs_store.datasets.create_dataset(
            id="full",
            name=UNICODE,
            description="all fields",
            metadata={"owner": "me", "nested": {"n": [1, 2.5, None]}},
            input_schema=PROMPT_SCHEMA,
            ground_truth_schema={"type": "string"},
            tags=["a", "b"],
            target_type="agent",
            target_ids=["agent-1", "agent-2"],
            scorer_ids=["relevance"],
        )
        got = await cs_store.datasets.get_dataset_by_id(id="full")
        assert got == created
        assert got.input_schema == PROMPT_SCHEMA and got.tags == ["a", "b"]
        assert got.created_at == got.updated_at

    async def test_get_missing_dataset_returns_none(self, cs_store: Store) -> None:
        assert await cs_store.datasets.get_dataset_by_id(id="missing") is None

    async def test_create_dataset_with_a_taken_id_conflicts(self, cs_store: Store) -> None:
        await dataset(cs_store, "d1", name="first")
        with pytest.raises(ConflictError, match="dataset 'd1' already exists"):
            await dataset(cs_store, "d1", name="second")
        got = await cs_store.datasets.get_dataset_by_id(id="d1")
        assert got is not None and got.name == "first"

    async def test_create_dataset_rejects_bad_input(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="input_schema is not a valid JSON Schema"):
            await cs_store.datasets.create_dataset(
                id="bad", name="x", input_schema={"type": "nope"}
            )
        with pytest.raises(ValidationError, match="name"):
            await cs_store.datasets.create_dataset(id="bad", name="")
        with pytest.raises(ValidationError, match="not JSON data"):
            await cs_store.datasets.create_dataset(id="bad", name="x", metadata={"s": {1, 2}})
        with pytest.raises(ValidationError):
            await cs_store.datasets.create_dataset(id="  ", name="x")
        assert await cs_store.datasets.get_dataset_by_id(id="bad") is None

    async def test_update_dataset_replaces_fields_without_bumping_the_version(
        self, cs_store: Store
    ) -> None:
        created = await dataset(cs_store, description="old", metadata={"a": 1}, tags=["t"])
        await cs_store.datasets.add_item(dataset_id="d1", input={"q": 1})
        updated = await cs_store.datasets.update_dataset(
            id="d1", name="renamed", metadata={"b": 2}, description=None
        )
        assert updated.name == "renamed"
        assert updated.metadata == {"b": 2}  # replaced, not merged
        assert updated.description is None  # None clears
        assert updated.tags == ["t"]  # not given: kept
        assert updated.version == 1  # only item mutations bump it
        assert updated.created_at == created.created_at
        assert updated.updated_at is not None and created.updated_at is not None
        assert updated.updated_at >= created.updated_at
        assert await cs_store.datasets.get_dataset_by_id(id="d1") == updated
        assert (await state(cs_store, "d1"))[:2] == (1, 1)

    async def test_update_missing_dataset_raises_not_found(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="dataset 'nope' not found"):
            await cs_store.datasets.update_dataset(id="nope", name="x")

    async def test_update_dataset_refuses_a_null_name_and_writes_nothing(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store, name="kept")
        with pytest.raises(ValidationError, match="name"):
            await cs_store.datasets.update_dataset(id="d1", name=None)  # type: ignore[arg-type]
        got = await cs_store.datasets.get_dataset_by_id(id="d1")
        assert got is not None and got.name == "kept"

    async def test_a_new_schema_must_hold_for_every_current_item(self, cs_store: Store) -> None:
        await dataset(cs_store)
        await cs_store.datasets.add_item(dataset_id="d1", id="ok", input={"prompt": "hi"})
        bad = await cs_store.datasets.add_item(dataset_id="d1", id="bad", input={"other": 1})
        with pytest.raises(ValidationError, match=r"items\['bad'\]\.input does not match"):
            await cs_store.datasets.update_dataset(id="d1", input_schema=PROMPT_SCHEMA)
        got = await cs_store.datasets.get_dataset_by_id(id="d1")
        assert got is not None and got.input_schema is None
        # Deleted items are history, not current: the schema then holds.
        await cs_store.datasets.delete_item(id=bad.id, dataset_id="d1")
        updated = await cs_store.datasets.update_dataset(id="d1", input_schema=PROMPT_SCHEMA)
        assert updated.input_schema == PROMPT_SCHEMA
        cleared = await cs_store.datasets.update_dataset(id="d1", input_schema=None)
        assert cleared.input_schema is None

    async def test_delete_dataset_deletes_its_items_and_versions(self, cs_store: Store) -> None:
        await dataset(cs_store, "d1")
        await dataset(cs_store, "d2")
        a = await cs_store.datasets.add_item(dataset_id="d1", input="a")
        await cs_store.datasets.update_item(id=a.id, dataset_id="d1", input="a2")
        kept = await cs_store.datasets.add_item(dataset_id="d2", input="b")
        await cs_store.datasets.delete_dataset(id="d1")
        assert await cs_store.datasets.get_dataset_by_id(id="d1") is None
        assert await cs_store.datasets.get_item_history(item_id=a.id) == []
        assert await cs_store.datasets.get_item_by_id(id=a.id) is None
        assert (await cs_store.datasets.list_dataset_versions(dataset_id="d1")).total == 0
        assert (await cs_store.datasets.list_items(dataset_id="d1")).items == []
        assert await cs_store.datasets.get_item_by_id(id=kept.id) == kept
        assert await state(cs_store, "d2") == (1, 1, [kept.id])
        await cs_store.datasets.delete_dataset(id="d1")  # a second delete is a no-op

    async def test_list_datasets_newest_first(self, cs_store: Store) -> None:
        for n in range(3):
            await dataset(cs_store, f"d{n}")
        page = await cs_store.datasets.list_datasets()
        assert ids(page.items) == ["d2", "d1", "d0"]
        assert page.total == 3 and page.page == 0 and page.per_page == 100
        assert page.has_more is False

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_datasets_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        # Created one after another with ascending ids: newest first is d{n-1} .. d0.
        for n in range(total):
            await dataset(cs_store, f"d{n}")
        result = await cs_store.datasets.list_datasets(
            pagination=Pagination(page=page, per_page=per_page)
        )
        assert ids(result.items) == [f"d{total - 1 - i}" for i in expected]
        assert result.total == total
        assert result.has_more is has_more
        assert result.per_page == per_page

    @pytest.mark.parametrize(
        ("pagination", "message"),
        [
            ({"page": 0, "per_page": -1}, "per_page must be >= 0"),
            ({"page": -1, "per_page": 2}, "page must be >= 0"),
            ({"page": 1, "per_page": False}, "page must be 0 when per_page is False"),
        ],
    )
    async def test_pagination_rejects_bad_values(
        self, cs_store: Store, pagination: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(ValidationError, match=message):
            await cs_store.datasets.list_datasets(pagination=pagination)

    async def test_per_page_zero_returns_nothing(self, cs_store: Store) -> None:
        await dataset(cs_store)
        page = await cs_store.datasets.list_datasets(pagination={"perPage": 0})
        assert page.items == [] and page.total == 0 and page.has_more is False

    # -- adding items ------------------------------------------------------------------------------

    async def test_add_item_bumps_the_version_and_logs_it(self, cs_store: Store) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(dataset_id="d1", input={"q": "hello"})
        assert len(item.id) == 36
        assert item.dataset_id == "d1" and item.dataset_version == 1
        assert item.valid_to is None and item.is_deleted is False
        assert await state(cs_store, "d1") == (1, 1, [item.id])
        (logged,) = (await cs_store.datasets.list_dataset_versions(dataset_id="d1")).items
        assert logged.dataset_id == "d1" and logged.version == 1
        second = await cs_store.datasets.add_item(dataset_id="d1", input={"q": "again"})
        assert second.dataset_version == 2
        assert (await state(cs_store, "d1"))[:2] == (2, 2)

    async def test_item_round_trips_every_field(self, cs_store: Store) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(
            dataset_id="d1",
            id="item-1",
            input={"text": UNICODE, "nested": {"deep": [1, 2, 3]}, "none": None, "f": 42.5},
            ground_truth=[UNICODE, True],
            request_context={"user": "u1"},
            metadata={"source": "manual"},
            source={"type": "trace", "referenceId": "tr-1"},
        )
        got = await cs_store.datasets.get_item_by_id(id="item-1")
        assert got == item
        assert got.created_at is not None and got.created_at == got.updated_at
        for value in ("a plain string", 7, ["a", "list"]):
            added = await cs_store.datasets.add_item(dataset_id="d1", input=value)
            assert (await cs_store.datasets.get_item_by_id(id=added.id)) == added

    async def test_add_item_to_a_missing_dataset_raises(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="dataset 'nope' not found"):
            await cs_store.datasets.add_item(dataset_id="nope", input={"q": 1})

    async def test_batch_insert_is_one_version(self, cs_store: Store) -> None:
        await dataset(cs_store)
        items = await cs_store.datasets.batch_insert_items(
            dataset_id="d1",
            items=[{"input": {"q": "a"}}, {"input": {"q": "b"}}, {"input": {"q": "c"}}],
        )
        assert inputs(items) == [{"q": "a"}, {"q": "b"}, {"q": "c"}]  # request order
        assert {i.dataset_version for i in items} == {1}
        assert await state(cs_store, "d1") == (1, 1, sorted(ids(items)))
        more = await cs_store.datasets.batch_insert_items(
            dataset_id="d1", items=[{"input": "d"}, {"input": "e"}]
        )
        assert {i.dataset_version for i in more} == {2}
        assert (await state(cs_store, "d1"))[:2] == (2, 2)

    async def test_batch_insert_accepts_records_and_dicts_in_every_spelling(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store)
        items = await cs_store.datasets.batch_insert_items(
            dataset_id="d1",
            items=[
                DatasetItemInput(id="rec", input=1, ground_truth=2),
                {"id": "camel", "input": 1, "groundTruth": 2, "requestContext": {"r": 1}},
                {"id": "snake", "input": 1, "ground_truth": 2, "request_context": {"r": 1}},
            ],
        )
        assert ids(items) == ["rec", "camel", "snake"]
        assert [i.ground_truth for i in items] == [2, 2, 2]
        assert items[1].request_context == items[2].request_context == {"r": 1}

    async def test_batch_insert_of_nothing_writes_nothing(self, cs_store: Store) -> None:
        await dataset(cs_store)
        assert await cs_store.datasets.batch_insert_items(dataset_id="d1", items=[]) == []
        assert await state(cs_store, "d1") == (0, 0, [])
        with pytest.raises(NotFoundError):
            await cs_store.datasets.batch_insert_items(dataset_id="nope", items=[])

    async def test_an_item_failing_the_schema_writes_nothing(self, cs_store: Store) -> None:
        await dataset(cs_store, input_schema=PROMPT_SCHEMA, ground_truth_schema={"type": "number"})
        ok = await cs_store.datasets.add_item(
            dataset_id="d1", input={"prompt": "hi"}, ground_truth=1
        )
        with pytest.raises(ValidationError, match=r"item\.input does not match the input_schema"):
            await cs_store.datasets.add_item(dataset_id="d1", input={"other": "hi"})
        with pytest.raises(
            ValidationError, match=r"items\[2\]\.input .*'prompt' is a required property"
        ):
            await cs_store.datasets.batch_insert_items(
                dataset_id="d1",
                items=[{"input": {"prompt": "a"}}, {"input": {"prompt": "b"}}, {"input": {}}],
            )
        with pytest.raises(ValidationError, match=r"items\[0\]\.ground_truth does not match"):
            await cs_store.datasets.batch_insert_items(
                dataset_id="d1", items=[{"input": {"prompt": "a"}, "ground_truth": "text"}]
            )
        assert await state(cs_store, "d1") == (1, 1, [ok.id])

    async def test_invalid_item_payloads_write_nothing(self, cs_store: Store) -> None:
        await dataset(cs_store)
        with pytest.raises(ValidationError, match="input is required"):
            await cs_store.datasets.add_item(dataset_id="d1", input=None)
        with pytest.raises(ValidationError, match=r"items\[1\].*not JSON data"):
            await cs_store.datasets.batch_insert_items(
                dataset_id="d1", items=[{"input": 1}, {"input": {"when": object()}}]
            )
        with pytest.raises(ValidationError, match="metadata"):
            await cs_store.datasets.add_item(dataset_id="d1", input=1, metadata="not a dict")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="items must be a list"):
            await cs_store.datasets.batch_insert_items(dataset_id="d1", items={"input": 1})  # type: ignore[arg-type]
        assert await state(cs_store, "d1") == (0, 0, [])

    async def test_item_ids_are_unique(self, cs_store: Store) -> None:
        await dataset(cs_store, "d1")
        await dataset(cs_store, "d2")
        with pytest.raises(ValidationError, match=r"repeat within the batch: \['x'\]"):
            await cs_store.datasets.batch_insert_items(
                dataset_id="d1", items=[{"id": "x", "input": 1}, {"id": "x", "input": 2}]
            )
        await cs_store.datasets.add_item(dataset_id="d1", id="x", input=1)
        # Ids are unique across datasets and versions, deleted items included.
        with pytest.raises(ConflictError, match=r"already exist: \['x'\]"):
            await cs_store.datasets.batch_insert_items(
                dataset_id="d2", items=[{"input": 0}, {"id": "x", "input": 2}]
            )
        await cs_store.datasets.delete_item(id="x", dataset_id="d1")
        with pytest.raises(ConflictError):
            await cs_store.datasets.add_item(dataset_id="d1", id="x", input=3)
        assert await state(cs_store, "d2") == (0, 0, [])
        assert (await state(cs_store, "d1"))[:2] == (2, 2)

    # -- updating and deleting items -----------------------------------------------------------

    async def test_update_item_closes_the_old_row_and_writes_a_new_one(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store)
        added = await cs_store.datasets.add_item(
            dataset_id="d1", input={"q": "v1"}, ground_truth="a", metadata={"m": 1}
        )
        updated = await cs_store.datasets.update_item(
            id=added.id, dataset_id="d1", input={"q": "v2"}, metadata=None
        )
        assert updated.id == added.id
        assert updated.dataset_version == 2
        assert updated.input == {"q": "v2"}
        assert updated.ground_truth == "a"  # not given: kept
        assert updated.metadata is None  # None clears
        assert updated.created_at == added.created_at
        assert updated.updated_at is not None and added.updated_at is not None
        assert updated.updated_at >= added.updated_at
        assert await cs_store.datasets.get_item_by_id(id=added.id) == updated
        history = await cs_store.datasets.get_item_history(item_id=added.id)
        assert [(r.dataset_version, r.valid_to, r.is_deleted) for r in history] == [
            (2, None, False),
            (1, 2, False),
        ]
        assert history[1].input == {"q": "v1"}
        assert await state(cs_store, "d1") == (2, 2, [added.id])

    async def test_update_item_that_is_missing_deleted_or_elsewhere_raises(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store, "d1")
        await dataset(cs_store, "d2")
        item = await cs_store.datasets.add_item(dataset_id="d1", input=1)
        with pytest.raises(NotFoundError, match="dataset item 'nope' not found"):
            await cs_store.datasets.update_item(id="nope", dataset_id="d1", input=2)
        with pytest.raises(NotFoundError, match="not found in dataset 'd2'"):
            await cs_store.datasets.update_item(id=item.id, dataset_id="d2", input=2)
        with pytest.raises(NotFoundError, match="dataset 'gone' not found"):
            await cs_store.datasets.update_item(id=item.id, dataset_id="gone", input=2)
        await cs_store.datasets.delete_item(id=item.id, dataset_id="d1")
        with pytest.raises(NotFoundError):
            await cs_store.datasets.update_item(id=item.id, dataset_id="d1", input=2)
        assert await state(cs_store, "d1") == (2, 2, [])
        assert await state(cs_store, "d2") == (0, 0, [])

    async def test_update_item_is_held_to_the_schema(self, cs_store: Store) -> None:
        await dataset(cs_store, input_schema=PROMPT_SCHEMA)
        item = await cs_store.datasets.add_item(dataset_id="d1", input={"prompt": "a"})
        with pytest.raises(ValidationError, match="does not match the input_schema"):
            await cs_store.datasets.update_item(id=item.id, dataset_id="d1", input={"prompt": 1})
        with pytest.raises(ValidationError, match="input is required"):
            await cs_store.datasets.update_item(id=item.id, dataset_id="d1", input=None)
        assert await cs_store.datasets.get_item_by_id(id=item.id) == item
        assert await state(cs_store, "d1") == (1, 1, [item.id])

    async def test_delete_item_writes_a_tombstone(self, cs_store: Store) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(dataset_id="d1", input={"q": "bye"})
        await cs_store.datasets.delete_item(id=item.id, dataset_id="d1")
        assert await cs_store.datasets.get_item_by_id(id=item.id) is None
        history = await cs_store.datasets.get_item_history(item_id=item.id)
        assert [(r.dataset_version, r.valid_to, r.is_deleted) for r in history] == [
            (2, None, True),
            (1, 2, False),
        ]
        assert history[0].input == {"q": "bye"}  # the tombstone keeps the last content
        assert history[0].created_at == item.created_at
        assert await state(cs_store, "d1") == (2, 2, [])

    async def test_delete_item_of_nothing_is_a_no_op_without_a_version(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(dataset_id="d1", input=1)
        await cs_store.datasets.delete_item(id="never-existed", dataset_id="d1")
        await cs_store.datasets.delete_item(id=item.id, dataset_id="d1")
        await cs_store.datasets.delete_item(id=item.id, dataset_id="d1")  # already deleted
        assert await state(cs_store, "d1") == (2, 2, [])

    async def test_delete_item_of_another_dataset_raises(self, cs_store: Store) -> None:
        await dataset(cs_store, "d1")
        await dataset(cs_store, "d2")
        item = await cs_store.datasets.add_item(dataset_id="d1", input=1)
        with pytest.raises(NotFoundError, match="belongs to dataset 'd1'"):
            await cs_store.datasets.delete_item(id=item.id, dataset_id="d2")
        assert await cs_store.datasets.get_item_by_id(id=item.id) == item
        assert await state(cs_store, "d2") == (0, 0, [])

    async def test_batch_delete_is_one_version_and_skips_what_it_cannot_delete(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store, "d1")
        await dataset(cs_store, "d2")
        mine = await cs_store.datasets.batch_insert_items(
            dataset_id="d1", items=[{"input": n} for n in range(3)]
        )
        theirs = await cs_store.datasets.add_item(dataset_id="d2", input="x")
        await cs_store.datasets.batch_delete_items(
            dataset_id="d1",
            item_ids=[mine[0].id, mine[1].id, mine[0].id, "missing", theirs.id],
        )
        assert await state(cs_store, "d1") == (2, 2, [mine[2].id])
        for item in mine[:2]:
            (tombstone, _) = await cs_store.datasets.get_item_history(item_id=item.id)
            assert tombstone.is_deleted and tombstone.dataset_version == 2
        assert await cs_store.datasets.get_item_by_id(id=theirs.id) == theirs
        # Nothing left to delete: no version.
        await cs_store.datasets.batch_delete_items(dataset_id="d1", item_ids=[mine[0].id, "x"])
        await cs_store.datasets.batch_delete_items(dataset_id="d1", item_ids=[])
        assert (await state(cs_store, "d1"))[:2] == (2, 2)

    async def test_batch_delete_in_a_missing_dataset_raises(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="dataset 'nope' not found"):
            await cs_store.datasets.batch_delete_items(dataset_id="nope", item_ids=["a"])

    # -- reading versions --------------------------------------------------------------------------

    async def test_every_version_can_be_read_back(self, cs_store: Store) -> None:
        await dataset(cs_store)
        a = await cs_store.datasets.add_item(dataset_id="d1", id="a", input="a1")  # v1
        await cs_store.datasets.batch_insert_items(  # v2
            dataset_id="d1", items=[{"id": "b", "input": "b1"}, {"id": "c", "input": "c1"}]
        )
        await cs_store.datasets.update_item(id=a.id, dataset_id="d1", input="a2")  # v3
        await cs_store.datasets.delete_item(id="b", dataset_id="d1")  # v4
        await cs_store.datasets.batch_delete_items(dataset_id="d1", item_ids=["c"])  # v5
        await cs_store.datasets.add_item(dataset_id="d1", id="d", input="d1")  # v6
        expected = {
            0: {},
            1: {"a": "a1"},
            2: {"a": "a1", "b": "b1", "c": "c1"},
            3: {"a": "a2", "b": "b1", "c": "c1"},
            4: {"a": "a2", "c": "c1"},
            5: {"a": "a2"},
            6: {"a": "a2", "d": "d1"},
            7: {"a": "a2", "d": "d1"},
        }
        for version, seen in expected.items():
            listed = await cs_store.datasets.list_items(
                dataset_id="d1", version=version, pagination={"per_page": False}
            )
            assert {i.id: i.input for i in listed.items} == seen, f"version {version}"
            assert listed.total == len(seen)
            by_version = await cs_store.datasets.get_items_by_version(
                dataset_id="d1", version=version
            )
            assert ids(by_version) == ids(listed.items), f"version {version}"
        current = await cs_store.datasets.list_items(dataset_id="d1")
        assert {i.id: i.input for i in current.items} == expected[6]
        versions = await cs_store.datasets.list_dataset_versions(dataset_id="d1")
        assert [v.version for v in versions.items] == [6, 5, 4, 3, 2, 1]

    async def test_get_item_by_id_at_a_dataset_version_is_that_exact_row(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(dataset_id="d1", input={"q": "original"})  # v1
        await cs_store.datasets.update_item(id=item.id, dataset_id="d1", input={"q": "updated"})
        await cs_store.datasets.add_item(dataset_id="d1", input="other")  # v3
        await cs_store.datasets.delete_item(id=item.id, dataset_id="d1")  # v4
        v1 = await cs_store.datasets.get_item_by_id(id=item.id, dataset_version=1)
        v2 = await cs_store.datasets.get_item_by_id(id=item.id, dataset_version=2)
        assert v1 is not None and v1.input == {"q": "original"} and v1.valid_to == 2
        assert v2 is not None and v2.input == {"q": "updated"} and v2.valid_to == 4
        assert await cs_store.datasets.get_item_by_id(id=item.id, dataset_version=3) is None
        assert await cs_store.datasets.get_item_by_id(id=item.id, dataset_version=4) is None
        assert await cs_store.datasets.get_item_by_id(id=item.id) is None

    async def test_item_history_is_newest_first(self, cs_store: Store) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(dataset_id="d1", input=0)
        for n in range(1, 4):
            await cs_store.datasets.update_item(id=item.id, dataset_id="d1", input=n)
        history = await cs_store.datasets.get_item_history(item_id=item.id)
        assert [r.dataset_version for r in history] == [4, 3, 2, 1]
        assert [r.input for r in history] == [3, 2, 1, 0]
        assert [r.valid_to for r in history] == [None, 4, 3, 2]
        assert await cs_store.datasets.get_item_history(item_id="never") == []

    async def test_versions_must_be_non_negative_integers(self, cs_store: Store) -> None:
        await dataset(cs_store)
        with pytest.raises(ValidationError, match="version must be >= 0"):
            await cs_store.datasets.list_items(dataset_id="d1", version=-1)
        with pytest.raises(ValidationError, match="version must be an integer"):
            await cs_store.datasets.get_items_by_version(dataset_id="d1", version="1")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="dataset_version must be an integer"):
            await cs_store.datasets.get_item_by_id(id="x", dataset_version=True)

    # -- listing items -----------------------------------------------------------------------------

    async def test_list_items_newest_first_and_isolated_by_dataset(self, cs_store: Store) -> None:
        await dataset(cs_store, "d1")
        await dataset(cs_store, "d2")
        for n in range(3):
            await cs_store.datasets.add_item(dataset_id="d1", id=f"i{n}", input=n)
        await cs_store.datasets.add_item(dataset_id="d2", id="other", input="x")
        page = await cs_store.datasets.list_items(dataset_id="d1")
        assert ids(page.items) == ["i2", "i1", "i0"]
        assert page.total == 3 and page.per_page == 100 and page.has_more is False
        assert ids((await cs_store.datasets.list_items(dataset_id="d2")).items) == ["other"]
        assert (await cs_store.datasets.list_items(dataset_id="nope")).items == []

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_items_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        await dataset(cs_store)
        for n in range(total):
            await cs_store.datasets.add_item(dataset_id="d1", id=f"i{n}", input=n)
        result = await cs_store.datasets.list_items(
            dataset_id="d1", pagination=Pagination(page=page, per_page=per_page)
        )
        assert ids(result.items) == [f"i{total - 1 - i}" for i in expected]
        assert result.total == total
        assert result.has_more is has_more

    async def test_items_of_one_batch_tie_break_by_id_and_pages_never_overlap(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store)
        await cs_store.datasets.batch_insert_items(
            dataset_id="d1", items=[{"id": f"i{n}", "input": n} for n in (3, 0, 6, 1, 5, 2, 4)]
        )
        seen: list[str] = []
        for p in range(4):
            page = await cs_store.datasets.list_items(
                dataset_id="d1", pagination={"page": p, "per_page": 2}
            )
            seen += ids(page.items)
        assert seen == [f"i{n}" for n in (6, 5, 4, 3, 2, 1, 0)]

    async def test_search_matches_input_or_ground_truth_ignoring_case(
        self, cs_store: Store
    ) -> None:
        await dataset(cs_store)
        await cs_store.datasets.batch_insert_items(
            dataset_id="d1",
            items=[
                {"id": "a", "input": {"question": "What is the CAPITAL of France?"}},
                {"id": "b", "input": "weather", "ground_truth": {"answer": "Capitals vary"}},
                {"id": "c", "input": "nothing here"},
                {"id": "d", "input": "100% sure_thing"},
            ],
        )

        async def found(term: str) -> list[str]:
            page = await cs_store.datasets.list_items(dataset_id="d1", search=term)
            return sorted(ids(page.items))

        assert await found("capital") == ["a", "b"]
        assert await found("CAPITAL") == ["a", "b"]
        assert await found("France") == ["a"]
        assert await found("%") == ["d"]  # LIKE wildcards are literal:
        assert await found("e_t") == ["d"]  # as a wildcard, "_" would match "weather" too
        assert await found("sure_thing") == ["d"]
        assert await found("absent") == []
        assert await found("") == ["a", "b", "c", "d"]
        page = await cs_store.datasets.list_items(
            dataset_id="d1", search="capital", pagination={"per_page": 1}
        )
        assert page.total == 2 and page.has_more is True

    async def test_search_applies_to_a_past_version(self, cs_store: Store) -> None:
        await dataset(cs_store)
        item = await cs_store.datasets.add_item(dataset_id="d1", input="apple pie")
        await cs_store.datasets.update_item(id=item.id, dataset_id="d1", input="banana split")
        old = await cs_store.datasets.list_items(dataset_id="d1", version=1, search="apple")
        assert [i.input for i in old.items] == ["apple pie"]
        assert (await cs_store.datasets.list_items(dataset_id="d1", search="apple")).items == []

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_dataset_versions_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        await dataset(cs_store)
        for n in range(total):
            await cs_store.datasets.add_item(dataset_id="d1", input=n)
        result = await cs_store.datasets.list_dataset_versions(
            dataset_id="d1", pagination={"page": page, "per_page": per_page}
        )
        assert [v.version for v in result.items] == [total - i for i in expected]
        assert result.total == total
        assert result.has_more is has_more

    # -- concurrency -------------------------------------------------------------------------------

    async def test_concurrent_mutations_never_share_a_version(self, cs_store: Store) -> None:
        await dataset(cs_store)
        seed = await cs_store.datasets.batch_insert_items(
            dataset_id="d1", items=[{"id": f"s{n}", "input": n} for n in range(4)]
        )
        results = await asyncio.gather(
            *(cs_store.datasets.add_item(dataset_id="d1", input=f"new {n}") for n in range(8)),
            *(
                cs_store.datasets.update_item(id=item.id, dataset_id="d1", input="changed")
                for item in seed[:2]
            ),
            cs_store.datasets.batch_insert_items(dataset_id="d1", items=[{"input": "x"}] * 3),
            cs_store.datasets.delete_item(id=seed[3].id, dataset_id="d1"),
        )
        written = [r.dataset_version for r in results[:10] if isinstance(r, DatasetItem)]
        assert len(set(written)) == 10  # no two calls got the same version
        version, logged, current = await state(cs_store, "d1")
        assert version == 1 + 12  # the seed batch, then one per call
        assert logged == version
        versions = await cs_store.datasets.list_dataset_versions(
            dataset_id="d1", pagination={"per_page": False}
        )
        assert [v.version for v in versions.items] == list(range(version, 0, -1))
        assert len(current) == 4 + 8 + 3 - 1
