"""Isolation of the datasets, experiments and workflow-definitions reads: a dataset's items and
versions, an experiment's results, a definition's versions, and nothing of a neighbour whose id
looks like it (see ``test_isolation``)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from composite_store import Pagination, Store, ValidationError, WorkflowDefinition
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import HOSTILE_IDS, OWNERS, at

__all__ = [
    "DatasetsIsolationSuite",
    "ExperimentsIsolationSuite",
    "WorkflowDefinitionsIsolationSuite",
]

ALL = Pagination(per_page=False)


def _ids(items: list[Any]) -> list[str]:
    return sorted(item.id for item in items)


class DatasetsIsolationSuite(Suite):
    """A dataset's reads return its own items and versions; ids and search compare exactly."""

    domains: ClassVar[tuple[str, ...]] = ("datasets",)

    async def datasets_of_every_owner(self, store: Store) -> None:
        """Dataset ``owner`` with items ``<n>-a``, ``<n>-b`` (one batch: dataset version 1)."""
        for n, owner in enumerate(OWNERS):
            await store.datasets.create_dataset(id=owner, name=f"dataset of {owner}")
            await store.datasets.batch_insert_items(
                dataset_id=owner,
                items=[{"id": f"{n}-{x}", "input": {"owner": owner, "x": x}} for x in ("a", "b")],
            )

    async def test_dataset_reads_return_only_its_items(self, cs_store: Store) -> None:
        await self.datasets_of_every_owner(cs_store)
        datasets = cs_store.datasets
        for n, owner in enumerate(OWNERS):
            mine = [f"{n}-a", f"{n}-b"]
            current = await datasets.list_items(dataset_id=owner, pagination=ALL)
            assert (_ids(current.items), current.total) == (mine, 2), owner
            then = await datasets.list_items(dataset_id=owner, version=1, pagination=ALL)
            assert _ids(then.items) == mine, owner
            # Every item of every dataset contains "owner": the search must stay in the dataset.
            found = await datasets.list_items(dataset_id=owner, search="owner", pagination=ALL)
            assert _ids(found.items) == mine, owner
            by_version = await datasets.get_items_by_version(dataset_id=owner, version=1)
            assert _ids(by_version) == mine, owner
            versions = await datasets.list_dataset_versions(dataset_id=owner)
            assert [(v.dataset_id, v.version) for v in versions.items] == [(owner, 1)], owner
            history = await datasets.get_item_history(item_id=f"{n}-a")
            assert [(i.dataset_id, i.id) for i in history] == [(owner, f"{n}-a")], owner
            item = await datasets.get_item_by_id(id=f"{n}-b", dataset_version=1)
            assert item is not None and item.dataset_id == owner, owner

    async def test_pages_of_a_dataset_never_reach_another_dataset(self, cs_store: Store) -> None:
        # Every item was written at dataset version 1 in the same batch, so createdAt ties.
        await self.datasets_of_every_owner(cs_store)
        for n, owner in enumerate(OWNERS):
            seen: list[Any] = []
            for page_no in (0, 1, 2):
                page = await cs_store.datasets.list_items(
                    dataset_id=owner, pagination={"page": page_no, "per_page": 1}
                )
                seen.extend(page.items)
            assert _ids(seen) == [f"{n}-a", f"{n}-b"], owner

    @pytest.mark.parametrize(
        ("term", "expected"),
        [
            (".", ["dot"]),
            (".*", []),
            ("*", ["star"]),
            ("[x]", ["bracket"]),
            ("(", ["paren"]),
            ("^", []),
            ("$", []),
            ("a|b", []),
            ("%", []),
            ("_", []),
        ],
    )
    async def test_search_terms_are_literal_text(
        self, cs_store: Store, term: str, expected: list[str]
    ) -> None:
        # A term that reached a regular expression or a LIKE pattern unescaped would match more.
        await cs_store.datasets.create_dataset(id="d", name="d")
        await cs_store.datasets.batch_insert_items(
            dataset_id="d",
            items=[
                {"id": "dot", "input": "a.b"},
                {"id": "star", "input": "a*b"},
                {"id": "bracket", "input": "[x]"},
                {"id": "paren", "input": "(y)"},
                {"id": "plain", "input": "ab"},
            ],
        )
        page = await cs_store.datasets.list_items(dataset_id="d", search=term, pagination=ALL)
        assert _ids(page.items) == sorted(expected)

    async def test_deleting_hostile_datasets_removes_only_them(self, cs_store: Store) -> None:
        await self.datasets_of_every_owner(cs_store)
        for hostile in HOSTILE_IDS:
            await cs_store.datasets.delete_dataset(id=hostile)
        page = await cs_store.datasets.list_datasets(pagination=ALL)
        assert _ids(page.items) == ["alice", "mallory"]
        items = await cs_store.datasets.list_items(dataset_id="alice", pagination=ALL)
        assert _ids(items.items) == ["0-a", "0-b"]

    @pytest.mark.parametrize("value", [{"$ne": None}, ["alice"], 1, ""], ids=repr)
    async def test_an_operator_in_place_of_a_dataset_id_is_refused(
        self, cs_store: Store, value: Any
    ) -> None:
        datasets = cs_store.datasets
        with pytest.raises(ValidationError, match="dataset_id"):
            await datasets.list_items(dataset_id=value)
        with pytest.raises(ValidationError, match="dataset_id"):
            await datasets.get_items_by_version(dataset_id=value, version=1)
        with pytest.raises(ValidationError, match="dataset_id"):
            await datasets.list_dataset_versions(dataset_id=value)
        with pytest.raises(ValidationError, match="item_id"):
            await datasets.get_item_history(item_id=value)


class ExperimentsIsolationSuite(Suite):
    """An experiment's results, and experiments by dataset or target, stay in their scope."""

    domains: ClassVar[tuple[str, ...]] = ("experiments",)

    async def experiments_of_every_owner(self, store: Store) -> None:
        """Experiment ``owner`` (of dataset ``owner``, target ``owner``) with one result for
        the same item id as every other experiment's, started at the same instant."""
        for owner in OWNERS:
            await store.experiments.create_experiment(
                id=owner, dataset_id=owner, target_type="agent", target_id=owner
            )
            await store.experiments.add_experiment_result(
                experiment_id=owner,
                item_id="item-1",
                input={"owner": owner},
                started_at=at(0),
                completed_at=at(1),
                status="needs-review",
            )

    async def test_experiment_reads_stay_in_their_scope(self, cs_store: Store) -> None:
        await self.experiments_of_every_owner(cs_store)
        experiments = cs_store.experiments
        for owner in OWNERS:
            results = await experiments.list_experiment_results(experiment_id=owner)
            assert [(r.experiment_id, r.input) for r in results.items] == [
                (owner, {"owner": owner})
            ], owner
            assert results.total == 1, owner
            by_dataset = await experiments.list_experiments(dataset_id=owner)
            assert _ids(by_dataset.items) == [owner], owner
            by_target = await experiments.list_experiments(target_type="agent", target_id=owner)
            assert _ids(by_target.items) == [owner], owner
        summary = await experiments.get_review_summary()
        assert sorted((s.experiment_id, s.total) for s in summary) == sorted(
            (owner, 1) for owner in OWNERS
        )

    async def test_deleting_hostile_experiments_removes_only_them(self, cs_store: Store) -> None:
        await self.experiments_of_every_owner(cs_store)
        experiments = cs_store.experiments
        for hostile in HOSTILE_IDS[: len(HOSTILE_IDS) // 2]:
            await experiments.delete_experiment(id=hostile)
        for hostile in HOSTILE_IDS[len(HOSTILE_IDS) // 2 :]:
            await experiments.delete_experiment_results(experiment_id=hostile)
            await experiments.delete_experiment(id=hostile)
        page = await experiments.list_experiments(pagination=ALL)
        assert _ids(page.items) == ["alice", "mallory"]
        results = await experiments.list_experiment_results(pagination=ALL)
        assert sorted(r.experiment_id for r in results.items) == ["alice", "mallory"]


class WorkflowDefinitionsIsolationSuite(Suite):
    """A definition's versions are its own; definition ids compare exactly."""

    domains: ClassVar[tuple[str, ...]] = ("workflow_definitions",)

    async def test_version_reads_stay_with_their_definition(self, cs_store: Store) -> None:
        definitions = cs_store.workflow_definitions
        for owner in OWNERS:
            await definitions.create_workflow_definition(
                definition=WorkflowDefinition(
                    id=owner, name=f"workflow of {owner}", created_at=at(0), updated_at=at(0)
                )
            )
            for number in (1, 2):
                await definitions.create_version(
                    workflow_definition_id=owner, snapshot={"owner": owner, "n": number}
                )
        for owner in OWNERS:
            page = await definitions.list_versions(workflow_definition_id=owner)
            assert [(v.workflow_definition_id, v.version_number) for v in page.items] == [
                (owner, 2),
                (owner, 1),
            ], owner
            latest = await definitions.get_latest_version(workflow_definition_id=owner)
            assert latest is not None and latest.snapshot == {"owner": owner, "n": 2}, owner
            first = await definitions.get_version_by_number(
                workflow_definition_id=owner, version_number=1
            )
            assert first is not None and first.snapshot == {"owner": owner, "n": 1}, owner
            found = await definitions.get_workflow_definition_by_id(id=owner)
            assert found is not None and found.name == f"workflow of {owner}", owner

    async def test_deleting_hostile_definitions_removes_only_them(self, cs_store: Store) -> None:
        definitions = cs_store.workflow_definitions
        for owner in OWNERS:
            await definitions.create_workflow_definition(
                definition=WorkflowDefinition(id=owner, name=f"workflow of {owner}")
            )
            await definitions.create_version(workflow_definition_id=owner, snapshot={"o": owner})
        for hostile in HOSTILE_IDS:
            await definitions.delete_workflow_definition(id=hostile)
        page = await definitions.list_workflow_definitions(pagination=ALL)
        assert _ids(page.items) == ["alice", "mallory"]
        latest = await definitions.get_latest_version(workflow_definition_id="alice")
        assert latest is not None and latest.snapshot == {"o": "alice"}
