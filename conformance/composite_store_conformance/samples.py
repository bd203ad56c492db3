"""Sample records per domain for the raw round-trip checks of the schema suite.

Each sample writes records through a domain's public API and returns what must then be stored:
for each row, its documented table, its key, and the value of every documented column in
Python terms (aware datetimes, dicts). ``SchemaSuite`` reads each row back with ``read_raw``
and holds it to the backend family's physical form (``composite_store_conformance.raw``).

A sample names every documented column of its table (the suite asserts it), so a column added
to ``composite_store.schema`` without a sample value fails loudly here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

from composite_store.domains.base import Domain
from composite_store.domains.datasets import DatasetsDomain
from composite_store.domains.experiments import ExperimentsDomain
from composite_store.domains.memory import MemoryDomain
from composite_store.domains.observability import ObservabilityDomain
from composite_store.domains.scores import ScoresDomain
from composite_store.domains.workflow_definitions import WorkflowDefinitionsDomain
from composite_store.domains.workflows import WorkflowsDomain
from composite_store.records.memory import Message, Resource, Thread
from composite_store.schema import ColumnType, table
from composite_store_conformance.cases import at

__all__ = ["SAMPLES", "Expected", "sample"]


@dataclass(frozen=True)
class Expected:
    """One row as it must be stored: documented table, key, and every column's value.

    ``json_text`` names TEXT columns that hold JSON (message content): their value is the
    parsed JSON they must hold.
    """

    table: str
    key: dict[str, Any]
    values: dict[str, Any]
    json_text: frozenset[str] = field(default=frozenset())


#: A sample: write records through the domain's API, return the rows that must be stored.
Sample = Callable[[Domain], Awaitable[list[Expected]]]
#: Domain key -> its sample.
SAMPLES: dict[str, Sample] = {}

#: Non-ASCII text (two-, three- and four-byte UTF-8) every sample stores somewhere.
UNICODE = "Grüße, 你好 🚀"
#: An instant given in UTC+02:00; it must be stored as UTC (09:30:00.123Z).
PLUS_TWO = datetime(2024, 5, 17, 11, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
IN_UTC = datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)


def sample(domain: str) -> Callable[[Sample], Sample]:
    """Register the sample of ``domain``."""

    def register(fn: Sample) -> Sample:
        SAMPLES[domain] = fn
        return fn

    return register


@sample("memory")
async def memory_sample(domain: Domain) -> list[Expected]:
    memory = cast(MemoryDomain, domain)
    thread = Thread(
        id="raw-t1",
        resource_id="raw-u1",
        title=UNICODE,
        metadata={"k": "v", "n": [1, 2.5], "nested": {"ok": True}, "text": UNICODE},
        created_at=PLUS_TWO,
        updated_at=at(5),
    )
    await memory.save_thread(thread=thread)
    resource = Resource(
        id="raw-u1",
        working_memory=f"# Notes\n- {UNICODE}",
        metadata={"plan": "pro"},
        created_at=at(1),
        updated_at=at(2),
    )
    await memory.save_resource(resource=resource)
    content = {
        "format": 2,
        "parts": [{"type": "text", "text": UNICODE}],
        "metadata": {"source": "raw"},
    }
    await memory.save_messages(
        messages=[
            Message(
                id="raw-m1",
                thread_id="raw-t1",
                content=content,
                role="assistant",
                created_at=at(3),
                resource_id="raw-u1",
            ),
            # A legacy string content is stored as format 2 JSON.
            {"id": "raw-m2", "thread_id": "raw-t1", "content": "plain", "role": "user",
             "created_at": at(4)},
        ]
    )
    # save_messages bumped the thread's updatedAt; the API's own value is the expectation.
    renamed = await memory.update_thread(id="raw-t1", title="renamed", metadata={"k": "w"})
    return [
        Expected(
            "threads",
            {"id": "raw-t1"},
            {
                "id": "raw-t1",
                "resourceId": "raw-u1",
                "title": "renamed",
                "metadata": {**(thread.metadata or {}), "k": "w"},
                "createdAt": IN_UTC,
                "updatedAt": renamed.updated_at,
            },
        ),
        Expected(
            "messages",
            {"id": "raw-m1"},
            {
                "id": "raw-m1",
                "thread_id": "raw-t1",
                "content": content,
                "role": "assistant",
                "type": "v2",
                "createdAt": at(3),
                "resourceId": "raw-u1",
            },
            json_text=frozenset({"content"}),
        ),
        Expected(
            "messages",
            {"id": "raw-m2"},
            {
                "id": "raw-m2",
                "thread_id": "raw-t1",
                "content": {
                    "format": 2,
                    "parts": [{"type": "text", "text": "plain"}],
                    "content": "plain",
                },
                "role": "user",
                "type": "v2",
                "createdAt": at(4),
                "resourceId": None,
            },
            json_text=frozenset({"content"}),
        ),
        Expected(
            "resources",
            {"id": "raw-u1"},
            {
                "id": "raw-u1",
                "workingMemory": f"# Notes\n- {UNICODE}",
                "metadata": {"plan": "pro"},
                "createdAt": at(1),
                "updatedAt": at(2),
            },
        ),
    ]


@sample("workflows")
async def workflows_sample(domain: Domain) -> list[Expected]:
    workflows = cast(WorkflowsDomain, domain)
    snapshot = {
        "status": "running",
        "runId": "raw-r1",
        "context": {"step1": {"status": "success", "output": {"text": UNICODE}}},
        "value": {},
        "timestamp": 1715938200123,
    }
    await workflows.persist_workflow_snapshot(
        workflow_name="raw-wf",
        run_id="raw-r1",
        snapshot=snapshot,
        resource_id="raw-u1",
        created_at=PLUS_TWO,
        updated_at=at(1),
    )
    await workflows.persist_workflow_snapshot(
        workflow_name="raw-wf", run_id="raw-r2", snapshot={"status": "pending"}
    )
    second = await workflows.get_workflow_run_by_id(run_id="raw-r2", workflow_name="raw-wf")
    assert second is not None, "a persisted run must be readable"
    return [
        Expected(
            "workflow_snapshot",
            {"workflow_name": "raw-wf", "run_id": "raw-r1"},
            {
                "workflow_name": "raw-wf",
                "run_id": "raw-r1",
                "resourceId": "raw-u1",
                "snapshot": snapshot,
                "createdAt": IN_UTC,
                "updatedAt": at(1),
            },
        ),
        Expected(
            "workflow_snapshot",
            {"workflow_name": "raw-wf", "run_id": "raw-r2"},
            {
                "workflow_name": "raw-wf",
                "run_id": "raw-r2",
                "resourceId": None,
                "snapshot": {"status": "pending"},
                "createdAt": second.created_at,
                "updatedAt": second.updated_at,
            },
        ),
    ]


@sample("scores")
async def scores_sample(domain: Domain) -> list[Expected]:
    scores = cast(ScoresDomain, domain)
    values: dict[str, Any] = {
        "id": "raw-s1",
        "scorerId": "relevance",
        "traceId": "raw-trace",
        "spanId": "raw-span",
        "runId": "raw-run",
        "scorer": {"name": "relevance", "config": {"threshold": 0.5}},
        "preprocessStepResult": {"tokens": 12},
        "extractStepResult": ["a", "b"],
        "analyzeStepResult": {"verdict": UNICODE},
        "score": 0.75,
        "reason": UNICODE,
        "metadata": {"k": "v"},
        "preprocessPrompt": "pre",
        "extractPrompt": "extract",
        "generateScorePrompt": "score it",
        "generateReasonPrompt": "why",
        "analyzePrompt": "analyze",
        "reasonPrompt": "reason",
        "input": [{"role": "user", "content": "hi"}],
        "output": {"text": "hello"},
        "additionalContext": {"doc": 1},
        "requestContext": {"user": "u1"},
        "entityType": "AGENT",
        "entity": {"id": "agent-1", "name": "Agent"},
        "entityId": "agent-1",
        "source": "LIVE",
        "resourceId": "raw-u1",
        "threadId": "raw-t1",
        "organizationId": "raw-org",
        "projectId": "raw-project",
        "batchId": "raw-batch",
        "datasetId": "raw-d1",
        "datasetItemId": "raw-i1",
        "createdAt": IN_UTC,
        "updatedAt": at(1),
    }
    await scores.save_score(score={**values, "createdAt": PLUS_TWO})
    minimal = await scores.save_score(
        score={"id": "raw-s2", "scorerId": "relevance", "runId": "raw-run", "scorer": {},
               "score": 1, "input": "plain", "output": 0, "source": "TEST"}
    )
    evaluation: dict[str, Any] = {
        "input": "question",
        "output": UNICODE,
        "result": {"score": 0.5, "details": {"why": "ok"}},
        "agent_name": "agent-1",
        "metric_name": "faithfulness",
        "instructions": "be nice",
        "test_info": {"testName": "t", "testPath": "a/b.test.ts"},
        "global_run_id": "raw-global",
        "run_id": "raw-eval-run",
        "created_at": IN_UTC,
    }
    await scores.save_eval(eval={**evaluation, "created_at": PLUS_TWO})
    nullable = {name: None for name in values if name not in _SCORE_REQUIRED}
    return [
        Expected("scorers", {"id": "raw-s1"}, values),
        Expected(
            "scorers",
            {"id": "raw-s2"},
            {
                **nullable,
                "id": "raw-s2",
                "scorerId": "relevance",
                "runId": "raw-run",
                "scorer": {},
                "score": 1.0,
                "input": "plain",
                "output": 0,
                "source": "TEST",
                "createdAt": minimal.created_at,
                "updatedAt": minimal.updated_at,
            },
        ),
        Expected("evals", {"run_id": "raw-eval-run", "metric_name": "faithfulness"}, evaluation),
    ]


_SCORE_REQUIRED = frozenset(
    {"id", "scorerId", "runId", "scorer", "score", "input", "output", "source", "createdAt",
     "updatedAt"}
)


@sample("observability")
async def observability_sample(domain: Domain) -> list[Expected]:
    observability = cast(ObservabilityDomain, domain)
    # Every optional text column (entityType, userId, serviceName, ...) gets a value.
    text_fields = [
        c.name for c in table("ai_spans").columns if c.type is ColumnType.TEXT and c.nullable
        and c.name != "parentSpanId"
    ]
    span: dict[str, Any] = {
        "traceId": "raw-trace",
        "spanId": "raw-root",
        "parentSpanId": None,
        "name": f"agent run {UNICODE}",
        "spanType": "AGENT_RUN",
        "isEvent": False,
        "startedAt": at(0),
        "endedAt": at(2),
        **{name: f"{name}-value" for name in text_fields},
        "scope": {"name": "mastra", "version": "1.0"},
        "metadata": {"k": "v"},
        "tags": ["prod", UNICODE],
        "attributes": {"model": "gpt", "tokens": 42},
        "links": [{"traceId": "other"}],
        "input": {"messages": ["hi"]},
        "output": "plain text output",
        "error": None,
        "requestContext": {"user": "u1"},
        "createdAt": IN_UTC,
        "updatedAt": at(3),
    }
    await observability.create_span(span={**span, "createdAt": PLUS_TWO})
    event = {
        "traceId": "raw-trace", "spanId": "raw-event", "parentSpanId": "raw-root",
        "name": "event", "spanType": "TOOL_CALL", "isEvent": True, "startedAt": at(1),
        "createdAt": at(1),
    }
    await observability.create_span(span=event)
    await observability.update_span(
        trace_id="raw-trace", span_id="raw-event", updates={"error": {"message": "boom"}}
    )
    updated = await observability.get_span(trace_id="raw-trace", span_id="raw-event")
    assert updated is not None, "a created span must be readable"
    otel: dict[str, Any] = {
        "id": "raw-otel",
        "parentSpanId": None,
        "name": "http.request",
        "traceId": "raw-trace",
        "scope": "mastra",
        "kind": 2,
        "attributes": {"http.method": "GET"},
        "status": {"code": 1, "message": UNICODE},
        "events": [{"name": "start"}],
        "links": [],
        "other": '{"k":"v"}',
        "startTime": 1715938200123456789,
        "endTime": 9223372036854775807,
        "createdAt": IN_UTC,
    }
    await observability.batch_insert_otel_spans(records=[{**otel, "createdAt": PLUS_TWO}])
    unset = dict.fromkeys(span)
    return [
        Expected("ai_spans", {"traceId": "raw-trace", "spanId": "raw-root"}, span),
        Expected(
            "ai_spans",
            {"traceId": "raw-trace", "spanId": "raw-event"},
            {
                **unset,
                **event,
                "error": {"message": "boom"},
                "updatedAt": updated.updated_at,
            },
        ),
        Expected("traces", {"id": "raw-otel"}, otel),
    ]


def _as_stored(table_name: str, record: Any, **literal: Any) -> dict[str, Any]:
    """The documented columns of ``record`` as the API returns it (stored names), with the
    values the sample wrote itself given as ``literal`` (they must match the API's too)."""
    values: dict[str, Any] = record.model_dump(by_alias=True)
    for name, value in literal.items():
        assert values.get(name) == value, f"the API returned {name}={values.get(name)!r}"
    return {name: values.get(name) for name in table(table_name).column_names}


@sample("datasets")
async def datasets_sample(domain: Domain) -> list[Expected]:
    datasets = cast(DatasetsDomain, domain)
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    await datasets.create_dataset(
        id="raw-d1",
        name=UNICODE,
        description="questions",
        metadata={"owner": "qa"},
        input_schema=schema,
        ground_truth_schema=None,
        tags=["a", UNICODE],
        target_type="agent",
        target_ids=["agent-1"],
        scorer_ids=["relevance"],
    )
    await datasets.add_item(
        dataset_id="raw-d1", id="raw-i1", input={"q": UNICODE}, ground_truth="yes",
        metadata={"n": 1},
    )
    await datasets.update_item(id="raw-i1", dataset_id="raw-d1", ground_truth={"a": "no"})
    await datasets.add_item(dataset_id="raw-d1", id="raw-i2", input={"q": "gone"})
    await datasets.delete_item(id="raw-i2", dataset_id="raw-d1")
    dataset = await datasets.get_dataset_by_id(id="raw-d1")
    history = {(row.id, row.dataset_version): row for row in [
        *await datasets.get_item_history(item_id="raw-i1"),
        *await datasets.get_item_history(item_id="raw-i2"),
    ]}
    versions = (await datasets.list_dataset_versions(dataset_id="raw-d1")).items
    assert dataset is not None and set(history) == {
        ("raw-i1", 1), ("raw-i1", 2), ("raw-i2", 3), ("raw-i2", 4)
    }, f"unexpected item history {sorted(history)}"
    expected = [
        Expected(
            "datasets",
            {"id": "raw-d1"},
            _as_stored("datasets", dataset, name=UNICODE, inputSchema=schema, version=4,
                       tags=["a", UNICODE], groundTruthSchema=None),
        ),
        Expected(
            "dataset_items",
            {"id": "raw-i1", "datasetVersion": 1},
            _as_stored("dataset_items", history["raw-i1", 1], validTo=2, isDeleted=False,
                       input={"q": UNICODE}, groundTruth="yes"),
        ),
        Expected(
            "dataset_items",
            {"id": "raw-i1", "datasetVersion": 2},
            _as_stored("dataset_items", history["raw-i1", 2], validTo=None,
                       groundTruth={"a": "no"}),
        ),
        Expected(
            "dataset_items",
            {"id": "raw-i2", "datasetVersion": 4},
            _as_stored("dataset_items", history["raw-i2", 4], isDeleted=True),
        ),
    ]
    expected.extend(
        Expected("dataset_versions", {"id": v.id}, _as_stored("dataset_versions", v))
        for v in versions
    )
    assert [v.version for v in versions] == [4, 3, 2, 1], "one version row per mutation"
    return expected


@sample("experiments")
async def experiments_sample(domain: Domain) -> list[Expected]:
    experiments = cast(ExperimentsDomain, domain)
    await experiments.create_experiment(
        id="raw-x1", target_type="agent", target_id="agent-1", name=UNICODE,
        description="nightly", metadata={"k": "v"}, dataset_id="raw-d1", dataset_version=3,
        total_items=2,
    )
    experiment = await experiments.update_experiment(
        id="raw-x1", status="running", succeeded_count=1, started_at=PLUS_TWO
    )
    result = await experiments.add_experiment_result(
        id="raw-xr1", experiment_id="raw-x1", item_id="raw-i1", input={"q": UNICODE},
        output={"a": "yes"}, ground_truth="yes", error=None, started_at=at(1),
        completed_at=at(2), retry_count=1, trace_id="raw-trace", status="needs-review",
        tags=["x"], item_dataset_version=2,
    )
    return [
        Expected(
            "experiments",
            {"id": "raw-x1"},
            _as_stored("experiments", experiment, name=UNICODE, status="running",
                       succeededCount=1, startedAt=IN_UTC, datasetVersion=3, totalItems=2),
        ),
        Expected(
            "experiment_results",
            {"id": "raw-xr1"},
            _as_stored("experiment_results", result, input={"q": UNICODE}, startedAt=at(1),
                       completedAt=at(2), retryCount=1, status="needs-review", tags=["x"]),
        ),
    ]


@sample("workflow_definitions")
async def workflow_definitions_sample(domain: Domain) -> list[Expected]:
    definitions = cast(WorkflowDefinitionsDomain, domain)
    await definitions.create_workflow_definition(
        definition={"id": "raw-wd1", "name": UNICODE, "description": "d",
                    "metadata": {"k": "v"}, "created_at": PLUS_TWO, "updated_at": at(1)}
    )
    version = await definitions.create_version(
        workflow_definition_id="raw-wd1", id="raw-wv1",
        snapshot={"steps": [{"id": "s1", "text": UNICODE}]},
        changed_fields=["steps"], change_message="first",
    )
    definition = await definitions.update_workflow_definition(
        id="raw-wd1", active_version_id="raw-wv1"
    )
    return [
        Expected(
            "workflow_definitions",
            {"id": "raw-wd1"},
            _as_stored("workflow_definitions", definition, name=UNICODE, createdAt=IN_UTC,
                       activeVersionId="raw-wv1"),
        ),
        Expected(
            "workflow_definition_versions",
            {"id": "raw-wv1"},
            _as_stored("workflow_definition_versions", version, versionNumber=1,
                       changedFields=["steps"],
                       snapshot={"steps": [{"id": "s1", "text": UNICODE}]}),
        ),
    ]
