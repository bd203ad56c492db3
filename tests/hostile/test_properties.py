"""The bad-input rule, property by property, on every backend (docs/input.md).

Every public call either round-trips its input verbatim or raises ``ValidationError`` before
anything is written; a read either answers or raises ``ValidationError``. Inputs: NUL bytes,
lone surrogates, 1 MB strings, operator-looking keys and values (``$where``, ``a.b``, ``{``,
``*``), padded and case-folded lookalikes, NaN and infinities, JSON nested to and past the
limit (10,000 deep), huge and negative paging, and wrong types in every argument.

``--hypothesis-profile=deep`` runs 10,000 examples per backend and test (conftest.py).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from composite_store import ConflictError, NotFoundError, Page, ValidationError
from tests.hostile.conftest import Live
from tests.hostile.strategies import (
    anything,
    deep,
    ids,
    json_objects,
    json_values,
    same_json,
    texts,
    texts_or_big,
    valid_id,
)

# -- writes round-trip verbatim or write nothing -------------------------------------------------


@given(tid=ids, rid=ids, title=st.one_of(texts_or_big, anything), metadata=json_objects)
def test_save_thread_round_trips_or_writes_nothing(
    live: Live, tid: Any, rid: Any, title: Any, metadata: Any
) -> None:
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.dangerously_clear_all()
        row = {"id": tid, "resourceId": rid, "title": title, "metadata": metadata}
        try:
            await memory.save_thread(thread=row)
        except ValidationError:
            assert (await memory.list_threads(per_page=False)).items == []
            return
        got = await memory.get_thread_by_id(thread_id=tid, resource_id=rid)
        assert got is not None
        assert (got.id, got.resource_id, got.title) == (tid, rid, title or "")
        assert same_json(got.metadata, metadata)
        [listed] = (await memory.list_threads(filter={"resource_id": rid})).items
        assert listed.id == tid

    live.run(probe())


@given(mid=ids, text=st.one_of(texts_or_big, anything), metadata=json_objects, extra=json_values)
def test_save_messages_round_trips_or_writes_nothing(
    live: Live, mid: Any, text: Any, metadata: Any, extra: Any
) -> None:
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.dangerously_clear_all()
        await memory.save_thread(thread={"id": "t", "resourceId": "r"})
        ok = {"id": "ok", "threadId": "t", "role": "user", "content": "fine"}
        odd = {
            "id": mid,
            "threadId": "t",
            "resourceId": "r",
            "role": "assistant",
            "content": {
                "format": 2,
                "parts": [{"type": "text", "text": text}],
                "metadata": metadata,
                "toolInvocations": extra,
            },
        }
        try:
            await memory.save_messages(messages=[ok, odd])
        except ValidationError:
            page = await memory.list_messages(thread_id="t", per_page=False)
            assert page.items == [], "a refused batch was half-written"
            return
        page = await memory.list_messages(thread_id="t", resource_id="r", per_page=False)
        got = {m.id: m for m in page.items}
        assert same_json(got[mid].content.parts, [{"type": "text", "text": text}])
        assert same_json(got[mid].content.metadata, metadata)
        assert same_json(got[mid].content.model_extra.get("toolInvocations"), extra)
        [by_id] = await memory.list_messages_by_id(message_ids=[mid])
        assert by_id.thread_id == "t"

    live.run(probe())


@given(rid=ids, working_memory=st.one_of(texts_or_big, anything), metadata=json_objects)
def test_update_resource_round_trips_or_writes_nothing(
    live: Live, rid: Any, working_memory: Any, metadata: Any
) -> None:
    memory = live.domain("memory")

    async def probe() -> None:
        await memory.dangerously_clear_all()
        try:
            await memory.update_resource(
                resource_id=rid, working_memory=working_memory, metadata=metadata
            )
        except ValidationError:
            if valid_id(rid):
                assert await memory.get_resource_by_id(resource_id=rid) is None
            return
        got = await memory.get_resource_by_id(resource_id=rid)
        assert got is not None and got.id == rid and got.working_memory == working_memory
        assert same_json(got.metadata, metadata)

    live.run(probe())


@given(name=ids, run=ids, rid=st.one_of(st.none(), ids), snapshot=json_objects)
def test_persist_workflow_snapshot_round_trips_or_writes_nothing(
    live: Live, name: Any, run: Any, rid: Any, snapshot: Any
) -> None:
    workflows = live.domain("workflows")

    async def probe() -> None:
        await workflows.dangerously_clear_all()
        try:
            await workflows.persist_workflow_snapshot(
                workflow_name=name, run_id=run, resource_id=rid, snapshot=snapshot
            )
        except ValidationError:
            assert (await workflows.list_workflow_runs()).items == []
            return
        loaded = await workflows.load_workflow_snapshot(workflow_name=name, run_id=run)
        assert same_json(loaded, snapshot)
        [listed] = (await workflows.list_workflow_runs(workflow_name=name, resource_id=rid)).items
        assert (listed.workflow_name, listed.run_id, listed.resource_id) == (name, run, rid)

    live.run(probe())


@given(step=ids, result=st.one_of(json_values, deep), context=st.one_of(anything, json_objects))
def test_update_workflow_results_round_trips_or_writes_nothing(
    live: Live, step: Any, result: Any, context: Any
) -> None:
    workflows = live.domain("workflows")

    async def probe() -> None:
        await workflows.dangerously_clear_all()
        await workflows.persist_workflow_snapshot(
            workflow_name="w", run_id="r", snapshot={"context": {}}
        )
        try:
            got = await workflows.update_workflow_results(
                workflow_name="w", run_id="r", step_id=step, result=result, request_context=context
            )
        except ValidationError:
            snap = await workflows.load_workflow_snapshot(workflow_name="w", run_id="r")
            assert snap == {"context": {}}
            return
        assert same_json(got[step], result)
        snap = await workflows.load_workflow_snapshot(workflow_name="w", run_id="r")
        assert snap is not None and same_json(snap["context"][step], result)

    live.run(probe())


# -- reads answer or raise ValidationError -------------------------------------------------------


@given(
    thread_id=ids,
    resource_id=st.one_of(st.none(), ids),
    include=st.one_of(
        st.none(),
        anything,
        st.lists(
            st.fixed_dictionaries(
                {"id": ids},
                optional={
                    "threadId": ids,
                    "withPreviousMessages": anything,
                    "withNextMessages": anything,
                },
            ),
            max_size=2,
        ),
    ),
    page=anything,
    per_page=anything,
    order_by=st.one_of(
        st.none(),
        anything,
        st.fixed_dictionaries({"field": texts}, optional={"direction": anything}),
    ),
    filter=st.one_of(st.none(), anything, st.fixed_dictionaries({"dateRange": anything})),
)
def test_list_messages_answers_or_refuses(live: Live, **kwargs: Any) -> None:
    memory = live.domain("memory")

    async def probe() -> None:
        await _seed_memory(memory)
        try:
            page = await memory.list_messages(**kwargs)
        except ValidationError:
            return
        assert isinstance(page, Page)
        if kwargs["resource_id"] is not None:
            assert all(m.resource_id == kwargs["resource_id"] for m in page.items)

    live.run(probe())


@given(
    filter=st.one_of(
        st.none(),
        anything,
        st.fixed_dictionaries({}, optional={"resource_id": ids, "metadata": anything}),
    ),
    page=anything,
    per_page=anything,
    order_by=st.one_of(st.none(), anything, st.fixed_dictionaries({"field": texts})),
)
def test_list_threads_answers_or_refuses(live: Live, **kwargs: Any) -> None:
    memory = live.domain("memory")

    async def probe() -> None:
        await _seed_memory(memory)
        try:
            page = await memory.list_threads(**kwargs)
        except ValidationError:
            return
        assert isinstance(page, Page)

    live.run(probe())


@given(
    workflow_name=st.one_of(st.none(), ids),
    resource_id=st.one_of(st.none(), ids),
    status=st.one_of(st.none(), ids),
    from_date=st.one_of(st.none(), anything),
    page=st.one_of(st.none(), anything),
    per_page=st.one_of(st.none(), anything),
)
def test_list_workflow_runs_answers_or_refuses(live: Live, **kwargs: Any) -> None:
    workflows = live.domain("workflows")

    async def probe() -> None:
        if not (await workflows.list_workflow_runs(per_page=1)).items:
            await workflows.persist_workflow_snapshot(
                workflow_name="w", run_id="r", resource_id="alice", snapshot={"status": "done"}
            )
        try:
            page = await workflows.list_workflow_runs(**kwargs)
        except ValidationError:
            return
        assert isinstance(page, Page)
        for name in ("workflow_name", "resource_id"):
            if kwargs[name] is not None:
                assert all(getattr(r, name) == kwargs[name] for r in page.items)

    live.run(probe())


@given(first=ids, second=st.one_of(st.none(), ids), third=anything)
def test_point_reads_and_updates_answer_or_refuse(
    live: Live, first: Any, second: Any, third: Any
) -> None:
    memory, workflows = live.domain("memory"), live.domain("workflows")
    calls = [
        lambda: memory.get_thread_by_id(thread_id=first, resource_id=second),
        lambda: memory.get_resource_by_id(resource_id=first),
        lambda: memory.list_messages_by_id(message_ids=[first]),
        lambda: memory.list_messages_by_id(message_ids=third),
        lambda: memory.delete_messages(message_ids=third),
        lambda: memory.update_thread(id=first, title=second, metadata=third),
        lambda: memory.update_messages(messages=[{"id": first, "content": third}]),
        lambda: workflows.load_workflow_snapshot(workflow_name=first, run_id="r"),
        lambda: workflows.get_workflow_run_by_id(run_id=first, workflow_name=second),
        lambda: workflows.update_workflow_state(workflow_name="w", run_id=first, opts=third),
        lambda: memory.clone_thread(source_thread_id="t-alice", new_thread_id=first),
    ]

    async def probe() -> None:
        await _seed_memory(memory)
        for call in calls:
            try:
                await call()
            except (ValidationError, NotFoundError, ConflictError):
                pass  # ConflictError: clone_thread onto an existing thread, as documented
            except Exception as exc:  # the rule: no other error type crosses the API
                raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
        # What the probes may not have changed: alice's thread and her message.
        thread = await memory.get_thread_by_id(thread_id="t-alice")
        assert thread is not None and thread.resource_id == "alice"

    live.run(probe())


async def _seed_memory(memory: Any) -> None:
    """Alice's thread with one message, mallory's with another (once per session)."""
    if await memory.get_thread_by_id(thread_id="t-mallory") is not None:
        return
    await memory.dangerously_clear_all()
    for owner in ("alice", "mallory"):
        await memory.save_thread(thread={"id": f"t-{owner}", "resourceId": owner})
        await memory.save_messages(
            messages=[
                {
                    "id": f"m-{owner}",
                    "threadId": f"t-{owner}",
                    "resourceId": owner,
                    "role": "user",
                    "content": owner,
                }
            ]
        )
