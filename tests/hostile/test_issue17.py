"""Issue 17's probes, one test each, on every backend of tests/hostile/conftest.py.

Each test states the rule the probe broke: identifiers compare exactly, string arguments are
strings, include windows stay inside the caller's resource, bad input is a ``ValidationError``
before anything is written, and a first ``update_resource`` is an upsert under concurrency.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from composite_store import Thread, ValidationError
from composite_store.records.json import MAX_JSON_DEPTH
from composite_store.rules.paging import MAX_PAGE
from tests.hostile.conftest import Live


def _nested(depth: int) -> Any:
    """``depth`` containers, one inside the other, around a scalar."""
    value: Any = 1
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


def message(mid: str, thread: str, resource: str, text: str = "hi", **extra: Any) -> dict[str, Any]:
    """A message as a dict: the store validates it (a ``Message`` would refuse bad content
    before the call)."""
    return {
        "id": mid,
        "threadId": thread,
        "resourceId": resource,
        "role": "user",
        "content": {"format": 2, "parts": [{"type": "text", "text": text}], **extra},
    }


# -- identifiers compare exactly -----------------------------------------------------------------


def test_a_trailing_space_is_another_id(live: Live) -> None:
    live.clear("memory", "workflows")
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.update_resource(resource_id="alice", working_memory="secret")
        assert await memory.get_resource_by_id(resource_id="alice ") is None
        await memory.update_resource(resource_id="alice ", working_memory="mallory was here")
        alice = await memory.get_resource_by_id(resource_id="alice")
        assert alice is not None and alice.working_memory == "secret"
        assert await memory.get_resource_by_id(resource_id="Alice") is None

        await memory.save_thread(thread=Thread(id="t-alice", resource_id="alice", title="mine"))
        await memory.save_thread(thread=Thread(id="t-alice ", resource_id="mallory", title="x"))
        thread = await memory.get_thread_by_id(thread_id="t-alice")
        assert thread is not None and thread.resource_id == "alice" and thread.title == "mine"
        assert await memory.get_thread_by_id(thread_id="t-alice", resource_id="alice ") is None
        page = await memory.list_threads(filter={"resource_id": "alice "})
        assert [t.id for t in page.items] == []
        await memory.save_messages(messages=[message("m1", "t-alice", "alice")])
        await memory.save_messages(messages=[message("m1 ", "t-alice ", "mallory")])
        got = await memory.list_messages_by_id(message_ids=["m1"])
        assert [(m.id, m.thread_id) for m in got] == [("m1", "t-alice")]

    live.run(probe())
    workflows = live.domain("workflows")

    async def runs() -> None:
        await workflows.persist_workflow_snapshot(workflow_name="w", run_id="r", snapshot={"a": 1})
        await workflows.persist_workflow_snapshot(
            workflow_name="w", run_id="r ", snapshot={"a": 2}
        )
        assert await workflows.load_workflow_snapshot(workflow_name="w", run_id="r") == {"a": 1}
        assert await workflows.load_workflow_snapshot(workflow_name="w ", run_id="r") is None
        assert (await workflows.list_workflow_runs(workflow_name="w ")).items == []

    live.run(runs())


# -- string arguments are strings ------------------------------------------------------------------

OPERATORS: list[Any] = [{"$ne": None}, {"$gt": ""}, ["a"], 1, b"w"]


@pytest.mark.parametrize("value", OPERATORS, ids=repr)
def test_workflow_filters_refuse_non_strings(live: Live, value: Any) -> None:
    live.clear("workflows")
    workflows = live.domain("workflows")

    async def probe() -> None:
        await workflows.persist_workflow_snapshot(
            workflow_name="w", run_id="r", resource_id="alice", snapshot={"status": "done"}
        )
        for name in ("status", "resource_id", "workflow_name"):
            with pytest.raises(ValidationError, match=name):
                await workflows.list_workflow_runs(**{name: value})
        with pytest.raises(ValidationError, match="workflow_name"):
            await workflows.get_workflow_run_by_id(run_id="r", workflow_name=value)

    live.run(probe())


@pytest.mark.parametrize("value", OPERATORS, ids=repr)
def test_memory_scopes_refuse_non_strings(live: Live, value: Any) -> None:
    live.clear("memory")
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.save_thread(thread=Thread(id="t", resource_id="alice"))
        with pytest.raises(ValidationError, match="resource_id"):
            await memory.get_thread_by_id(thread_id="t", resource_id=value)
        with pytest.raises(ValidationError, match="resource_id"):
            await memory.list_messages(thread_id="t", resource_id=value)
        with pytest.raises(ValidationError, match="resource_id"):
            await memory.list_threads(filter={"resource_id": value})

    live.run(probe())


# -- include windows stay in the caller's resource -----------------------------------------------


def test_include_cannot_reach_another_resource(live: Live) -> None:
    live.clear("memory")
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.save_thread(thread=Thread(id="ta", resource_id="alice"))
        await memory.save_thread(thread=Thread(id="tm", resource_id="mallory"))
        await memory.save_messages(
            messages=[message(f"a{i}", "ta", "alice", f"secret {i}") for i in range(3)]
        )
        await memory.save_messages(messages=[message("m0", "tm", "mallory")])
        include = [{"id": "a1", "withPreviousMessages": 1, "withNextMessages": 1}]
        page = await memory.list_messages(thread_id="tm", resource_id="mallory", include=include)
        assert [m.id for m in page.items] == ["m0"]
        # Naming alice's thread does not help: the call is scoped to mallory.
        include_t = [{**include[0], "threadId": "ta"}]
        page = await memory.list_messages(thread_id="tm", resource_id="mallory", include=include_t)
        assert [m.id for m in page.items] == ["m0"]
        # Include.thread_id is applied: the target must be in that thread.
        wrong = [{"id": "a1", "threadId": "tm"}]
        page = await memory.list_messages(thread_id="ta", include=wrong)
        assert [m.id for m in page.items] == ["a0", "a1", "a2"]
        page = await memory.list_messages(thread_id="ta", per_page=0, include=wrong)
        assert page.items == []
        # Her own include still works, windows included.
        page = await memory.list_messages(
            thread_id="tm", resource_id="alice", per_page=0, include=include_t
        )
        assert [m.id for m in page.items] == ["a0", "a1", "a2"]

    live.run(probe())


# -- bad input: ValidationError before anything is written -----------------------------------------


def test_a_bad_message_leaves_the_batch_unwritten(live: Live) -> None:
    live.clear("memory")
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.save_thread(thread=Thread(id="t", resource_id="alice"))
        for bad in (
            {"metadata": {"deep": _nested(950)}},
            {"metadata": {"n": math.nan}},
            {"metadata": {"n": math.inf}},
            {"extra": _nested(10_000)},
        ):
            with pytest.raises(ValidationError):
                await memory.save_messages(
                    messages=[message("ok", "t", "alice"), message("bad", "t", "alice", **bad)]
                )
            assert await memory.list_messages_by_id(message_ids=["ok", "bad"]) == []

    live.run(probe())


@pytest.mark.parametrize(
    "metadata",
    [{"deep": _nested(950)}, {"n": math.nan}, {"n": -math.inf}, {1: "x"}, {"s": {1, 2}}],
    ids=["deep", "nan", "-inf", "int-key", "set"],
)
def test_bad_metadata_is_refused_everywhere(live: Live, metadata: dict[Any, Any]) -> None:
    live.clear("memory", "workflows")
    memory, workflows = live.domain("memory"), live.domain("workflows")

    async def probe() -> None:
        with pytest.raises(ValidationError):
            await memory.update_resource(resource_id="r", metadata=metadata)
        assert await memory.get_resource_by_id(resource_id="r") is None
        with pytest.raises(ValidationError):
            await memory.save_resource(resource={"id": "r", "metadata": metadata})
        with pytest.raises(ValidationError):
            await memory.save_thread(thread={"id": "t", "resourceId": "r", "metadata": metadata})
        assert await memory.get_thread_by_id(thread_id="t") is None
        await memory.save_thread(thread={"id": "t", "resourceId": "r"})
        with pytest.raises(ValidationError):
            await memory.update_thread(id="t", metadata=metadata)
        thread = await memory.get_thread_by_id(thread_id="t")
        assert thread is not None and thread.metadata in (None, {})
        with pytest.raises(ValidationError):
            await workflows.persist_workflow_snapshot(
                workflow_name="w", run_id="r", snapshot=metadata
            )
        await workflows.persist_workflow_snapshot(workflow_name="w", run_id="r", snapshot={})
        with pytest.raises(ValidationError):
            await workflows.update_workflow_state(workflow_name="w", run_id="r", opts=metadata)
        with pytest.raises(ValidationError):
            await workflows.update_workflow_results(
                workflow_name="w", run_id="r", step_id="s", result=metadata, request_context={}
            )
        with pytest.raises(ValidationError):
            await workflows.update_workflow_results(
                workflow_name="w", run_id="r", step_id="s", result={}, request_context=metadata
            )
        assert await workflows.load_workflow_snapshot(workflow_name="w", run_id="r") == {}

    live.run(probe())


def test_json_at_the_depth_limit_round_trips(live: Live) -> None:
    live.clear("memory", "workflows")
    memory, workflows = live.domain("memory"), live.domain("workflows")
    deepest = _nested(MAX_JSON_DEPTH - 1)  # inside the metadata object: MAX_JSON_DEPTH levels

    async def probe() -> None:
        stored = await memory.update_resource(resource_id="r", metadata={"d": deepest})
        assert stored.metadata == {"d": deepest}
        got = await memory.get_resource_by_id(resource_id="r")
        assert got is not None and got.metadata == {"d": deepest}
        with pytest.raises(ValidationError, match=str(MAX_JSON_DEPTH)):
            await memory.update_resource(resource_id="r", metadata={"d": [deepest]})
        await workflows.persist_workflow_snapshot(
            workflow_name="w", run_id="r", snapshot={"d": deepest}
        )
        assert await workflows.load_workflow_snapshot(workflow_name="w", run_id="r") == {
            "d": deepest
        }

    live.run(probe())


def test_wrong_types_are_validation_errors(live: Live) -> None:
    live.clear("memory", "workflows")
    memory, workflows = live.domain("memory"), live.domain("workflows")

    async def probe() -> None:
        await memory.save_thread(thread=Thread(id="t", resource_id="r"))
        with pytest.raises(ValidationError):
            await memory.list_messages(thread_id="t", order_by={"direction": "up"})
        with pytest.raises(ValidationError):
            await memory.list_threads(order_by={"field": "createdAt", "direction": "up"})
        with pytest.raises(ValidationError):
            await workflows.update_workflow_results(
                workflow_name="w", run_id="r", step_id="s", result={}, request_context=[1]
            )
        with pytest.raises(ValidationError):
            await workflows.persist_workflow_snapshot(workflow_name="w", run_id="   ", snapshot={})
        assert (await workflows.list_workflow_runs()).items == []
        with pytest.raises(ValidationError):
            await memory.update_thread(id="t", title={"$set": 1})
        with pytest.raises(ValidationError):
            await memory.list_messages(thread_id="t", include=[{"id": {"$ne": None}}])
        with pytest.raises(ValidationError):
            await memory.list_messages(thread_id="t", include=[{"id": "x", "threadId": ["t"]}])

    live.run(probe())


@pytest.mark.parametrize("value", [2**63, MAX_PAGE + 1, -1, 2**63 - 1])
def test_huge_and_negative_paging_is_refused(live: Live, value: int) -> None:
    live.clear("memory", "workflows")
    memory, workflows = live.domain("memory"), live.domain("workflows")

    async def probe() -> None:
        await memory.save_thread(thread=Thread(id="t", resource_id="r"))
        for kwargs in ({"per_page": value}, {"page": value, "per_page": 10}):
            with pytest.raises(ValidationError):
                await memory.list_messages(thread_id="t", **kwargs)
            with pytest.raises(ValidationError):
                await memory.list_threads(**kwargs)
            with pytest.raises(ValidationError):
                await workflows.list_workflow_runs(**kwargs)
        page = await memory.list_threads(page=MAX_PAGE, per_page=MAX_PAGE)
        assert page.items == [] and page.total == 1

    live.run(probe())


# -- concurrency ----------------------------------------------------------------------------------


def test_concurrent_first_update_resource_is_one_upsert(live: Live) -> None:
    live.clear("memory")
    memory = live.domain("memory")

    async def probe() -> None:
        for round_ in range(3):
            rid = f"new-{round_}"
            results = await asyncio.gather(
                *(
                    memory.update_resource(resource_id=rid, metadata={f"k{i}": i})
                    for i in range(40)
                ),
                return_exceptions=True,
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            assert errors == []
            stored = await memory.get_resource_by_id(resource_id=rid)
            assert stored is not None
            assert stored.metadata == {f"k{i}": i for i in range(40)}

    live.run(probe())


# -- errors from the tools: typed, never a traceback -------------------------------------------


def test_an_unreachable_redis_cluster_is_backend_unavailable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from composite_store import BackendUnavailableError, cli, open_store
    from tests.support.servers import free_port

    url = f"redis+cluster://127.0.0.1:{free_port()}/0"

    async def probe() -> None:
        store = open_store(url)
        try:
            with pytest.raises(BackendUnavailableError, match="Redis Cluster"):
                await store.init()
        finally:
            await store.close()

    asyncio.run(probe())
    assert cli.main(["check", url]) != 0
    assert cli.main(["copy", "memory://", url]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "cannot be connected" in err


def test_copy_refuses_a_huge_batch(live: Live) -> None:
    live.clear("memory")
    memory = live.domain("memory")

    async def probe() -> None:
        for limit in (2**63, MAX_PAGE + 1, 0):
            with pytest.raises(ValidationError, match="limit"):
                await memory.export_records(table="threads", limit=limit)
        page = await memory.export_records(table="threads", limit=MAX_PAGE)
        assert page is not None

    live.run(probe())
