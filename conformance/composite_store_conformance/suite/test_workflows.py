"""Workflows domain behaviour: snapshots, run listings and atomic step/state updates."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, ClassVar

import pytest

from composite_store import Page, Store, ValidationError, WorkflowRun
from composite_store_conformance.base import Suite
from composite_store_conformance.cases import PAGINATION_EDGES, at

__all__ = ["WorkflowsSuite"]


def snapshot(status: str = "running", **extra: Any) -> dict[str, Any]:
    return {
        "runId": "r",
        "status": status,
        "value": {},
        "context": {"input": {"q": "hello"}},
        "activePaths": [],
        "serializedStepGraph": [],
        "suspendedPaths": {},
        "timestamp": 1715938200123,
        **extra,
    }


async def _returned(call: Awaitable[object]) -> object:
    """What an operation documented to return None returned (for asserting it)."""
    return await call


def _run_ids(page: Page[WorkflowRun]) -> list[str]:
    return sorted(r.run_id for r in page.items)


class WorkflowsSuite(Suite):
    """Every rule of the workflows domain (DESIGN.md sections 3 and 10)."""

    domains: ClassVar[tuple[str, ...]] = ("workflows",)

    async def persist(self, store: Store, name: str, run: str, seconds: float, **kw: Any) -> None:
        await store.workflows.persist_workflow_snapshot(
            workflow_name=name,
            run_id=run,
            snapshot=kw.pop("snap", snapshot()),
            created_at=at(seconds),
            updated_at=at(seconds),
            **kw,
        )

    async def test_numbers_round_trip_exactly(self, cs_store: Store) -> None:
        """Integers beyond 2**53 stay exact integers and floats stay floats of the same value,
        exponent form included (PostgreSQL's JSONB numeric forgets the exponent)."""
        numbers: dict[str, Any] = {
            "beyond_2_53": 2**53 + 1,
            "int64_min": -(2**63),
            "int64_max": 2**63 - 1,
            "exponent": -5.615791332240261e16,
            "huge": 1.5e300,
            "tiny": 1e-300,
            "plain": 0.1,
            "zero": 0.0,
            "nested": [{"x": 2.5e-8}, 7e22],
        }
        await cs_store.workflows.persist_workflow_snapshot(
            workflow_name="wf", run_id="nums", snapshot={"context": numbers}
        )
        loaded = await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="nums")
        assert loaded is not None
        got = loaded["context"]
        assert got == numbers
        for key, value in numbers.items():
            # Floats stay floats; integers stay integers (a driver's int subclass, such as
            # BSON's Int64, is an int).
            kind = float if isinstance(value, float) else int if isinstance(value, int) else list
            assert isinstance(got[key], kind) and not isinstance(got[key], bool), (key, got[key])
            if kind is int:
                assert not isinstance(got[key], float), (key, got[key])
        assert type(got["nested"][1]) is float and type(got["nested"][0]["x"]) is float

    async def test_persist_and_load_round_trips(self, cs_store: Store) -> None:
        snap = snapshot(nested={"deep": [1, {"x": "ü🚀"}], "none": None}, big="x" * 5000)
        assert (
            await _returned(
                cs_store.workflows.persist_workflow_snapshot(
                    workflow_name="wf", run_id="r1", snapshot=snap
                )
            )
            is None
        )
        assert (
            await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r1") == snap
        )

    async def test_load_missing_returns_none(self, cs_store: Store) -> None:
        assert (
            await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="x") is None
        )
        assert await cs_store.workflows.get_workflow_run_by_id(run_id="x") is None

    async def test_persist_upserts_and_keeps_created_at(self, cs_store: Store) -> None:
        await self.persist(cs_store, "wf", "r1", 0, resource_id="u1")
        await cs_store.workflows.persist_workflow_snapshot(
            workflow_name="wf", run_id="r1", snapshot=snapshot("success"), resource_id="u1"
        )
        run = await cs_store.workflows.get_workflow_run_by_id(run_id="r1", workflow_name="wf")
        assert isinstance(run, WorkflowRun)
        assert run.snapshot["status"] == "success"
        assert run.created_at == at(0)
        assert run.updated_at > at(0)
        assert (await cs_store.workflows.list_workflow_runs()).total == 1

    async def test_same_run_id_in_two_workflows_is_two_runs(self, cs_store: Store) -> None:
        await self.persist(cs_store, "a", "r", 0, snap=snapshot("running"))
        await self.persist(cs_store, "b", "r", 1, snap=snapshot("failed"))
        a = await cs_store.workflows.load_workflow_snapshot(workflow_name="a", run_id="r")
        b = await cs_store.workflows.load_workflow_snapshot(workflow_name="b", run_id="r")
        assert a is not None and b is not None
        assert (a["status"], b["status"]) == ("running", "failed")
        run = await cs_store.workflows.get_workflow_run_by_id(run_id="r", workflow_name="b")
        assert run is not None and run.workflow_name == "b"

    async def test_list_runs_newest_first_returns_everything_without_paging(
        self, cs_store: Store
    ) -> None:
        for i in range(5):
            await self.persist(cs_store, "wf", f"r{i}", i)
        page = await cs_store.workflows.list_workflow_runs()
        assert [r.run_id for r in page.items] == ["r4", "r3", "r2", "r1", "r0"]
        assert page.total == 5 and page.per_page is False and page.has_more is False

    async def test_list_runs_filters(self, cs_store: Store) -> None:
        await self.persist(cs_store, "a", "r1", 1, resource_id="u1", snap=snapshot("success"))
        await self.persist(cs_store, "a", "r2", 2, resource_id="u2", snap=snapshot("failed"))
        await self.persist(cs_store, "b", "r3", 3, resource_id="u1", snap=snapshot("success"))
        names = _run_ids
        assert names(await cs_store.workflows.list_workflow_runs(workflow_name="a")) == ["r1", "r2"]
        assert names(await cs_store.workflows.list_workflow_runs(resource_id="u1")) == ["r1", "r3"]
        assert names(await cs_store.workflows.list_workflow_runs(status="success")) == ["r1", "r3"]
        assert names(await cs_store.workflows.list_workflow_runs(from_date=at(2))) == ["r2", "r3"]
        assert names(await cs_store.workflows.list_workflow_runs(to_date=at(2))) == ["r1", "r2"]
        assert names(
            await cs_store.workflows.list_workflow_runs(from_date=at(2).isoformat(), to_date=at(2))
        ) == ["r2"]
        page = await cs_store.workflows.list_workflow_runs(workflow_name="a", status="failed")
        assert names(page) == ["r2"] and page.total == 1

    @pytest.mark.parametrize(
        ("total", "page", "per_page", "expected", "has_more"), PAGINATION_EDGES
    )
    async def test_list_runs_pagination_edges(
        self,
        cs_store: Store,
        total: int,
        page: int,
        per_page: int | bool,
        expected: list[int],
        has_more: bool,
    ) -> None:
        for i in range(total):
            await self.persist(cs_store, "wf", f"r{i}", -i)
        result = await cs_store.workflows.list_workflow_runs(page=page, per_page=per_page)
        assert [r.run_id for r in result.items] == [f"r{i}" for i in expected]
        assert result.total == total and result.has_more is has_more

    async def test_list_runs_ties_break_and_pages_never_overlap(self, cs_store: Store) -> None:
        for i in range(7):
            await self.persist(cs_store, "wf", f"r{i}", 0)
        seen = []
        for p in range(4):
            seen += [
                r.run_id
                for r in (await cs_store.workflows.list_workflow_runs(page=p, per_page=2)).items
            ]
        assert sorted(seen) == [f"r{i}" for i in range(7)] and len(set(seen)) == 7

    async def test_delete_run(self, cs_store: Store) -> None:
        await self.persist(cs_store, "wf", "r1", 0)
        await self.persist(cs_store, "other", "r1", 0)
        await cs_store.workflows.delete_workflow_run_by_id(run_id="r1", workflow_name="wf")
        assert (
            await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r1") is None
        )
        assert await cs_store.workflows.load_workflow_snapshot(workflow_name="other", run_id="r1")
        await cs_store.workflows.delete_workflow_run_by_id(run_id="r1", workflow_name="wf")

    async def test_update_results_returns_context_and_creates_missing_run(
        self, cs_store: Store
    ) -> None:
        ctx = await cs_store.workflows.update_workflow_results(
            workflow_name="wf",
            run_id="new",
            step_id="s1",
            result={"status": "success", "output": 1},
            request_context={"user": "u1"},
        )
        assert ctx == {"s1": {"status": "success", "output": 1}}
        snap = await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="new")
        assert (
            snap is not None and snap["context"] == ctx and snap["requestContext"] == {"user": "u1"}
        )
        assert snap["runId"] == "new" and snap["status"] == "pending"

    async def test_update_results_merges_into_existing(self, cs_store: Store) -> None:
        await self.persist(cs_store, "wf", "r", 0, snap=snapshot(requestContext={"a": 1}))
        ctx = await cs_store.workflows.update_workflow_results(
            workflow_name="wf",
            run_id="r",
            step_id="s2",
            result={"ok": True},
            request_context={"b": 2},
        )
        assert ctx == {"input": {"q": "hello"}, "s2": {"ok": True}}
        snap = await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r")
        assert snap is not None and snap["requestContext"] == {"a": 1, "b": 2}
        assert snap["status"] == "running"
        run = await cs_store.workflows.get_workflow_run_by_id(run_id="r")
        assert run is not None and run.updated_at > at(0) and run.created_at == at(0)

    async def test_update_state_merges_and_returns_snapshot(self, cs_store: Store) -> None:
        await self.persist(cs_store, "wf", "r", 0)
        updated = await cs_store.workflows.update_workflow_state(
            workflow_name="wf", run_id="r", opts={"status": "success", "result": {"x": 1}}
        )
        assert updated is not None
        assert updated["status"] == "success" and updated["result"] == {"x": 1}
        assert updated["context"] == {"input": {"q": "hello"}}
        assert (
            await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r")
            == updated
        )

    async def test_update_state_of_missing_run_returns_none(self, cs_store: Store) -> None:
        assert (
            await cs_store.workflows.update_workflow_state(
                workflow_name="wf", run_id="ghost", opts={"status": "success"}
            )
            is None
        )
        assert (
            await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="ghost")
            is None
        )

    @pytest.mark.cs_requires("concurrent_updates")
    async def test_concurrent_step_results_keep_every_step(self, cs_store: Store) -> None:
        await self.persist(cs_store, "wf", "r", 0)

        async def step(i: int) -> None:
            await cs_store.workflows.update_workflow_results(
                workflow_name="wf",
                run_id="r",
                step_id=f"step{i}",
                result={"i": i},
                request_context={f"k{i}": i},
            )

        await asyncio.gather(*(step(i) for i in range(24)))
        snap = await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r")
        assert snap is not None
        assert set(snap["context"]) == {"input"} | {f"step{i}" for i in range(24)}
        assert snap["requestContext"] == {f"k{i}": i for i in range(24)}

    @pytest.mark.cs_requires("concurrent_updates")
    async def test_concurrent_state_and_results_lose_nothing(self, cs_store: Store) -> None:
        await self.persist(cs_store, "wf", "r", 0)
        results = [
            cs_store.workflows.update_workflow_results(
                workflow_name="wf", run_id="r", step_id=f"s{i}", result=i
            )
            for i in range(10)
        ]
        states = [
            cs_store.workflows.update_workflow_state(
                workflow_name="wf", run_id="r", opts={f"f{i}": i}
            )
            for i in range(10)
        ]
        await asyncio.gather(*results, *states)
        snap = await cs_store.workflows.load_workflow_snapshot(workflow_name="wf", run_id="r")
        assert snap is not None
        assert {f"s{i}" for i in range(10)} <= set(snap["context"])
        assert all(snap[f"f{i}"] == i for i in range(10))

    async def test_bad_input_is_rejected(self, cs_store: Store) -> None:
        with pytest.raises(ValidationError):
            await cs_store.workflows.persist_workflow_snapshot(
                workflow_name="", run_id="r", snapshot={}
            )
        with pytest.raises(ValidationError):
            await cs_store.workflows.persist_workflow_snapshot(
                workflow_name="wf",
                run_id="r",
                snapshot="not a dict",  # type: ignore[arg-type]
            )
        with pytest.raises(ValidationError, match="per_page must be >= 0"):
            await cs_store.workflows.list_workflow_runs(page=0, per_page=-1)
        assert (await cs_store.workflows.list_workflow_runs()).total == 0
