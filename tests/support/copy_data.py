"""A store filled with every domain through the public API, and its contents read back through
the public API, for the copy tests (tests/test_copy.py).

``fill`` writes threads (one with ``BIG_THREAD`` messages), working memory in both scopes, a
resource without threads, workflow snapshots, workflow definitions with versions, scores and
evals (two identical ones: the evals table has no key), AI spans (finished, failed, running,
updated, and a trace without a root span), OpenTelemetry spans, datasets with item history
(updates and a deletion: SCD-2 rows and tombstones) and experiments with results.
``snapshot`` reads every record back domain by domain, only through the public API.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from composite_store.records import OtelSpan, Span, Thread
from composite_store.store import Store

__all__ = ["BIG_THREAD", "fill", "snapshot"]

#: Messages of the big thread.
BIG_THREAD = 2000
BASE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ALL = {"page": 0, "per_page": False}
RESOURCES = ("u1", "u2", "u3")
TRACES = ("tr-ok", "tr-error", "tr-running", "tr-orphan")
SCORE_RUNS = tuple(f"run-{i}" for i in range(6))


def at(seconds: float) -> datetime:
    return BASE + timedelta(seconds=seconds)


def _content(i: int) -> dict[str, Any]:
    return {
        "format": 2,
        "parts": [{"type": "text", "text": f"message {i}: héllo ✓ {'x' * (i % 7)}"}],
        **({"metadata": {"n": i, "tags": ["a", "b"]}} if i % 3 == 0 else {}),
    }


async def fill(store: Store) -> None:
    """Write the data set into every domain ``store`` offers."""
    if store.get("memory") is not None:
        await _memory(store)
    if store.get("workflows") is not None:
        await _workflows(store)
    if store.get("workflow_definitions") is not None:
        await _definitions(store)
    if store.get("scores") is not None:
        await _scores(store)
    if store.get("observability") is not None:
        await _observability(store)
    if store.get("datasets") is not None:
        await _datasets(store)
    if store.get("experiments") is not None:
        await _experiments(store)


async def _memory(store: Store) -> None:
    memory = store.memory
    threads = [
        Thread(id="big", resource_id="u1", title="the long one", created_at=at(0),
               updated_at=at(0)),
        *(
            Thread(id=f"small-{i}", resource_id="u2" if i else "u1", title=f"small {i}",
                   metadata={"topic": f"t{i}"}, created_at=at(10 + i), updated_at=at(10 + i))
            for i in range(3)
        ),
    ]
    for thread in threads:
        await memory.save_thread(thread=thread)
    messages = [
        {"id": f"big-{i:05d}", "thread_id": "big", "resource_id": "u1",
         "role": "user" if i % 2 == 0 else "assistant", "content": _content(i),
         "created_at": at(100 + i)}
        for i in range(BIG_THREAD)
    ]
    for start in range(0, len(messages), 500):
        await memory.save_messages(messages=messages[start : start + 500])
    for i in range(3):
        await memory.save_messages(
            messages=[
                {"id": f"small-{i}-{j}", "thread_id": f"small-{i}", "role": "user",
                 "content": _content(j), "created_at": at(5000 + 10 * i + j)}
                for j in range(5)
            ]
        )
    # Working memory: resource scope, thread scope, and a resource without threads.
    await memory.update_resource(
        resource_id="u1", working_memory="# Profile\n- name: Ada", metadata={"plan": "pro"}
    )
    await memory.update_resource(resource_id="u2", working_memory='{"city": "Zürich"}')
    await memory.update_resource(resource_id="u3", metadata={"orphan": True})
    await memory.update_thread(id="small-1", metadata={"workingMemory": "- likes tea"})
    # A moved message: its old and new threads were bumped.
    await memory.save_messages(
        messages=[{"id": "small-0-4", "thread_id": "small-2", "role": "user",
                   "content": _content(4), "created_at": at(5004)}]
    )


async def _workflows(store: Store) -> None:
    for i in range(5):
        await store.workflows.persist_workflow_snapshot(
            workflow_name=f"wf-{i % 2}",
            run_id=f"r{i}",
            snapshot={"status": "success" if i % 2 else "running", "context": {"step": i},
                      "value": {"nested": [1, 2.5, None, "ü"]}},
            resource_id="u1" if i < 2 else None,
            created_at=at(200 + i),
            updated_at=at(300 + i),
        )


async def _definitions(store: Store) -> None:
    defs = store.workflow_definitions
    await defs.create_workflow_definition(
        definition={"id": "def-1", "name": "Onboarding", "metadata": {"team": "a"}}
    )
    await defs.create_workflow_definition(definition={"id": "def-2", "name": "Empty"})
    for n in range(3):
        await defs.create_version(
            workflow_definition_id="def-1", snapshot={"steps": list(range(n + 1))},
            changed_fields=["steps"], change_message=f"v{n + 1}", id=f"def-1-v{n + 1}",
        )
    await defs.update_workflow_definition(id="def-1", active_version_id="def-1-v2")


async def _scores(store: Store) -> None:
    for i in range(12):
        await store.scores.save_score(
            score={
                "id": f"score-{i:02d}",
                "scorer_id": f"scorer-{i % 2}",
                "run_id": SCORE_RUNS[i % len(SCORE_RUNS)],
                "trace_id": "tr-ok" if i < 4 else None,
                "span_id": "root" if i < 4 else None,
                "scorer": {"name": f"s{i % 2}", "config": {"k": i}},
                "score": i / 7,
                "reason": None if i % 3 else f"because {i}",
                "input": [{"role": "user", "content": "q"}],
                "output": {"text": "a", "n": i},
                "entity_type": "AGENT",
                "entity_id": "agent-1",
                "source": "LIVE" if i % 2 else "TEST",
                "created_at": at(400 + i),
                "updated_at": at(400 + i),
            }
        )
    same = {"input": "q", "output": "a", "result": {"score": 0.5, "details": {"x": 1}},
            "agent_name": "agent-1", "metric_name": "tone", "instructions": "be kind",
            "global_run_id": "g1", "run_id": "run-e", "created_at": at(500)}
    # Twice the same row: the evals table has no key, so both are records.
    await store.scores.save_eval(eval=same)
    await store.scores.save_eval(eval=same)
    await store.scores.save_eval(
        eval={**same, "metric_name": "accuracy", "test_info": {"testPath": "t.ts"},
              "created_at": at(501)}
    )
    await store.scores.save_eval(eval={**same, "run_id": "run-f", "created_at": at(502)})


async def _observability(store: Store) -> None:
    obs = store.observability
    spans = []
    for t, trace in enumerate(TRACES):
        for s in range(4):
            root = s == 0
            if trace == "tr-orphan" and root:
                continue  # a trace whose root span was never written
            spans.append(
                Span(
                    trace_id=trace, span_id="root" if root else f"s{s}",
                    parent_span_id=None if root else "root", name=f"{trace} {s}",
                    span_type="AGENT_RUN" if root else "TOOL_CALL",
                    is_event=trace == "tr-ok" and s == 3,
                    started_at=at(600 + 10 * t + s),
                    ended_at=None if trace == "tr-running" else at(601 + 10 * t + s),
                    error={"message": "boom"} if trace == "tr-error" and s == 2 else None,
                    attributes={"model": "m", "tokens": s}, metadata={"k": t},
                    tags=["x", trace] if root else None, thread_id="big", resource_id="u1",
                    input={"q": s}, output=None if root else {"a": s},
                    created_at=at(600 + 10 * t + s),
                )
            )
    await obs.batch_create_spans(records=spans)
    await obs.update_span(trace_id="tr-ok", span_id="s1", updates={"output": {"a": "changed"}})
    await obs.batch_insert_otel_spans(
        records=[
            OtelSpan(
                id=f"otel-{i}", trace_id=f"ot-{i % 3}", parent_span_id=None if i < 3 else
                f"otel-{i % 3}", name=f"op {i}", scope="lib", kind=i % 5,
                attributes={"i": i}, status={"code": 0}, events=[], links=[],
                other=None, start_time=1_700_000_000_000_000_000 + i * 1_000_123,
                end_time=1_700_000_000_000_000_000 + i * 1_000_123 + 999,
                created_at=at(700 + i),
            )
            for i in range(8)
        ]
    )


async def _datasets(store: Store) -> None:
    ds = store.datasets
    await ds.create_dataset(
        id="ds-1", name="QA", input_schema={"type": "object"}, tags=["a"], metadata={"m": 1}
    )
    await ds.create_dataset(id="ds-2", name="empty")
    await ds.batch_insert_items(
        dataset_id="ds-1",
        items=[{"id": f"item-{i}", "input": {"q": i}, "ground_truth": {"a": i}}
               for i in range(5)],
    )
    await ds.update_item(id="item-1", dataset_id="ds-1", input={"q": "one, revised"})
    await ds.update_item(id="item-2", dataset_id="ds-1", metadata={"flag": True})
    await ds.delete_item(id="item-3", dataset_id="ds-1")
    await ds.add_item(dataset_id="ds-1", id="item-5", input={"q": 5})


async def _experiments(store: Store) -> None:
    ex = store.experiments
    await ex.create_experiment(
        id="exp-1", target_type="agent", target_id="agent-1", name="first",
        dataset_id="ds-1", dataset_version=4, total_items=3,
    )
    await ex.create_experiment(id="exp-2", target_type="workflow", target_id="wf-0")
    for i in range(3):
        await ex.add_experiment_result(
            id=f"res-{i}", experiment_id="exp-1", item_id=f"item-{i}", input={"q": i},
            output={"a": i}, started_at=at(800 + i), completed_at=at(801 + i),
            status="needs-review" if i else "reviewed", tags=["t"], item_dataset_version=4,
        )
    await ex.update_experiment(id="exp-1", status="completed", succeeded_count=3)


# -- reading back -------------------------------------------------------------------------------


def _rows(records: Any) -> list[dict[str, Any]]:
    return [r.stored() for r in records]


async def snapshot(store: Store, domain: str) -> dict[str, Any]:
    """Every record of ``domain`` in ``store``, read through the public API."""
    reader = _READERS[domain]
    return await reader(store)


async def _read_memory(store: Store) -> dict[str, Any]:
    memory = store.memory
    threads = (await memory.list_threads(per_page=False)).items
    return {
        "threads": _rows(threads),
        "messages": {
            t.id: _rows((await memory.list_messages(thread_id=t.id, per_page=False)).items)
            for t in threads
        },
        "resources": [
            _resource(await memory.get_resource_by_id(resource_id=r)) for r in RESOURCES
        ],
    }


def _resource(found: Any) -> dict[str, Any] | None:
    return None if found is None else found.stored()


async def _read_workflows(store: Store) -> dict[str, Any]:
    return {"runs": _rows((await store.workflows.list_workflow_runs()).items)}


async def _read_definitions(store: Store) -> dict[str, Any]:
    defs = store.workflow_definitions
    found = (await defs.list_workflow_definitions(pagination=ALL)).items
    return {
        "definitions": _rows(found),
        "versions": {
            d.id: _rows(
                (await defs.list_versions(workflow_definition_id=d.id, pagination=ALL)).items
            )
            for d in found
        },
    }


async def _read_scores(store: Store) -> dict[str, Any]:
    scores = store.scores
    return {
        "by_run": {
            run: _rows((await scores.list_scores_by_run_id(run_id=run, pagination=ALL)).items)
            for run in SCORE_RUNS
        },
        "evals": _rows((await scores.list_evals(per_page=False)).items),
    }


async def _read_observability(store: Store) -> dict[str, Any]:
    obs = store.observability
    traces = {}
    for trace_id in TRACES:
        trace = await obs.get_trace(trace_id=trace_id)
        traces[trace_id] = None if trace is None else _rows(trace.spans)
    roots = (await obs.list_traces(pagination=ALL)).items
    return {
        "traces": traces,
        "roots": [(s.trace_id, s.status) for s in roots],
        "otel": _rows((await obs.list_otel_spans(pagination=ALL)).items),
    }


async def _read_datasets(store: Store) -> dict[str, Any]:
    ds = store.datasets
    datasets = (await ds.list_datasets(pagination=ALL)).items
    out: dict[str, Any] = {"datasets": _rows(datasets), "versions": {}, "items": {}}
    for d in datasets:
        versions = await ds.list_dataset_versions(dataset_id=d.id, pagination=ALL)
        out["versions"][d.id] = _rows(versions.items)
        out["items"][d.id] = {
            v: _rows(await ds.get_items_by_version(dataset_id=d.id, version=v))
            for v in range(d.version + 1)
        }
    out["history"] = {
        f"item-{i}": _rows(await ds.get_item_history(item_id=f"item-{i}")) for i in range(6)
    }
    return out


async def _read_experiments(store: Store) -> dict[str, Any]:
    ex = store.experiments
    experiments = (await ex.list_experiments(pagination=ALL)).items
    return {
        "experiments": _rows(experiments),
        "results": {
            e.id: _rows(
                (await ex.list_experiment_results(experiment_id=e.id, pagination=ALL)).items
            )
            for e in experiments
        },
    }


_READERS = {
    "memory": _read_memory,
    "workflows": _read_workflows,
    "workflow_definitions": _read_definitions,
    "scores": _read_scores,
    "observability": _read_observability,
    "datasets": _read_datasets,
    "experiments": _read_experiments,
}
