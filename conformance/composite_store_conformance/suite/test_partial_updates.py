"""Partial updates leave every field they do not name as it was, in every domain but memory
(``MemoryEdgesSuite`` holds the memory ones); dataset item batches cross the declared chunks.

Each record is written with every optional field set to a distinctive value, updated through one
field, and compared whole with the original except for that field and ``updated_at``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import pytest

from composite_store import Store
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import at
from composite_store_conformance.suite.test_memory_edges import JSON_LOOKING, batch_size

__all__ = ["PartialUpdatesSuite"]

F = TypeVar("F", bound=Callable[..., Any])

#: Fields a partial update may change besides the ones it names.
CHANGING = {"updated_at"}


async def _domain(store: Store, name: str) -> Any:
    """The domain ``name``, initialized and empty; skips where the store does not offer it."""
    domain = store.get(name)
    if domain is None:
        pytest.skip(f"{store.backend} does not offer the {name} domain")
    await domain.init()
    await domain.dangerously_clear_all()
    return domain


def _of(domain: str) -> Callable[[F], F]:
    """File the test under ``domain`` in ``composite-store check``'s report."""

    def mark(test: F) -> F:
        test.cs_domain = domain  # type: ignore[attr-defined]
        return test

    return mark


def _unchanged(before: Any, after: Any, named: set[str]) -> dict[str, tuple[Any, Any]]:
    """The fields other than ``named`` (and ``updated_at``) that differ: name -> (was, is)."""
    was, now = before.model_dump(), after.model_dump()
    return {
        k: (was[k], now.get(k))
        for k in was
        if k not in named | CHANGING and was[k] != now.get(k)
    }


async def _one_field_at_a_time(
    read: Callable[[], Any], update: Callable[..., Any], changes: list[tuple[str, Any]]
) -> None:
    """Update each (field, value) of ``changes`` in turn; each read back must differ from the
    one before in that field (and ``updated_at``) only."""
    for field, value in changes:
        before = await read()
        await update(**{field: value})
        after = await read()
        assert getattr(after, field) == value
        assert _unchanged(before, after, {field}) == {}, f"update of {field} changed more"


class PartialUpdatesSuite(Suite):
    """``update_*`` changes only what it is given (DESIGN.md sections 3 and 10)."""

    #: Each test initializes the domain it needs (see ``_domain``).
    domains: ClassVar[tuple[str, ...]] = ()

    @_of("datasets")
    async def test_update_dataset_changes_only_what_it_names(self, cs_store: Store) -> None:
        datasets = await _domain(cs_store, "datasets")
        full = await datasets.create_dataset(
            name="n", description="d", metadata={"m": {"x": 1}}, input_schema={"type": "object"},
            ground_truth_schema={"type": "string"}, tags=["a", "b"], target_type="agent",
            target_ids=["ag1"], scorer_ids=["s1"],
        )
        await _one_field_at_a_time(
            lambda: datasets.get_dataset_by_id(id=full.id),
            lambda **change: datasets.update_dataset(id=full.id, **change),
            [("description", "new"), ("tags", ["c"]), ("metadata", {"k": 2}), ("name", "renamed")],
        )

    @_of("datasets")
    async def test_update_item_changes_only_what_it_names(self, cs_store: Store) -> None:
        datasets = await _domain(cs_store, "datasets")
        ds = await datasets.create_dataset(name="n")
        item = await datasets.add_item(
            dataset_id=ds.id, input={"q": "?"}, ground_truth="a", request_context={"r": 1},
            metadata={"m": 1}, source={"type": "csv"},
        )
        updated = await datasets.update_item(id=item.id, dataset_id=ds.id, metadata={"m": 2})
        got = await datasets.get_item_by_id(id=item.id)
        for found in (updated, got):
            assert found.metadata == {"m": 2}
            assert (found.input, found.ground_truth, found.request_context, found.source) == (
                {"q": "?"}, "a", {"r": 1}, {"type": "csv"}
            ), "an update of metadata changed the item's other fields"
            assert found.created_at == item.created_at and found.dataset_id == ds.id

    @_of("datasets")
    async def test_batch_items_cross_every_declared_chunk(self, cs_store: Store) -> None:
        datasets = await _domain(cs_store, "datasets")
        ds = await datasets.create_dataset(name="n")
        n = batch_size(datasets)
        items = await datasets.batch_insert_items(
            dataset_id=ds.id, items=[{"input": {"i": i}, "id": f"i{i:05d}"} for i in range(n)]
        )
        assert len(items) == n
        page = await datasets.list_items(dataset_id=ds.id, pagination={"page": 0, "per_page": 1})
        assert page.total == n, f"{n} items inserted in one batch, {page.total} stored"
        await datasets.batch_delete_items(
            dataset_id=ds.id, item_ids=[f"i{i:05d}" for i in range(n - 1)]
        )
        page = await datasets.list_items(dataset_id=ds.id)
        assert [i.id for i in page.items] == [f"i{n - 1:05d}"] and page.total == 1

    @_of("experiments")
    async def test_update_experiment_changes_only_what_it_names(self, cs_store: Store) -> None:
        experiments = await _domain(cs_store, "experiments")
        full = await experiments.create_experiment(
            target_type="agent", target_id="ag1", name="n", description="d",
            metadata={"m": 1}, dataset_id="ds1", dataset_version=3, total_items=7,
        )
        await _one_field_at_a_time(
            lambda: experiments.get_experiment_by_id(id=full.id),
            lambda **change: experiments.update_experiment(id=full.id, **change),
            [("status", "running"), ("succeeded_count", 2), ("metadata", {"k": 2}),
             ("name", "renamed")],
        )

    @_of("experiments")
    async def test_update_experiment_result_changes_only_what_it_names(
        self, cs_store: Store
    ) -> None:
        experiments = await _domain(cs_store, "experiments")
        exp = await experiments.create_experiment(target_type="agent", target_id="ag1")
        result = await experiments.add_experiment_result(
            experiment_id=exp.id, item_id="it1", input={"q": 1}, output={"a": 2},
            ground_truth="gt", error={"message": "e"}, started_at=at(0), completed_at=at(1),
            retry_count=2, trace_id="tr1", status="needs-review", tags=["x"],
        )
        await _one_field_at_a_time(
            lambda: experiments.get_experiment_result_by_id(id=result.id),
            lambda **change: experiments.update_experiment_result(id=result.id, **change),
            [("tags", ["y", "z"]), ("status", "reviewed")],
        )

    @_of("observability")
    async def test_update_span_changes_only_what_it_names(self, cs_store: Store) -> None:
        observability = await _domain(cs_store, "observability")
        span = await observability.create_span(
            span={
                "traceId": "tr", "spanId": "sp", "name": "n", "spanType": "agent_run",
                "startedAt": at(0), "entityType": "agent", "entityId": "a1", "userId": "u",
                "metadata": {"m": 1}, "tags": ["t"], "attributes": {"k": "v"},
                "input": {"in": 1}, "output": JSON_LOOKING[0], "createdAt": at(0),
            }
        )
        await _one_field_at_a_time(
            lambda: observability.get_span(trace_id="tr", span_id="sp"),
            lambda **change: observability.update_span(trace_id="tr", span_id="sp", updates=change),
            [("ended_at", at(5)), ("output", {"o": 2}), ("metadata", {"m": 2})],
        )
        assert (await observability.get_span(trace_id="tr", span_id="sp")).created_at == (
            span.created_at
        )

    @_of("observability")
    async def test_json_looking_strings_in_json_columns_stay_strings(
        self, cs_store: Store
    ) -> None:
        observability = await _domain(cs_store, "observability")
        for i, value in enumerate(JSON_LOOKING):
            await observability.create_span(
                span={"traceId": f"tr{i}", "spanId": "sp", "name": "n", "spanType": "agent_run",
                      "startedAt": at(0), "input": value, "output": value}
            )
        got = [
            await observability.get_span(trace_id=f"tr{i}", span_id="sp")
            for i in range(len(JSON_LOOKING))
        ]
        assert [(s.input, s.output) for s in got] == [(v, v) for v in JSON_LOOKING]
