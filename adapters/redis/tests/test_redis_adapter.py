"""The Redis adapter beyond the conformance suite: key layout and slots, URLs and options,
TTLs that never leave index entries behind, refusals instead of scans, provisioning."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from composite_store_redis import RedisStore
from composite_store_redis.batch import Batch
from composite_store_redis.connection import RedisConnection
from composite_store_redis.keys import Keys, escape, pack, unpack
from composite_store_redis.memory import BY_THREAD, BY_THREAD_RESOURCE, RedisMemory
from composite_store_redis.observability import BY_TRACE, ERRORS, ROOTS
from composite_store_redis.provision import create_namespace, drop_namespace, store_url
from composite_store_redis.workflows import LISTINGS
from redis.crc import key_slot

from composite_store import open_store
from composite_store.errors import UnsupportedOperationError, ValidationError
from composite_store.registry import get_adapter
from tests.support.servers import redis as servers

ODD_IDS = ["plain", "a:b", "{t1}", "x}y{z", "100%", "nul\x00byte", "ü🚀", ""]


def slot(key: str) -> int:
    return key_slot(key.encode())


# -- key layout (no server) ----------------------------------------------------------------------


@pytest.mark.parametrize("group", [i for i in ODD_IDS if i])
def test_each_group_shares_one_slot(group: str) -> None:
    keys = Keys("mastra_")
    member = pack("m:{1}")
    thread = [
        keys.record("threads", group),
        keys.record("messages", group, member),
        keys.record_prefix("messages", group) + member,
        keys.index(BY_THREAD, [group]),
        keys.index(BY_THREAD, [group], ttl=True),
        keys.index(BY_THREAD_RESOURCE, [group, "u:1"]),
        keys.index(BY_THREAD_RESOURCE, [group, "u:1"], ttl=True),
    ]
    workflow = [keys.record("workflow_snapshot", group, pack("run"))] + [
        keys.index(index, [group, *("v" for _ in index.partition[1:])])
        for (by_name, _, _), index in LISTINGS.items()
        if by_name
    ]
    trace = [
        keys.record("ai_spans", group, pack("span")),
        keys.index(BY_TRACE, [group]),
        keys.index(ROOTS, [group, "1"]),
        keys.index(ERRORS, [group, "1"]),
        keys.pointer("ai_spans", "trace_rev", group),
    ]
    for same in (thread, workflow, trace):
        assert len({slot(k) for k in same}) == 1, same


def test_keys_name_exactly_one_record() -> None:
    keys = Keys("p_")
    made = {
        keys.record("messages", g, pack(r)): (g, r)
        for g, r in itertools.product([i for i in ODD_IDS if i], ODD_IDS)
    }
    assert len(made) == len([i for i in ODD_IDS if i]) * len(ODD_IDS)
    assert all(k.startswith("p_messages:{") for k in made)
    assert escape("a:{b}%") == "a%3A%7Bb%7D%25"


def test_members_keep_the_order_of_their_values() -> None:
    tuples = sorted(itertools.product(ODD_IDS, repeat=2))
    packed = sorted((pack(*t) for t in tuples), key=lambda m: m.encode())
    assert [tuple(unpack(m)) for m in packed] == tuples


@pytest.mark.parametrize("prefix", ["bad-prefix", "1x", "a b", "x{y}", 7])
def test_a_bad_prefix_is_refused(prefix: Any) -> None:
    with pytest.raises(ValidationError, match="prefix"):
        RedisStore("redis://127.0.0.1:6379/0", prefix=prefix)


# -- URLs and options (no I/O) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "cluster"),
    [
        ("redis://127.0.0.1:6379/0", False),
        ("rediss://user:secret@example.com:6380/2", False),
        ("redis+cluster://127.0.0.1:7000", True),
        ("redis://127.0.0.1:7000?cluster=true", True),
    ],
)
def test_url_forms_open_without_io(url: str, cluster: bool) -> None:
    store = open_store(url, prefix="app_")
    assert isinstance(store, RedisStore) and store.connection.cluster is cluster
    assert store.backend == ("redis_cluster" if cluster else "redis")
    assert "secret" not in repr(store) and "secret" not in str(store.describe())
    memory = store.get("memory")
    assert memory is not None and memory.capabilities.atomic_batches is not cluster
    assert store.get("datasets") is not None and store.get("experiments") is not None
    assert get_adapter("redis+cluster") is RedisStore


def test_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="database 0"):
        RedisStore("redis+cluster://127.0.0.1:7000/3")
    with pytest.raises(ValidationError, match="ttl_memory"):
        RedisStore("redis://127.0.0.1:6379/0?ttl_memory=-1")
    with pytest.raises(ValidationError, match="no TTL for domain 'datasets'"):
        RedisStore("redis://127.0.0.1:6379/0", ttl={"datasets": 10})
    with pytest.raises(ValidationError, match="cluster"):
        RedisStore("redis://127.0.0.1:6379/0?cluster=maybe")
    store = RedisStore("redis://127.0.0.1:6379/0?ttl=60&ttl_scores=5")
    assert store.connection.ttls == {
        "memory": 60_000, "workflows": 60_000, "scores": 5_000, "observability": 60_000
    }


# -- live: a server per test, under a fresh prefix -----------------------------------------------


def _server(cluster: bool) -> str:
    found = servers.find_cluster() if cluster else servers.find()
    if isinstance(found, str):
        pytest.skip(f"no {'cluster' if cluster else 'server'}: {found}")
    return found.url


@asynccontextmanager
async def _store(url: str, **options: Any) -> AsyncIterator[RedisStore]:
    name = await create_namespace(url)
    store = RedisStore(store_url(url, name), **options)
    try:
        async with store:
            yield store
    finally:
        await drop_namespace(url, name)


def _thread(tid: str, resource: str = "u1") -> dict[str, Any]:
    return {"id": tid, "resourceId": resource, "title": tid}


def _message(mid: str, tid: str, seconds: int) -> dict[str, Any]:
    at = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return {"id": mid, "threadId": tid, "role": "user", "content": mid, "createdAt": at,
            "resourceId": "u1"}


async def _workload(store: RedisStore) -> None:
    """Every write and read path of every domain once (several threads, moves, updates)."""
    memory = store.memory
    for tid in ("t:1", "{t2}"):
        await memory.save_thread(thread=_thread(tid))
    await memory.save_messages(messages=[_message(f"m{i}", "t:1", i) for i in range(4)])
    await memory.save_messages(messages=[_message("m0", "{t2}", 0), _message("x", "{t2}", 9)])
    await memory.update_messages(messages=[{"id": "m1", "content": {"content": "new"}}])
    await memory.list_messages(thread_id=["t:1", "{t2}"], include=[{"id": "m2",
                               "withPreviousMessages": 1, "withNextMessages": 1}])
    await memory.list_threads(filter={"resource_id": "u1"})
    await memory.update_thread(id="t:1", title="renamed", metadata={"a": 1})
    await memory.update_resource(resource_id="u1", working_memory="wm")
    await memory.delete_messages(message_ids=["m3", "ghost"])
    await memory.clone_thread(source_thread_id="t:1", new_thread_id="c1")
    await memory.delete_thread(thread_id="t:1")
    workflows = store.workflows
    await workflows.persist_workflow_snapshot(workflow_name="wf", run_id="r1",
                                              snapshot={"status": "running", "context": {}},
                                              resource_id="u1")
    await workflows.update_workflow_results(workflow_name="wf", run_id="r1", step_id="s",
                                            result=1, request_context={})
    await workflows.update_workflow_state(workflow_name="wf", run_id="r1",
                                          opts={"status": "success"})
    await workflows.list_workflow_runs(workflow_name="wf", status="success")
    await workflows.list_workflow_runs(resource_id="u1")
    await workflows.get_workflow_run_by_id(run_id="r1")
    await workflows.delete_workflow_run_by_id(run_id="r1", workflow_name="wf")
    scores = store.scores
    await scores.save_score(score={"id": "s1", "scorerId": "sc", "runId": "r", "scorer": {},
                                   "score": 0.5, "input": 1, "output": 2, "source": "LIVE",
                                   "traceId": "tr", "spanId": "sp", "entityId": "e"})
    await scores.list_scores_by_scorer_id(scorer_id="sc", entity_id="e")
    await scores.list_scores_by_span(trace_id="tr", span_id="sp")
    await scores.save_eval(eval={"input": "i", "output": "o", "result": {"score": 1},
                                 "agentName": "a", "metricName": "m"})
    await scores.list_evals(agent_name="a")
    obs = store.observability
    started = datetime(2024, 1, 1, tzinfo=UTC)
    await obs.batch_create_spans(records=[
        {"traceId": "tr", "spanId": "root", "name": "r", "spanType": "AGENT_RUN",
         "startedAt": started, "tags": ["a"]},
        {"traceId": "tr", "spanId": "c", "parentSpanId": "root", "name": "c",
         "spanType": "TOOL_CALL", "startedAt": started, "error": {"m": "x"}},
    ])
    await obs.update_span(trace_id="tr", span_id="root", updates={"endedAt": started})
    await obs.list_traces(filters={"has_child_error": True})
    await obs.get_trace(trace_id="tr")
    await obs.get_root_span(trace_id="tr")
    await obs.batch_delete_traces(trace_ids=["tr"])
    await obs.batch_insert_otel_spans(records=[
        {"id": "o1", "traceId": "tr", "name": "n", "scope": "s", "kind": 1,
         "startTime": 1_715_938_200_123_456_789, "endTime": 1_715_938_200_123_456_799}
    ])
    await obs.list_otel_spans(filters={"scope": "s", "kind": 1})
    await memory.list_threads(filter={"resource_id": "u1", "metadata": {"a": 1}})
    await memory.list_threads(filter={"metadata": {"a": 1}})
    await obs.list_traces(filters={"span_type": "AGENT_RUN", "tags": ["a", "b"]})
    defs = store.workflow_definitions
    await defs.create_workflow_definition(definition={"id": "d:1", "name": "d"})
    v1 = await defs.create_version(workflow_definition_id="d:1", snapshot={"s": 1})
    await defs.update_workflow_definition(id="d:1", active_version_id=v1.id)
    await defs.list_versions(workflow_definition_id="d:1")
    await defs.delete_workflow_definition(id="d:1")
    datasets = store.datasets
    await datasets.create_dataset(id="ds:1", name="ds")
    await datasets.batch_insert_items(dataset_id="ds:1", items=[{"id": "i:1", "input": 1},
                                                                {"id": "i2", "input": 2}])
    await datasets.update_item(id="i:1", dataset_id="ds:1", input=3)
    await datasets.delete_item(id="i2", dataset_id="ds:1")
    await datasets.list_items(dataset_id="ds:1", version=1)
    await datasets.get_item_history(item_id="i:1")
    await datasets.delete_dataset(id="ds:1")
    experiments = store.experiments
    await experiments.create_experiment(id="e:1", target_type="agent", target_id="a")
    result = await experiments.add_experiment_result(
        experiment_id="e:1", item_id="i:1", input=1, started_at=started, completed_at=started
    )
    await experiments.update_experiment_result(id=result.id, status="reviewed")
    await experiments.get_review_summary()
    await experiments.delete_experiment(id="e:1")


def test_every_script_call_stays_in_one_slot_on_a_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = _server(cluster=True)
    calls: list[tuple[str, list[str]]] = []
    original = RedisConnection.script

    async def spy(self: RedisConnection, name: str, keys: Any, args: Any) -> Any:
        touched = list(keys)
        if name == "PAGE" and args[7]:
            touched.append(args[7])  # the record key prefix the script reads through
        if name == "WINDOW":
            touched.append(args[3])
        calls.append((name, touched))
        return await original(self, name, keys, args)

    monkeypatch.setattr(RedisConnection, "script", spy)

    async def main() -> None:
        async with _store(url) as store:
            await _workload(store)

    asyncio.run(main())
    assert {name for name, _ in calls} >= {"APPLY", "INTERSECT", "PAGE", "WINDOW", "RUN_META"}
    crossing = [(n, k) for n, k in calls if len({slot(key) for key in k}) > 1]
    assert not crossing, crossing[:3]


def test_list_queries_never_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    url = _server(cluster=False)

    async def main() -> None:
        async with _store(url) as store:
            client: Any = store.connection.client

            def refuse(*args: Any, **kwargs: Any) -> Any:
                raise AssertionError("a query scanned the key space")

            monkeypatch.setattr(client, "scan_iter", refuse)
            monkeypatch.setattr(client, "scan", refuse)
            monkeypatch.setattr(client, "keys", refuse)
            await _workload(store)

    asyncio.run(main())


async def _expire_and_check(url: str, write: Callable[[RedisStore], Awaitable[None]],
                            read: Callable[[RedisStore], Awaitable[tuple[int, int]]]) -> None:
    async with _store(url, ttl=0.3) as store:
        await write(store)
        assert await read(store) != (0, 0)
        await asyncio.sleep(0.45)
        # Every record expired: no listing may return or count one of them.
        assert await read(store) == (0, 0)
        # And nothing of the namespace is left behind (records, sets, companions, pointers).
        client: Any = store.connection.client
        left = [k async for k in client.scan_iter(match=f"{store.connection.keys.prefix}*")]
        assert [k for k in left if not k.endswith(":catalog")] == []


def test_ttl_never_leaves_index_entries_of_expired_records() -> None:
    url = _server(cluster=False)

    async def write(store: RedisStore) -> None:
        await store.memory.save_thread(thread=_thread("t1"))
        await store.memory.save_messages(messages=[_message(f"m{i}", "t1", i) for i in range(3)])
        await store.workflows.persist_workflow_snapshot(
            workflow_name="wf", run_id="r", snapshot={"status": "running"}, resource_id="u1"
        )

    async def read(store: RedisStore) -> tuple[int, int]:
        messages = await store.memory.list_messages(thread_id="t1")
        threads = await store.memory.list_threads(filter={"resource_id": "u1"})
        runs = await store.workflows.list_workflow_runs(status="running")
        assert len(messages.items) == messages.total and len(runs.items) == runs.total
        return (messages.total or 0) + (threads.total or 0), runs.total or 0

    asyncio.run(_expire_and_check(url, write, read))


def test_ttl_is_per_domain() -> None:
    url = _server(cluster=False)

    async def main() -> None:
        async with _store(url, ttl={"memory": 0.2}) as store:
            await store.memory.update_resource(resource_id="u1", working_memory="x")
            await store.workflows.persist_workflow_snapshot(
                workflow_name="wf", run_id="r", snapshot={"status": "running"}
            )
            await asyncio.sleep(0.35)
            assert await store.memory.get_resource_by_id(resource_id="u1") is None
            assert await store.workflows.load_workflow_snapshot(
                workflow_name="wf", run_id="r"
            ) == {"status": "running"}

    asyncio.run(main())


def test_filters_no_index_serves_are_refused_not_scanned() -> None:
    url = _server(cluster=False)

    async def main() -> None:
        async with _store(url) as store:
            with pytest.raises(UnsupportedOperationError, match="span_attribute_filters"):
                await store.observability.list_traces(filters={"attributes": {"k": "v"}})
            with pytest.raises(UnsupportedOperationError, match="order by endedAt"):
                await store.observability.list_traces(
                    filters={"ended_at": {"start": datetime(2024, 1, 1, tzinfo=UTC)}}
                )
            # What indexes serve is served: the entity pair, intersections of facets and tags,
            # metadata filters.
            page = await store.observability.list_traces(
                filters={"user_id": "u", "environment": "prod", "tags": ["a", "b"]}
            )
            assert page.items == [] and page.total == 0
            threads = await store.memory.list_threads(filter={"metadata": {"k": "v"}})
            assert threads.items == [] and threads.total == 0
            page = await store.observability.list_traces(
                filters={"entity_type": "agent", "entity_id": "a1"}
            )
            assert page.items == [] and page.total == 0

    asyncio.run(main())


def test_a_domain_stands_alone_and_reports_its_catalog() -> None:
    url = _server(cluster=False)

    async def main() -> None:
        name = await create_namespace(url)
        memory = RedisMemory(url=store_url(url, name))
        try:
            await memory.init()
            await memory.init()  # idempotent
            tables = {t.table: t for t in await memory.describe_physical()}
            assert set(tables) == {"threads", "messages", "resources"}
            assert tables["threads"].name == f"{name}threads"
            indexes = {i.name: i.columns for i in tables["messages"].indexes}
            assert indexes[f"{name}messages_thread_id_createdat_idx"] == ("thread_id", "createdAt")
            await memory.close()
        finally:
            assert await drop_namespace(url, name) >= 3  # the three catalog entries

    asyncio.run(main())


def test_provisioning_refuses_the_whole_database() -> None:
    with pytest.raises(ValidationError, match="non-empty"):
        asyncio.run(drop_namespace("redis://127.0.0.1:6379/9", ""))


def test_docs_redis_md_lists_every_index() -> None:
    from pathlib import Path

    from composite_store_redis import layout_doc

    doc = Path(__file__).resolve().parents[3] / "docs" / "redis.md"
    text = doc.read_text(encoding="utf-8")
    if layout_doc.splice(text) != text:
        pytest.fail(
            "docs/redis.md is out of date with the adapter's indexes; run "
            "`uv run python -m composite_store_redis.layout_doc --write docs/redis.md`"
        )


def test_a_metadata_filter_intersects_sets_of_one_slot() -> None:
    from composite_store_redis.keys import GLOBAL_TAG, Keys, same_slot
    from composite_store_redis.memory import (
        ALL_THREADS,
        BY_RESOURCE,
        META_ALL,
        META_BY_RESOURCE,
        metadata_pair,
    )

    keys = Keys()
    pairs = [metadata_pair("kind", "x"), metadata_pair("n", 1), metadata_pair("a:{b}", "w" * 500)]
    within = [keys.index(BY_RESOURCE, ["u:1"])]
    within += [keys.index(META_BY_RESOURCE, ["u:1", p]) for p in pairs]
    assert same_slot([keys.scratch("threads", "u:1"), *within])
    across = [keys.index(ALL_THREADS, [])]
    across += [keys.index(META_ALL, [GLOBAL_TAG, p]) for p in pairs]
    assert same_slot([keys.scratch("threads", GLOBAL_TAG), *across])
    assert metadata_pair("n", 1) != metadata_pair("n", "1")


def test_metadata_filters_are_off_on_threads_an_older_release_wrote() -> None:
    url = _server(cluster=False)

    async def main() -> None:
        async with _store(url) as store:
            keys, conn = store.connection.keys, store.connection
            catalog = keys.catalog("threads")
            [listed] = await conn.read([["HGET", catalog, "indexes"]])
            older = [i for i in json.loads(listed) if "_meta_" not in i[0]]
            await conn.read([["HSET", catalog, "indexes", json.dumps(older)]])
            memory = RedisStore(client=conn.client, prefix=keys.prefix).memory
            await memory.init()
            assert memory.capabilities.metadata_filters is False
            with pytest.raises(UnsupportedOperationError, match="metadata_filters"):
                await memory.list_threads(filter={"metadata": {"k": "v"}})
            assert store.memory.capabilities.metadata_filters is True

    asyncio.run(main())


#: Text the write script's JSON argument must carry byte for byte: JSON's escapes (quote,
#: backslash, controls, NUL), non-ASCII of every UTF-8 length, and what looks like JSON.
AWKWARD_TEXT = ['"q"\\', "\x00\x01\n\t\x7f", "é€😀\u2028", '{"a":[1]}', "", "1e5", "null"]


@pytest.mark.parametrize("cluster", [False, True], ids=["standalone", "cluster"])
def test_a_batch_writes_its_commands_verbatim_or_nothing(cluster: bool) -> None:
    url = _server(cluster)

    async def run() -> None:
        async with _store(url) as store:
            conn, keys = store.connection, store.memory.keys
            batch = Batch()
            fields = {f"f{i}": text for i, text in enumerate(AWKWARD_TEXT)}
            batch.put_record(keys.record("threads", "g1"), fields)
            batch.set_string(keys.pointer("threads", "p", "g2"), AWKWARD_TEXT[2])
            assert await conn.apply(batch)
            record, pointer = keys.record("threads", "g1"), keys.pointer("threads", "p", "g2")
            stored = await conn.read([["HGETALL", record], ["GET", pointer]])
            assert stored == [fields, AWKWARD_TEXT[2]]
            # A lone surrogate anywhere: refused before any step runs (g3's slot is written
            # by no step), with the text named.
            bad = Batch()
            bad.set_string(keys.pointer("threads", "p", "g3"), "fine")
            bad.set_string(keys.pointer("threads", "p", "g4"), "x\ud800")
            with pytest.raises(ValidationError, match=r"\\\\ud800"):
                await conn.apply(bad)
            assert await conn.read([["GET", keys.pointer("threads", "p", "g3")]]) == [None]

    asyncio.run(run())
