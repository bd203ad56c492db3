"""Experiments domain behaviour: experiment runs, per-item results, review summary."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any, ClassVar

import pytest

from composite_store import (
    ConflictError,
    Experiment,
    ExperimentResult,
    NotFoundError,
    Pagination,
    ReviewSummary,
    Store,
    ValidationError,
)
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import PAGINATION_EDGES, at

__all__ = ["ExperimentsSuite"]

UNICODE = "Grüße \u2013 你好 🚀"


def ids(items: list[Any]) -> list[str]:
    return [item.id for item in items]


async def experiment(store: Store, eid: str = "e1", **kw: Any) -> Experiment:
    kw.setdefault("target_type", "agent")
    kw.setdefault("target_id", "agent-1")
    return await store.experiments.create_experiment(id=eid, **kw)


async def result(
    store: Store, item: str, eid: str = "e1", seconds: float = 0, **kw: Any
) -> ExperimentResult:
    kw.setdefault("input", {"q": item})
    kw.setdefault("started_at", at(seconds))
    kw.setdefault("completed_at", at(seconds + 0.5))
    return await store.experiments.add_experiment_result(
        experiment_id=eid, item_id=item, **kw
    )


class ExperimentsSuite(Suite):
    """Every rule of the experiments domain (DESIGN.md sections 2, 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("experiments",)

    # -- experiments -------------------------------------------------------------------------------

    async def test_create_experiment_is_pending_with_zero_counts(self, cs_store: Store) -> None:
        created = await cs_store.experiments.create_experiment(
            target_type="agent", target_id="agent-1", total_items=5
        )
        assert len(created.id) == 36
        assert created.status == "pending"
        assert (created.succeeded_count, created.failed_count, created.skipped_count) == (0, 0, 0)
        assert created.total_items == 5
        assert created.dataset_id is None and created.dataset_version is None
        assert created.started_at is None and created.completed_at is None
        assert await cs_store.experiments.get_experiment_by_id(id=created.id) == created

    async def test_experiment_round_trips_every_field(self, cs_store: Store) -> None:
        created = await experiment(
            cs_store,
            "full",
            name=UNICODE,
            description="every field",
            metadata={"model": "gpt", "nested": {"n": [1, 2.5, None]}},
            dataset_id="ds-1",
            dataset_version=5,
            target_type="workflow",
            target_id="wf-1",
            total_items=3,
        )
        got = await cs_store.experiments.get_experiment_by_id(id="full")
        assert got == created
        assert got.dataset_version == 5 and isinstance(got.dataset_version, int)

    async def test_get_missing_experiment_returns_none(self, cs_store: Store) -> None:
        assert await cs_store.experiments.get_experiment_by_id(id="nope") is None

    async def test_create_experiment_with_a_taken_id_conflicts(self, cs_store: Store) -> None:
        await experiment(cs_store, "e1", name="first")
        with pytest.raises(ConflictError, match="experiment 'e1' already exists"):
            await experiment(cs_store, "e1", name="second")
        got = await cs_store.experiments.get_experiment_by_id(id="e1")
        assert got is not None and got.name == "first"

    async def test_create_experiment_rejects_bad_input(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError, match="target_type"):
            await experiment(cs_store, "bad", target_type="")
        with pytest.raises(ValidationError, match="total_items must be >= 0"):
            await experiment(cs_store, "bad", total_items=-1)
        with pytest.raises(ValidationError, match="dataset_version must be an integer"):
            await experiment(cs_store, "bad", dataset_version="3")
        assert await cs_store.experiments.get_experiment_by_id(id="bad") is None

    async def test_update_experiment_changes_only_what_is_given(self, cs_store: Store) -> None:
        created = await experiment(
            cs_store, name="run", description="desc", metadata={"k": "v"}, total_items=3
        )
        started = datetime(2024, 5, 17, 11, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
        updated = await cs_store.experiments.update_experiment(
            id="e1", status="running", succeeded_count=1, skipped_count=1, started_at=started
        )
        assert updated.status == "running"
        assert (updated.succeeded_count, updated.failed_count, updated.skipped_count) == (1, 0, 1)
        assert updated.started_at == datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)
        assert (updated.name, updated.description, updated.metadata) == ("run", "desc", {"k": "v"})
        assert updated.created_at == created.created_at
        assert updated.updated_at is not None and created.updated_at is not None
        assert updated.updated_at >= created.updated_at
        assert await cs_store.experiments.get_experiment_by_id(id="e1") == updated
        done = await cs_store.experiments.update_experiment(
            id="e1", status="completed", completed_at="2024-05-17T10:00:00Z", total_items=10,
            description=None,
        )
        assert done.completed_at == datetime(2024, 5, 17, 10, tzinfo=UTC)
        assert done.total_items == 10 and done.description is None
        assert done.started_at == updated.started_at

    async def test_update_experiment_rejects_bad_values_and_writes_nothing(
        self, cs_store: Store
    ) -> None:
        created = await experiment(cs_store)
        with pytest.raises(ValidationError, match="status"):
            await cs_store.experiments.update_experiment(id="e1", status="exploded")  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="failed_count"):
            await cs_store.experiments.update_experiment(id="e1", failed_count=-2)
        with pytest.raises(ValidationError, match="naive"):
            await cs_store.experiments.update_experiment(id="e1", started_at=datetime(2024, 1, 1))
        assert await cs_store.experiments.get_experiment_by_id(id="e1") == created

    async def test_update_missing_experiment_raises_not_found(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="experiment 'nope' not found"):
            await cs_store.experiments.update_experiment(id="nope", status="running")

    async def test_list_experiments_newest_first_with_filters(self, cs_store: Store) -> None:
        await experiment(cs_store, "e0", dataset_id="ds1", target_id="a1")
        await experiment(cs_store, "e1", dataset_id="ds1", target_id="a2", target_type="workflow")
        await experiment(cs_store, "e2", dataset_id="ds2", target_id="a1")
        await experiment(cs_store, "e3", target_id="a1")
        await cs_store.experiments.update_experiment(id="e2", status="failed")

        async def listed(**filters: Any) -> list[str]:
            return ids((await cs_store.experiments.list_experiments(**filters)).items)

        assert await listed() == ["e3", "e2", "e1", "e0"]
        assert await listed(dataset_id="ds1") == ["e1", "e0"]
        assert await listed(target_type="workflow") == ["e1"]
        assert await listed(target_id="a1") == ["e3", "e2", "e0"]
        assert await listed(target_id="a1", dataset_id="ds1") == ["e0"]
        assert await listed(status="failed") == ["e2"]
        assert await listed(status="pending", target_type="agent") == ["e3", "e0"]
        page = await cs_store.experiments.list_experiments(dataset_id="ds1")
        assert page.total == 2 and page.per_page == 100
        with pytest.raises(ValidationError, match="status must be one of"):
            await cs_store.experiments.list_experiments(status="done")  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_experiments_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        for n in range(total):
            await experiment(cs_store, f"e{n}")
        found = await cs_store.experiments.list_experiments(
            pagination=Pagination(page=page, per_page=per_page)
        )
        assert ids(found.items) == [f"e{total - 1 - i}" for i in expected]
        assert found.total == total
        assert found.has_more is has_more
        assert found.per_page == per_page

    async def test_delete_experiment_deletes_its_results(self, cs_store: Store) -> None:
        await experiment(cs_store, "e1")
        await experiment(cs_store, "e2")
        gone = await result(cs_store, "i1", "e1")
        kept = await result(cs_store, "i1", "e2")
        await cs_store.experiments.delete_experiment(id="e1")
        assert await cs_store.experiments.get_experiment_by_id(id="e1") is None
        assert await cs_store.experiments.get_experiment_result_by_id(id=gone.id) is None
        assert await cs_store.experiments.get_experiment_result_by_id(id=kept.id) == kept
        assert (await cs_store.experiments.list_experiment_results(experiment_id="e1")).total == 0
        await cs_store.experiments.delete_experiment(id="e1")  # a second delete is a no-op

    # -- results -----------------------------------------------------------------------------------

    async def test_result_round_trips_every_field(self, cs_store: Store) -> None:
        await experiment(cs_store)
        added = await result(
            cs_store,
            "item-1",
            id="r1",
            item_dataset_version=42,
            input={"q": UNICODE},
            output={"a": "world", "list": [1, None]},
            ground_truth="world",
            error={"message": "Something failed", "code": "ERR_TEST"},
            retry_count=2,
            trace_id="trace-1",
            status="needs-review",
            tags=["hallucination", "slow"],
        )
        got = await cs_store.experiments.get_experiment_result_by_id(id="r1")
        assert got == added
        assert got.item_dataset_version == 42
        assert got.started_at == at(0) and got.completed_at == at(0.5)
        assert got.created_at is not None

    async def test_result_defaults(self, cs_store: Store) -> None:
        await experiment(cs_store)
        added = await cs_store.experiments.add_experiment_result(
            experiment_id="e1", item_id="i1", input="q"
        )
        assert len(added.id) == 36
        assert (added.output, added.ground_truth, added.error) == (None, None, None)
        assert added.retry_count == 0
        assert (added.status, added.tags, added.trace_id) == (None, None, None)
        assert added.started_at is not None and added.completed_at is not None
        assert await cs_store.experiments.get_experiment_result_by_id(id=added.id) == added
        assert await cs_store.experiments.get_experiment_result_by_id(id="nope") is None

    async def test_add_result_to_a_missing_experiment_raises(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="experiment 'nope' not found"):
            await result(cs_store, "i1", "nope")
        assert (await cs_store.experiments.list_experiment_results()).total == 0

    async def test_one_result_per_item_and_unique_ids(self, cs_store: Store) -> None:
        await experiment(cs_store, "e1")
        await experiment(cs_store, "e2")
        first = await result(cs_store, "i1", "e1", id="r1")
        with pytest.raises(ConflictError, match="already has a result for item 'i1'"):
            await result(cs_store, "i1", "e1", output="again")
        with pytest.raises(ConflictError, match="experiment result 'r1' already exists"):
            await result(cs_store, "i2", "e1", id="r1")
        await result(cs_store, "i1", "e2")  # the same item in another experiment is fine
        assert await cs_store.experiments.get_experiment_result_by_id(id="r1") == first
        assert (await cs_store.experiments.list_experiment_results(experiment_id="e1")).total == 1

    async def test_add_result_rejects_bad_input(self, cs_store: Store) -> None:
        await experiment(cs_store)
        with pytest.raises(ValidationError, match="input is required"):
            await result(cs_store, "i1", input=None)
        with pytest.raises(ValidationError, match="status"):
            await result(cs_store, "i1", status="maybe")
        with pytest.raises(ValidationError, match="retry_count must be >= 0"):
            await result(cs_store, "i1", retry_count=-1)
        with pytest.raises(ValidationError, match="item_id"):
            await result(cs_store, "")
        assert (await cs_store.experiments.list_experiment_results()).total == 0

    async def test_update_result_sets_review_status_and_tags(self, cs_store: Store) -> None:
        await experiment(cs_store)
        added = await result(cs_store, "i1", output={"a": 1})
        updated = await cs_store.experiments.update_experiment_result(
            id=added.id, experiment_id="e1", status="needs-review", tags=["hallucination"]
        )
        assert updated.status == "needs-review" and updated.tags == ["hallucination"]
        assert updated.output == {"a": 1} and updated.started_at == added.started_at
        assert await cs_store.experiments.get_experiment_result_by_id(id=added.id) == updated
        tags_only = await cs_store.experiments.update_experiment_result(id=added.id, tags=["x"])
        assert tags_only.status == "needs-review" and tags_only.tags == ["x"]
        cleared = await cs_store.experiments.update_experiment_result(id=added.id, status=None)
        assert cleared.status is None and cleared.tags == ["x"]
        assert await cs_store.experiments.get_experiment_result_by_id(id=added.id) == cleared

    async def test_update_result_that_is_missing_or_elsewhere_raises(self, cs_store: Store) -> None:
        await experiment(cs_store, "e1")
        await experiment(cs_store, "e2")
        added = await result(cs_store, "i1", "e1")
        with pytest.raises(NotFoundError, match="experiment result 'nope' not found"):
            await cs_store.experiments.update_experiment_result(id="nope", status="reviewed")
        with pytest.raises(NotFoundError, match="not found in experiment 'e2'"):
            await cs_store.experiments.update_experiment_result(
                id=added.id, experiment_id="e2", status="reviewed"
            )
        with pytest.raises(ValidationError, match="status"):
            await cs_store.experiments.update_experiment_result(id=added.id, status="great")  # type: ignore[arg-type]
        assert await cs_store.experiments.get_experiment_result_by_id(id=added.id) == added

    async def test_results_list_in_execution_order(self, cs_store: Store) -> None:
        await experiment(cs_store, "e1")
        await experiment(cs_store, "e2")
        await result(cs_store, "late", "e1", 5, id="r-late")
        await result(cs_store, "early", "e1", 1, id="r-early")
        await result(cs_store, "tie-b", "e1", 3, id="r-b")
        await result(cs_store, "tie-a", "e1", 3, id="r-a")
        await result(cs_store, "other", "e2", 0, id="r-other")
        page = await cs_store.experiments.list_experiment_results(experiment_id="e1")
        assert ids(page.items) == ["r-early", "r-a", "r-b", "r-late"]  # ties by id
        assert page.total == 4 and page.per_page == 100
        everything = await cs_store.experiments.list_experiment_results()
        assert ids(everything.items) == ["r-other", "r-early", "r-a", "r-b", "r-late"]

    async def test_results_filter_by_review_status(self, cs_store: Store) -> None:
        await experiment(cs_store, "e1")
        await experiment(cs_store, "e2")
        await result(cs_store, "a", "e1", 0, id="a", status="needs-review")
        await result(cs_store, "b", "e1", 1, id="b", status="reviewed")
        await result(cs_store, "c", "e1", 2, id="c", status="needs-review")
        await result(cs_store, "d", "e2", 3, id="d", status="needs-review")
        await result(cs_store, "e", "e1", 4, id="e")
        found = await cs_store.experiments.list_experiment_results(
            experiment_id="e1", status="needs-review"
        )
        assert ids(found.items) == ["a", "c"] and found.total == 2
        across = await cs_store.experiments.list_experiment_results(status="needs-review")
        assert ids(across.items) == ["a", "c", "d"]
        with pytest.raises(ValidationError, match="status must be one of"):
            await cs_store.experiments.list_experiment_results(status="pending")  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_results_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        await experiment(cs_store)
        for n in range(total):
            await result(cs_store, f"i{n}", seconds=n, id=f"r{n}")
        found = await cs_store.experiments.list_experiment_results(
            experiment_id="e1", pagination={"page": page, "perPage": per_page}
        )
        assert ids(found.items) == [f"r{i}" for i in expected]
        assert found.total == total
        assert found.has_more is has_more

    async def test_delete_experiment_results_keeps_the_experiment(self, cs_store: Store) -> None:
        created = await experiment(cs_store, "e1")
        await experiment(cs_store, "e2")
        await result(cs_store, "i1", "e1")
        await result(cs_store, "i2", "e1")
        other = await result(cs_store, "i1", "e2")
        await cs_store.experiments.delete_experiment_results(experiment_id="e1")
        assert (await cs_store.experiments.list_experiment_results(experiment_id="e1")).items == []
        assert await cs_store.experiments.get_experiment_by_id(id="e1") == created
        assert await cs_store.experiments.get_experiment_result_by_id(id=other.id) == other
        await result(cs_store, "i1", "e1")  # the item can be recorded again

    # -- review summary ----------------------------------------------------------------------------

    async def test_review_summary_counts_per_experiment(self, cs_store: Store) -> None:
        assert await cs_store.experiments.get_review_summary() == []
        for eid in ("e1", "e2", "e3"):
            await experiment(cs_store, eid)
        statuses = ["needs-review", "needs-review", "reviewed", "complete", None]
        for n, status in enumerate(statuses):
            await result(cs_store, f"i{n}", "e1", status=status)
        await result(cs_store, "i0", "e2", status="complete")
        changed = await result(cs_store, "i1", "e2")
        await cs_store.experiments.update_experiment_result(id=changed.id, status="reviewed")
        summary = await cs_store.experiments.get_review_summary()
        assert summary == [
            ReviewSummary(experiment_id="e1", total=5, needs_review=2, reviewed=1, complete=1),
            ReviewSummary(experiment_id="e2", total=2, needs_review=0, reviewed=1, complete=1),
        ]  # e3 has no results
        assert summary[0].stored()["needsReview"] == 2
        await cs_store.experiments.delete_experiment(id="e1")
        assert [s.experiment_id for s in await cs_store.experiments.get_review_summary()] == ["e2"]
