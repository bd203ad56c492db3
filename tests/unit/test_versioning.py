"""SCD-2 planning of dataset items (``composite_store.rules.item_history``), without a backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from composite_store.errors import ConflictError, NotFoundError, ValidationError
from composite_store.records.datasets import Dataset, DatasetItem, DatasetItemInput
from composite_store.rules.item_history import (
    is_current,
    plan_delete,
    plan_insert,
    plan_update,
    visible_at,
)

T0 = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)
NOW = T0 + timedelta(hours=1)


def dataset(version: int = 0, dataset_id: str = "d1") -> Dataset:
    return Dataset(id=dataset_id, name="ds", version=version, created_at=T0, updated_at=T0)


def row(item_id: str, version: int, *, valid_to: int | None = None, deleted: bool = False,
        dataset_id: str = "d1", value: object = "x") -> DatasetItem:
    return DatasetItem(
        id=item_id, dataset_id=dataset_id, dataset_version=version, valid_to=valid_to,
        is_deleted=deleted, input={"v": value}, created_at=T0, updated_at=T0,
    )


# -- insert ----------------------------------------------------------------------------------------


def test_insert_bumps_once_for_the_whole_batch() -> None:
    items = [DatasetItemInput(id=f"i{n}", input={"n": n}) for n in range(3)]
    plan = plan_insert("d1", dataset(version=4), {}, items, NOW)
    assert plan.version == 5
    assert plan.close == ()
    assert [r.id for r in plan.insert] == ["i0", "i1", "i2"]
    assert {r.dataset_version for r in plan.insert} == {5}
    assert all(r.valid_to is None and not r.is_deleted for r in plan.insert)
    assert all(r.created_at == NOW and r.updated_at == NOW for r in plan.insert)
    assert plan.log.dataset_id == "d1" and plan.log.version == 5 and plan.log.created_at == NOW
    assert plan.written == list(plan.insert)


def test_insert_into_missing_dataset_raises() -> None:
    with pytest.raises(NotFoundError, match="dataset 'd1' not found"):
        plan_insert("d1", None, {}, [DatasetItemInput(input=1)], NOW)


def test_insert_refuses_an_id_that_exists_even_as_a_tombstone() -> None:
    latest = {"i1": row("i1", 2, deleted=True)}
    with pytest.raises(ConflictError, match=r"already exist: \['i1'\]"):
        plan_insert("d1", dataset(2), latest, [DatasetItemInput(id="i1", input=1)], NOW)


# -- update ----------------------------------------------------------------------------------------


def test_update_closes_the_current_row_and_writes_a_new_one() -> None:
    current = row("i1", 1, value="old")
    plan = plan_update("d1", dataset(3), {"i1": current}, "i1", {"input": {"v": "new"}}, NOW)
    assert plan.version == 4
    assert plan.close == ("i1",)
    (new,) = plan.insert
    assert new.dataset_version == 4 and new.valid_to is None and not new.is_deleted
    assert new.input == {"v": "new"}
    assert new.created_at == T0  # the item keeps its creation time
    assert new.updated_at == NOW


def test_update_keeps_fields_not_given_and_clears_with_none() -> None:
    current = row("i1", 1).model_copy(update={"ground_truth": 5, "metadata": {"a": 1}})
    plan = plan_update("d1", dataset(1), {"i1": current}, "i1", {"metadata": None}, NOW)
    (new,) = plan.insert
    assert new.ground_truth == 5
    assert new.metadata is None


@pytest.mark.parametrize(
    ("latest", "message"),
    [
        ({}, "dataset item 'i1' not found"),
        ({"i1": row("i1", 2, deleted=True)}, "dataset item 'i1' not found"),
        (
            {"i1": row("i1", 1, dataset_id="d2")},
            "not found in dataset 'd1'.*belongs to dataset 'd2'",
        ),
    ],
)
def test_update_of_a_missing_deleted_or_foreign_item_raises(
    latest: dict[str, DatasetItem], message: str
) -> None:
    with pytest.raises(NotFoundError, match=message):
        plan_update("d1", dataset(2), latest, "i1", {"input": 1}, NOW)


def test_update_with_an_invalid_value_raises_validation_error() -> None:
    with pytest.raises(ValidationError, match="input"):
        plan_update("d1", dataset(1), {"i1": row("i1", 1)}, "i1", {"input": None}, NOW)


# -- delete ----------------------------------------------------------------------------------------


def test_delete_closes_rows_and_writes_tombstones_with_their_content() -> None:
    latest = {"a": row("a", 1, value="A"), "b": row("b", 2, value="B")}
    plan = plan_delete("d1", dataset(2), latest, ["a", "b"], NOW, batch=True)
    assert plan is not None
    assert plan.version == 3
    assert plan.close == ("a", "b")
    assert [(t.id, t.is_deleted, t.dataset_version, t.valid_to) for t in plan.insert] == [
        ("a", True, 3, None),
        ("b", True, 3, None),
    ]
    assert plan.insert[0].input == {"v": "A"} and plan.insert[0].created_at == T0
    assert plan.insert[0].updated_at == NOW
    assert plan.written == []


def test_delete_of_nothing_live_writes_nothing() -> None:
    latest = {"gone": row("gone", 2, deleted=True)}
    assert plan_delete("d1", dataset(2), latest, ["gone", "missing"], NOW, batch=True) is None
    assert plan_delete("d1", dataset(2), latest, ["gone"], NOW, batch=False) is None
    # A single delete of a missing item is a no-op even when the dataset is gone.
    assert plan_delete("d1", None, {}, ["missing"], NOW, batch=False) is None


def test_batch_delete_skips_foreign_items_single_delete_refuses_them() -> None:
    latest = {"mine": row("mine", 1), "theirs": row("theirs", 1, dataset_id="d2")}
    plan = plan_delete("d1", dataset(1), latest, ["mine", "theirs", "mine"], NOW, batch=True)
    assert plan is not None and plan.close == ("mine",)
    with pytest.raises(NotFoundError, match="belongs to dataset 'd2'"):
        plan_delete("d1", dataset(1), latest, ["theirs"], NOW, batch=False)


def test_batch_delete_in_a_missing_dataset_raises() -> None:
    with pytest.raises(NotFoundError, match="dataset 'd1' not found"):
        plan_delete("d1", None, {}, ["x"], NOW, batch=True)


# -- visibility ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "valid_to", "deleted", "version", "expected"),
    [
        (2, None, False, 1, False),  # written later
        (2, None, False, 2, True),  # written at the version
        (2, None, False, 9, True),  # still current
        (2, 4, False, 3, True),  # replaced later
        (2, 4, False, 4, False),  # replaced at the version
        (4, None, True, 5, False),  # a tombstone is never visible
    ],
)
def test_visible_at(
    written: int, valid_to: int | None, deleted: bool, version: int, expected: bool
) -> None:
    assert visible_at(row("i", written, valid_to=valid_to, deleted=deleted), version) is expected


def test_is_current() -> None:
    assert is_current(row("i", 1))
    assert not is_current(row("i", 1, valid_to=2))
    assert not is_current(row("i", 2, deleted=True))


def test_a_history_replays_to_every_version() -> None:
    # add (v1), update (v2), delete (v3): each version sees exactly one state.
    rows = [row("i", 1, valid_to=2, value="a"), row("i", 2, valid_to=3, value="b"),
            row("i", 3, deleted=True, value="b")]
    seen = {v: [r.input for r in rows if visible_at(r, v)] for v in range(4)}
    assert seen == {0: [], 1: [{"v": "a"}], 2: [{"v": "b"}], 3: []}
