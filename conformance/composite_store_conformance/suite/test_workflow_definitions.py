"""Workflow definitions domain behaviour (beta): definitions and their numbered versions."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from composite_store import (
    ConflictError,
    NotFoundError,
    OrderBy,
    Pagination,
    Store,
    ValidationError,
    WorkflowDefinition,
    WorkflowDefinitionVersion,
)
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import PAGINATION_EDGES, at

__all__ = ["WorkflowDefinitionsSuite"]

UNICODE = "Grüße \u2013 你好 🚀"
SNAPSHOT = {
    "name": "greet",
    "steps": [{"id": "echo", "type": "tool", "toolId": "echo-tool"}],
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


def ids(items: list[Any]) -> list[str]:
    return [item.id for item in items]


async def definition(store: Store, did: str = "wf1", seconds: float = 0, **kw: Any) -> Any:
    kw.setdefault("name", f"workflow {did}")
    kw.setdefault("created_at", at(seconds))
    kw.setdefault("updated_at", kw["created_at"])
    return await store.workflow_definitions.create_workflow_definition(
        definition=WorkflowDefinition(id=did, **kw)
    )


async def version(store: Store, did: str = "wf1", **kw: Any) -> WorkflowDefinitionVersion:
    kw.setdefault("snapshot", SNAPSHOT)
    return await store.workflow_definitions.create_version(workflow_definition_id=did, **kw)


class WorkflowDefinitionsSuite(Suite):
    """Every rule of the workflow definitions domain (DESIGN.md sections 2, 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("workflow_definitions",)

    # -- definitions -------------------------------------------------------------------------------

    async def test_create_and_get_round_trip(self, cs_store: Store) -> None:
        created = await definition(
            cs_store, "wf1", description=UNICODE, metadata={"owner": "me", "n": [1, None]}
        )
        assert created.active_version_id is None
        got = await cs_store.workflow_definitions.get_workflow_definition_by_id(id="wf1")
        assert got == created
        assert await cs_store.workflow_definitions.get_workflow_definition_by_id(id="nope") is None

    async def test_create_accepts_dicts_in_every_spelling_and_defaults_the_id(
        self, cs_store: Store
    ) -> None:
        wfd = cs_store.workflow_definitions
        fresh = await wfd.create_workflow_definition(definition={"name": "fresh"})
        assert len(fresh.id) == 36 and fresh.created_at == fresh.updated_at
        camel = await wfd.create_workflow_definition(
            definition={"id": "camel", "name": "c", "createdAt": "2024-05-17T09:30:00.123Z"}
        )
        assert camel.created_at == at(0)
        assert await wfd.get_workflow_definition_by_id(id="camel") == camel

    async def test_create_with_a_taken_id_conflicts(self, cs_store: Store) -> None:
        await definition(cs_store, "wf1", name="first")
        with pytest.raises(ConflictError, match="workflow definition 'wf1' already exists"):
            await definition(cs_store, "wf1", name="second")
        got = await cs_store.workflow_definitions.get_workflow_definition_by_id(id="wf1")
        assert got is not None and got.name == "first"

    async def test_create_rejects_bad_input(self, cs_store: Store) -> None:
        wfd = cs_store.workflow_definitions
        with pytest.raises(ValidationError, match="name"):
            await wfd.create_workflow_definition(definition={"id": "bad"})
        with pytest.raises(ValidationError, match="has no versions yet"):
            await wfd.create_workflow_definition(
                definition={"id": "bad", "name": "x", "activeVersionId": "v1"}
            )
        assert await wfd.get_workflow_definition_by_id(id="bad") is None

    async def test_update_replaces_given_fields_and_bumps_updated_at(self, cs_store: Store) -> None:
        created = await definition(cs_store, description="old", metadata={"a": 1})
        updated = await cs_store.workflow_definitions.update_workflow_definition(
            id="wf1", name="renamed", description=None
        )
        assert (updated.name, updated.description, updated.metadata) == ("renamed", None, {"a": 1})
        assert updated.created_at == created.created_at
        assert updated.updated_at > created.updated_at
        assert (
            await cs_store.workflow_definitions.get_workflow_definition_by_id(id="wf1") == updated
        )

    async def test_update_missing_definition_raises_not_found(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="workflow definition 'nope' not found"):
            await cs_store.workflow_definitions.update_workflow_definition(id="nope", name="x")

    async def test_active_version_must_be_a_version_of_the_definition(
        self, cs_store: Store
    ) -> None:
        wfd = cs_store.workflow_definitions
        await definition(cs_store, "wf1")
        await definition(cs_store, "wf2")
        mine = await version(cs_store, "wf1")
        theirs = await version(cs_store, "wf2")
        active = await wfd.update_workflow_definition(id="wf1", active_version_id=mine.id)
        assert active.active_version_id == mine.id
        for bad in (theirs.id, "missing"):
            with pytest.raises(ValidationError, match="is not a version of workflow definition"):
                await wfd.update_workflow_definition(id="wf1", active_version_id=bad, name="x")
        got = await wfd.get_workflow_definition_by_id(id="wf1")
        assert got == active  # nothing of the failed updates was written
        cleared = await wfd.update_workflow_definition(id="wf1", active_version_id=None)
        assert cleared.active_version_id is None

    async def test_delete_definition_deletes_its_versions(self, cs_store: Store) -> None:
        wfd = cs_store.workflow_definitions
        await definition(cs_store, "wf1")
        await definition(cs_store, "wf2")
        gone = await version(cs_store, "wf1")
        kept = await version(cs_store, "wf2")
        await wfd.delete_workflow_definition(id="wf1")
        assert await wfd.get_workflow_definition_by_id(id="wf1") is None
        assert await wfd.get_version(id=gone.id) is None
        assert (await wfd.list_versions(workflow_definition_id="wf1")).total == 0
        assert await wfd.get_version(id=kept.id) == kept
        await wfd.delete_workflow_definition(id="wf1")  # a second delete is a no-op
        with pytest.raises(NotFoundError):
            await version(cs_store, "wf1")

    async def test_list_definitions_orders(self, cs_store: Store) -> None:
        wfd = cs_store.workflow_definitions
        await definition(cs_store, "a", 0, updated_at=at(30))
        await definition(cs_store, "b", 10, updated_at=at(20))
        await definition(cs_store, "c", 20, updated_at=at(25))
        await definition(cs_store, "tie", 10, updated_at=at(5))
        page = await wfd.list_workflow_definitions()
        assert ids(page.items) == ["c", "tie", "b", "a"]  # newest first, ties by id
        assert page.total == 4 and page.per_page == 100
        by_update = await wfd.list_workflow_definitions(
            order_by={"field": "updated_at", "direction": "DESC"}
        )
        assert ids(by_update.items) == ["a", "c", "b", "tie"]
        oldest = await wfd.list_workflow_definitions(
            order_by=OrderBy(field="createdAt", direction="ASC")
        )
        assert ids(oldest.items) == ["a", "b", "tie", "c"]
        with pytest.raises(ValidationError, match="cannot order by 'name'"):
            await wfd.list_workflow_definitions(order_by={"field": "name"})

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_definitions_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        for n in range(total):
            await definition(cs_store, f"wf{n}", n)
        found = await cs_store.workflow_definitions.list_workflow_definitions(
            pagination=Pagination(page=page, per_page=per_page),
            order_by={"field": "createdAt", "direction": "ASC"},
        )
        assert ids(found.items) == [f"wf{i}" for i in expected]
        assert found.total == total
        assert found.has_more is has_more
        assert found.per_page == per_page

    # -- versions ----------------------------------------------------------------------------------

    async def test_versions_are_numbered_per_definition(self, cs_store: Store) -> None:
        await definition(cs_store, "wf1")
        await definition(cs_store, "wf2")
        first = await version(cs_store, "wf1", changed_fields=["steps"], change_message="initial")
        assert first.version_number == 1 and first.workflow_definition_id == "wf1"
        assert (await version(cs_store, "wf2")).version_number == 1
        assert (await version(cs_store, "wf1")).version_number == 2
        assert (await version(cs_store, "wf1")).version_number == 3
        got = await cs_store.workflow_definitions.get_version(id=first.id)
        assert got == first
        assert got.snapshot == SNAPSHOT and got.changed_fields == ["steps"]
        assert got.change_message == "initial" and got.created_at is not None

    async def test_version_round_trips_any_snapshot(self, cs_store: Store) -> None:
        await definition(cs_store)
        for snapshot in (None, {"text": UNICODE, "deep": {"n": [1, 2.5]}}, ["a", 1]):
            created = await version(cs_store, snapshot=snapshot)
            assert (await cs_store.workflow_definitions.get_version(id=created.id)) == created

    async def test_versions_are_immutable_copies(self, cs_store: Store) -> None:
        await definition(cs_store)
        snapshot = {"steps": ["a"]}
        created = await version(cs_store, snapshot=snapshot)
        snapshot["steps"].append("b")
        created.snapshot["steps"].append("c")
        got = await cs_store.workflow_definitions.get_version(id=created.id)
        assert got is not None and got.snapshot == {"steps": ["a"]}

    async def test_explicit_version_numbers_and_ids(self, cs_store: Store) -> None:
        await definition(cs_store)
        five = await version(cs_store, version_number=5, id="v5")
        assert (five.id, five.version_number) == ("v5", 5)
        assert (await version(cs_store)).version_number == 6  # one more than the highest
        with pytest.raises(ConflictError, match="already has version 5"):
            await version(cs_store, version_number=5)
        with pytest.raises(ConflictError, match="version 'v5' already exists"):
            await version(cs_store, id="v5")
        with pytest.raises(ValidationError, match="version_number must be >= 1"):
            await version(cs_store, version_number=0)
        listed = await cs_store.workflow_definitions.list_versions(workflow_definition_id="wf1")
        assert listed.total == 2

    async def test_create_version_of_a_missing_definition_raises(self, cs_store: Store) -> None:
        with pytest.raises(NotFoundError, match="workflow definition 'nope' not found"):
            await version(cs_store, "nope")

    async def test_create_version_rejects_bad_input(self, cs_store: Store) -> None:
        await definition(cs_store)
        with pytest.raises(ValidationError, match="not JSON data"):
            await version(cs_store, snapshot={"x": {1, 2}})
        with pytest.raises(ValidationError, match=r"changed_?[Ff]ields"):
            await version(cs_store, changed_fields="steps")
        wfd = cs_store.workflow_definitions
        assert await wfd.get_latest_version(workflow_definition_id="wf1") is None

    async def test_get_version_by_number_and_latest(self, cs_store: Store) -> None:
        wfd = cs_store.workflow_definitions
        await definition(cs_store)
        assert await wfd.get_latest_version(workflow_definition_id="wf1") is None
        made = [await version(cs_store, snapshot={"n": n}) for n in range(3)]
        two = await wfd.get_version_by_number(workflow_definition_id="wf1", version_number=2)
        assert two == made[1]
        for definition_id, number in (("wf1", 9), ("nope", 1)):
            assert (
                await wfd.get_version_by_number(
                    workflow_definition_id=definition_id, version_number=number
                )
                is None
            )
        assert await wfd.get_latest_version(workflow_definition_id="wf1") == made[2]
        assert await wfd.get_version(id="nope") is None

    async def test_list_versions_orders(self, cs_store: Store) -> None:
        wfd = cs_store.workflow_definitions
        await definition(cs_store, "wf1")
        await definition(cs_store, "wf2")
        for n in range(3):
            await version(cs_store, "wf1", id=f"v{n + 1}")
        await version(cs_store, "wf2", id="other")
        page = await wfd.list_versions(workflow_definition_id="wf1")
        assert ids(page.items) == ["v3", "v2", "v1"]  # highest number first
        assert page.total == 3 and page.per_page == 100
        ascending = await wfd.list_versions(
            workflow_definition_id="wf1", order_by={"field": "versionNumber", "direction": "ASC"}
        )
        assert ids(ascending.items) == ["v1", "v2", "v3"]
        with pytest.raises(ValidationError, match="cannot order by"):
            await wfd.list_versions(workflow_definition_id="wf1", order_by={"field": "id"})

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_versions_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        await definition(cs_store)
        for _ in range(total):
            await version(cs_store)
        found = await cs_store.workflow_definitions.list_versions(
            workflow_definition_id="wf1", pagination={"page": page, "per_page": per_page}
        )
        assert [v.version_number for v in found.items] == [total - i for i in expected]
        assert found.total == total
        assert found.has_more is has_more

    async def test_concurrent_versions_never_share_a_number(self, cs_store: Store) -> None:
        await definition(cs_store, "wf1")
        await definition(cs_store, "wf2")
        made = await asyncio.gather(
            *(version(cs_store, "wf1", snapshot={"n": n}) for n in range(12)),
            *(version(cs_store, "wf2", snapshot={"n": n}) for n in range(4)),
        )
        assert sorted(v.version_number for v in made[:12]) == list(range(1, 13))
        assert sorted(v.version_number for v in made[12:]) == [1, 2, 3, 4]
        listed = await cs_store.workflow_definitions.list_versions(
            workflow_definition_id="wf1", pagination={"per_page": False}
        )
        assert [v.version_number for v in listed.items] == list(range(12, 0, -1))
