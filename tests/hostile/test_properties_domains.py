"""The bad-input rule on the scores, observability, datasets, experiments and workflow
definitions domains, on every backend that offers them (docs/input.md).

Each write either round-trips its input verbatim or raises ``ValidationError`` with nothing
written (a batch holding one bad record writes none of it); each read or update either
answers or raises a documented error. The strategies are those of test_properties.py.
``--hypothesis-profile=deep`` runs 10,000 examples per backend and test (conftest.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from composite_store import (
    ConflictError,
    NotFoundError,
    UnsupportedOperationError,
    ValidationError,
)
from composite_store.records.json import compact_json as dumps
from tests.hostile.conftest import Live, budget
from tests.hostile.strategies import (
    anything,
    decoded_again,
    deep,
    good_ids,
    good_json,
    good_lists,
    good_objects,
    good_texts,
    ids,
    json_objects,
    json_values,
    rows,
    same_json,
    storable,
    texts,
    texts_or_big,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)

#: Numbers at and past what a double and a 64-bit integer hold, NaN and infinities, and
#: anything else where a number is expected.
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    anything,
)
good_numbers = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**53), 2**53)
)
good_counts = st.integers(min_value=0, max_value=2**63 - 1)
#: Where a count or version is expected.
counts = st.one_of(st.integers(min_value=-(2**65), max_value=2**65), anything)
optional_texts = st.one_of(st.none(), texts_or_big, anything)
string_lists = st.one_of(st.none(), anything, st.lists(texts, max_size=3))
json_arrays = st.one_of(st.none(), anything, st.lists(json_values, max_size=3))
#: Pagination as a dict, a wrong type, or huge and negative numbers.
paginations = st.one_of(
    st.none(),
    anything,
    st.fixed_dictionaries({}, optional={"page": anything, "perPage": anything}),
)
#: Errors a call may document besides ValidationError: the rule allows no other type.
DOCUMENTED = (ValidationError, NotFoundError, ConflictError, UnsupportedOperationError)


async def _answers_or_refuses(calls: list[Callable[[], Awaitable[Any]]]) -> None:
    for call in calls:
        try:
            await call()
        except DOCUMENTED:
            pass
        except Exception as exc:  # the rule: no other error type crosses the API
            raise AssertionError(f"{type(exc).__name__}: {exc}") from exc


def _same_number(got: Any, given: Any) -> bool:
    return not isinstance(got, bool) and float(got) == float(given)


# -- scores ----------------------------------------------------------------------------------


@budget(ci=40)
@given(
    row=rows(
        {
            "sid": good_ids,
            "run": good_ids,
            "score": good_numbers,
            "payload": good_json,
            "metadata": good_objects,
            "reason": st.one_of(st.none(), good_texts),
            "entity_id": st.one_of(st.none(), good_ids),
        },
        {
            "sid": ids,
            "run": ids,
            "score": numbers,
            "payload": st.one_of(json_values, deep),
            "metadata": st.one_of(json_objects, anything),
            "reason": optional_texts,
            "entity_id": st.one_of(st.none(), ids),
        },
    )
)
def test_save_score_round_trips_or_writes_nothing(live: Live, row: dict[str, Any]) -> None:
    sid, run, score, payload, metadata, reason, entity_id = (
        row[k] for k in ("sid", "run", "score", "payload", "metadata", "reason", "entity_id")
    )
    assume(not decoded_again(payload))
    scores = live.domain("scores")

    async def probe() -> None:
        await scores.dangerously_clear_all()
        row = {
            "id": sid,
            "scorerId": "s",
            "runId": run,
            "scorer": {"name": "s"},
            "score": score,
            "reason": reason,
            "metadata": metadata,
            "input": payload,
            "output": {"o": payload},
            "entityId": entity_id,
            "entityType": "AGENT",
            "source": "LIVE",
        }
        try:
            await scores.save_score(score=row)
        except ValidationError:
            assert (await scores.list_scores_by_scorer_id(scorer_id="s")).total == 0
            return
        assert storable(sid, run, score, payload, metadata, reason, entity_id), "accepted"
        got = await scores.get_score_by_id(id=sid)
        assert got is not None
        assert (got.run_id, got.reason, got.entity_id) == (run, reason, entity_id)
        assert _same_number(got.score, score)
        assert same_json(got.input, payload) and same_json(got.output, {"o": payload})
        assert same_json(got.metadata, metadata)
        [listed] = (await scores.list_scores_by_run_id(run_id=run)).items
        assert listed.id == sid

    live.run(probe())


@budget(ci=30)
@given(
    row=rows(
        {
            "agent": good_ids,
            "text": good_texts,
            "result": st.fixed_dictionaries(
                {"score": good_numbers}, optional={"details": good_json}
            ),
            "test_info": good_objects,
        },
        {
            "agent": ids,
            "text": st.one_of(texts_or_big, anything),
            "result": st.one_of(
                anything,
                st.fixed_dictionaries({"score": numbers}, optional={"details": json_values}),
            ),
            "test_info": st.one_of(st.none(), anything, json_objects),
        },
    )
)
def test_save_eval_round_trips_or_writes_nothing(live: Live, row: dict[str, Any]) -> None:
    agent, text, result, test_info = (row[k] for k in ("agent", "text", "result", "test_info"))
    scores = live.domain("scores")

    async def probe() -> None:
        await scores.dangerously_clear_all()
        row = {
            "agentName": agent,
            "metricName": "m",
            "input": text,
            "output": text,
            "result": result,
            "testInfo": test_info,
        }
        try:
            await scores.save_eval(eval=row)
        except ValidationError:
            assert (await scores.list_evals()).total == 0
            return
        assert storable(agent, text, result, test_info), "accepted what docs/input.md refuses"
        [got] = (await scores.list_evals(agent_name=agent)).items
        assert (got.agent_name, got.input, got.output) == (agent, text, text)
        assert same_json(got.result, result) and same_json(got.test_info, test_info)

    live.run(probe())


# -- observability ---------------------------------------------------------------------------


@budget(ci=40)
@given(
    row=rows(
        {
            "trace": good_ids,
            "span": good_ids,
            "parent": st.one_of(st.none(), good_ids),
            "name": good_texts,
            "span_type": good_ids,
            "attributes": good_objects,
            "tags": good_lists,
            "links": st.one_of(st.none(), st.lists(good_json, max_size=3)),
            "payload": good_json,
            "started_at": st.just(T0),
        },
        {
            "trace": ids,
            "span": ids,
            "parent": st.one_of(st.none(), ids),
            "name": st.one_of(texts_or_big, anything),
            "span_type": ids,
            "attributes": st.one_of(st.none(), anything, json_objects),
            "tags": string_lists,
            "links": json_arrays,
            "payload": st.one_of(json_values, deep),
            "started_at": st.one_of(st.just(T0), anything),
        },
    )
)
def test_batch_create_spans_round_trips_or_writes_nothing(live: Live, row: dict[str, Any]) -> None:
    trace, span, parent, name, span_type, attributes, tags, links, payload, started_at = (
        row[k]
        for k in (
            "trace",
            "span",
            "parent",
            "name",
            "span_type",
            "attributes",
            "tags",
            "links",
            "payload",
            "started_at",
        )
    )
    assume((trace, span) != ("t-ok", "s") and not decoded_again(payload))
    observability = live.domain("observability")

    async def probe() -> None:
        await observability.dangerously_clear_all()
        ok = {"traceId": "t-ok", "spanId": "s", "name": "ok", "spanType": "AGENT_RUN"}
        odd = {
            "traceId": trace,
            "spanId": span,
            "parentSpanId": parent,
            "name": name,
            "spanType": span_type,
            "attributes": attributes,
            "tags": tags,
            "links": links,
            "input": payload,
            "startedAt": started_at,
        }
        try:
            await observability.batch_create_spans(records=[{**ok, "startedAt": T0}, odd])
        except ValidationError:
            assert await observability.get_trace(trace_id="t-ok") is None
            assert (await observability.list_traces()).total == 0
            return
        assert storable(trace, span, parent, name, span_type, attributes, tags, links, payload)
        got = await observability.get_span(trace_id=trace, span_id=span)
        assert got is not None
        assert (got.parent_span_id, got.name, got.span_type) == (parent, name, span_type)
        assert got.started_at == T0
        for attr, value in (("attributes", attributes), ("tags", tags), ("links", links)):
            assert same_json(getattr(got, attr), value), attr
        assert same_json(got.input, payload)
        assert await observability.get_span(trace_id="t-ok", span_id="s") is not None

    live.run(probe())


@budget(ci=40)
@given(
    updates=st.one_of(
        anything,
        st.fixed_dictionaries(
            {},
            optional={
                "name": st.one_of(texts_or_big, anything),
                "attributes": st.one_of(anything, json_objects),
                "tags": string_lists,
                "output": st.one_of(json_values, deep),
                "error": json_values,
                "endedAt": st.one_of(st.just(T0), anything),
                "$where": anything,
            },
        ),
    )
)
def test_update_span_round_trips_or_changes_nothing(live: Live, updates: Any) -> None:
    if isinstance(updates, dict):
        assume(not decoded_again(updates.get("output"), updates.get("error")))
    observability = live.domain("observability")

    async def probe() -> None:
        await observability.dangerously_clear_all()
        await observability.create_span(
            span={
                "traceId": "t",
                "spanId": "s",
                "name": "before",
                "spanType": "AGENT_RUN",
                "startedAt": T0,
            }
        )
        before = await observability.get_span(trace_id="t", span_id="s")
        try:
            await observability.update_span(trace_id="t", span_id="s", updates=updates)
        except ValidationError:
            assert await observability.get_span(trace_id="t", span_id="s") == before
            return
        assert storable(*(v for k, v in updates.items() if k != "endedAt")), "accepted"
        got = await observability.get_span(trace_id="t", span_id="s")
        assert got is not None
        for key, value in updates.items():
            attr = {"endedAt": "ended_at"}.get(key, key)
            assert same_json(getattr(got, attr), value) or getattr(got, attr) == value, key

    live.run(probe())


@budget(ci=30)
@given(
    row=rows(
        {
            "sid": good_ids,
            "trace": good_ids,
            "name": good_texts,
            "kind": st.integers(min_value=0, max_value=4),
            "start": st.integers(min_value=0, max_value=2**63 - 1),
            "attributes": good_objects,
            "events": st.one_of(st.none(), st.lists(good_json, max_size=3)),
            "other": st.one_of(st.none(), good_texts, good_json),
        },
        {
            "sid": ids,
            "trace": ids,
            "name": st.one_of(texts_or_big, anything),
            "kind": st.one_of(st.integers(min_value=0, max_value=4), anything),
            "start": counts,
            "attributes": st.one_of(st.none(), anything, json_objects),
            "events": json_arrays,
            "other": st.one_of(st.none(), texts, json_values, deep, anything),
        },
    )
)
def test_batch_insert_otel_spans_round_trips_or_writes_nothing(
    live: Live, row: dict[str, Any]
) -> None:
    sid, trace, name, kind, start, attributes, events, other = (
        row[k] for k in ("sid", "trace", "name", "kind", "start", "attributes", "events", "other")
    )
    assume(sid != "ok")
    observability = live.domain("observability")

    async def probe() -> None:
        await observability.dangerously_clear_all()
        ok = {"id": "ok", "name": "ok", "traceId": "t-ok", "scope": "s", "kind": 0}
        odd = {
            "id": sid,
            "name": name,
            "traceId": trace,
            "scope": "s",
            "kind": kind,
            "attributes": attributes,
            "events": events,
            "other": other,
            "startTime": start,
            "endTime": start,
        }
        try:
            await observability.batch_insert_otel_spans(
                records=[{**ok, "startTime": 1, "endTime": 2}, odd]
            )
        except ValidationError:
            assert (await observability.list_otel_spans()).total == 0
            return
        assert storable(sid, trace, name, kind, start, attributes, events, other), "accepted"
        page = await observability.list_otel_spans(filters={"traceId": trace})
        [got] = [s for s in page.items if s.id == sid]
        assert (got.name, got.kind, got.start_time, got.end_time) == (name, kind, start, start)
        assert same_json(got.attributes, attributes) and same_json(got.events, events)
        # Documented: ``other`` is JSON text; any other JSON value given is serialized.
        assert got.other == (other if other is None or isinstance(other, str) else dumps(other))

    live.run(probe())


# -- datasets --------------------------------------------------------------------------------


@budget(ci=30)
@given(
    row=rows(
        {
            "id": st.one_of(st.none(), good_ids),
            "name": good_texts.filter(bool),
            "description": st.one_of(st.none(), good_texts),
            "metadata": good_objects,
            "tags": good_lists,
            "input_schema": good_objects,
        },
        {
            "id": st.one_of(st.none(), ids),
            "name": st.one_of(texts_or_big, anything),
            "description": optional_texts,
            "metadata": st.one_of(st.none(), anything, json_objects),
            "tags": string_lists,
            "input_schema": st.one_of(st.none(), json_objects),
        },
    )
)
def test_create_dataset_round_trips_or_writes_nothing(live: Live, row: dict[str, Any]) -> None:
    did, name, description, metadata, tags, input_schema = (
        row[k] for k in ("id", "name", "description", "metadata", "tags", "input_schema")
    )
    datasets = live.domain("datasets")

    async def probe() -> None:
        await datasets.dangerously_clear_all()
        try:
            made = await datasets.create_dataset(**row)
        except ValidationError:
            assert (await datasets.list_datasets()).total == 0
            return
        assert storable(*row.values()), "accepted what docs/input.md refuses"
        got = await datasets.get_dataset_by_id(id=made.id)
        assert got is not None and (did is None or got.id == did)
        assert (got.name, got.description) == (name, description)
        assert same_json(got.metadata, metadata) and same_json(got.tags, tags)
        assert same_json(got.input_schema, input_schema)

    live.run(probe())


@budget(ci=40)
@given(
    row=rows(
        {
            "iid": st.one_of(st.none(), good_ids),
            "input": good_json,
            "ground_truth": st.one_of(st.none(), good_json),
            "metadata": good_objects,
        },
        {
            "iid": st.one_of(st.none(), ids),
            "input": st.one_of(json_values, deep),
            "ground_truth": json_values,
            "metadata": st.one_of(st.none(), anything, json_objects),
        },
    )
)
def test_batch_insert_items_round_trips_or_writes_nothing(live: Live, row: dict[str, Any]) -> None:
    iid, input, ground_truth, metadata = (
        row[k] for k in ("iid", "input", "ground_truth", "metadata")
    )
    assume(iid != "ok" and not decoded_again(input, ground_truth))
    datasets = live.domain("datasets")

    async def probe() -> None:
        await datasets.dangerously_clear_all()
        await datasets.create_dataset(id="d", name="d")
        odd = {"id": iid, "input": input, "groundTruth": ground_truth, "metadata": metadata}
        try:
            made = await datasets.batch_insert_items(
                dataset_id="d", items=[{"id": "ok", "input": "fine"}, odd]
            )
        except ValidationError:
            assert (await datasets.list_items(dataset_id="d")).total == 0
            dataset = await datasets.get_dataset_by_id(id="d")
            assert dataset is not None and dataset.version == 0, "a refused batch bumped it"
            return
        assert storable(iid, input, ground_truth, metadata), "accepted what docs refuse"
        got = await datasets.get_item_by_id(id=made[1].id)
        assert got is not None and (iid is None or got.id == iid)
        assert same_json(got.input, input) and same_json(got.ground_truth, ground_truth)
        assert same_json(got.metadata, metadata)
        assert (await datasets.list_items(dataset_id="d")).total == 2

    live.run(probe())


# -- experiments -----------------------------------------------------------------------------


@budget(ci=30)
@given(
    row=rows(
        {
            "id": st.one_of(st.none(), good_ids),
            "target_type": good_ids,
            "target_id": good_ids,
            "name": st.one_of(st.none(), good_texts),
            "metadata": good_objects,
            "total_items": good_counts,
            "dataset_version": st.one_of(st.none(), good_counts),
        },
        {
            "id": st.one_of(st.none(), ids),
            "target_type": ids,
            "target_id": ids,
            "name": optional_texts,
            "metadata": st.one_of(st.none(), anything, json_objects),
            "total_items": counts,
            "dataset_version": st.one_of(st.none(), counts),
        },
    )
)
def test_create_experiment_round_trips_or_writes_nothing(live: Live, row: dict[str, Any]) -> None:
    eid, target_type, target_id, name, metadata, total_items, dataset_version = (
        row[k]
        for k in (
            "id",
            "target_type",
            "target_id",
            "name",
            "metadata",
            "total_items",
            "dataset_version",
        )
    )
    experiments = live.domain("experiments")

    async def probe() -> None:
        await experiments.dangerously_clear_all()
        try:
            made = await experiments.create_experiment(**row)
        except ValidationError:
            assert (await experiments.list_experiments()).total == 0
            return
        assert storable(*row.values()), "accepted what docs/input.md refuses"
        got = await experiments.get_experiment_by_id(id=made.id)
        assert got is not None and (eid is None or got.id == eid)
        assert (got.target_type, got.target_id, got.name) == (target_type, target_id, name)
        assert (got.total_items, got.dataset_version) == (total_items, dataset_version)
        assert same_json(got.metadata, metadata)
        [listed] = (await experiments.list_experiments(target_id=target_id)).items
        assert listed.id == got.id

    live.run(probe())


@budget(ci=40)
@given(
    row=rows(
        {
            "item_id": good_ids,
            "input": good_json,
            "output": st.one_of(st.none(), good_json),
            "error": st.one_of(st.none(), good_json),
            "tags": good_lists,
            "retry_count": good_counts,
            "trace_id": st.one_of(st.none(), good_ids),
        },
        {
            "item_id": ids,
            "input": st.one_of(json_values, deep),
            "output": json_values,
            "error": json_values,
            "tags": string_lists,
            "retry_count": counts,
            "trace_id": st.one_of(st.none(), ids),
        },
    )
)
def test_add_experiment_result_round_trips_or_writes_nothing(
    live: Live, row: dict[str, Any]
) -> None:
    item_id, input, output, error, tags, retry_count, trace_id = (
        row[k] for k in ("item_id", "input", "output", "error", "tags", "retry_count", "trace_id")
    )
    assume(not decoded_again(input, output, error))
    experiments = live.domain("experiments")

    async def probe() -> None:
        await experiments.dangerously_clear_all()
        await experiments.create_experiment(id="e", target_type="agent", target_id="a")
        try:
            made = await experiments.add_experiment_result(experiment_id="e", **row)
        except ValidationError:
            assert (await experiments.list_experiment_results(experiment_id="e")).total == 0
            return
        assert storable(*row.values()), "accepted what docs/input.md refuses"
        got = await experiments.get_experiment_result_by_id(id=made.id)
        assert got is not None
        assert (got.item_id, got.retry_count, got.trace_id) == (item_id, retry_count, trace_id)
        assert same_json(got.input, input) and same_json(got.output, output)
        assert same_json(got.error, error) and same_json(got.tags, tags)

    live.run(probe())


# -- workflow definitions --------------------------------------------------------------------


@budget(ci=30)
@given(
    row=rows(
        {
            "did": st.one_of(st.none(), good_ids),
            "name": good_texts.filter(bool),
            "metadata": good_objects,
            "snapshot": st.one_of(st.none(), good_json),
            "changed": good_lists,
            "message": st.one_of(st.none(), good_texts),
        },
        {
            "did": st.one_of(st.none(), ids),
            "name": st.one_of(texts_or_big, anything),
            "metadata": st.one_of(st.none(), anything, json_objects),
            "snapshot": st.one_of(json_values, deep),
            "changed": string_lists,
            "message": optional_texts,
        },
    )
)
def test_workflow_definitions_round_trip_or_write_nothing(live: Live, row: dict[str, Any]) -> None:
    did, name, metadata, snapshot, changed, message = (
        row[k] for k in ("did", "name", "metadata", "snapshot", "changed", "message")
    )
    assume(not decoded_again(snapshot))
    definitions = live.domain("workflow_definitions")

    async def probe() -> None:
        await definitions.dangerously_clear_all()
        row = {"id": did, "name": name, "metadata": metadata}
        if did is None:
            del row["id"]
        try:
            made = await definitions.create_workflow_definition(definition=row)
        except ValidationError:
            assert (await definitions.list_workflow_definitions()).total == 0
            return
        assert storable(did, name, metadata), "accepted what docs/input.md refuses"
        got = await definitions.get_workflow_definition_by_id(id=made.id)
        assert got is not None and got.name == name and same_json(got.metadata, metadata)
        try:
            version = await definitions.create_version(
                workflow_definition_id=made.id,
                snapshot=snapshot,
                changed_fields=changed,
                change_message=message,
            )
        except ValidationError:
            assert (await definitions.list_versions(workflow_definition_id=made.id)).total == 0
            return
        assert storable(snapshot, changed, message), "accepted what docs/input.md refuses"
        back = await definitions.get_version(id=version.id)
        assert back is not None and same_json(back.snapshot, snapshot)
        assert same_json(back.changed_fields, changed) and back.change_message == message

    live.run(probe())


# -- reads and updates answer or refuse ------------------------------------------------------


@budget(ci=40)
@given(first=ids, second=st.one_of(st.none(), ids), third=anything, pagination=paginations)
def test_scores_and_observability_calls_answer_or_refuse(
    live: Live, first: Any, second: Any, third: Any, pagination: Any
) -> None:
    scores, observability = live.domain("scores"), live.domain("observability")
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: scores.get_score_by_id(id=first),
        lambda: scores.list_scores_by_scorer_id(
            scorer_id=first, entity_id=second, source=third, pagination=pagination
        ),
        lambda: scores.list_scores_by_run_id(run_id=first, pagination=pagination),
        lambda: scores.list_scores_by_entity_id(entity_id=first, entity_type=third),
        lambda: scores.list_scores_by_span(trace_id=first, span_id=second, pagination=pagination),
        lambda: scores.list_evals(agent_name=second, type=third, page=third, per_page=third),
        lambda: observability.get_span(trace_id=first, span_id=second),
        lambda: observability.get_trace(trace_id=first),
        lambda: observability.get_root_span(trace_id=third),
        lambda: observability.list_traces(filters=third, pagination=pagination),
        lambda: observability.list_traces(filters={"entityId": first, "metadata": third}),
        lambda: observability.list_traces(order_by=third),
        lambda: observability.list_otel_spans(filters={"traceId": first, "kind": third}),
        lambda: observability.list_otel_spans(filters={"attributes": third}),
        lambda: observability.batch_delete_traces(trace_ids=third),
        lambda: observability.batch_update_spans(records=third),
        lambda: observability.update_span(trace_id="t", span_id="s", updates={"name": third}),
    ]

    async def probe() -> None:
        await _seed_spans(observability)
        await _answers_or_refuses(calls)

    live.run(probe())


@budget(ci=40)
@given(first=ids, second=st.one_of(st.none(), ids), third=anything, pagination=paginations)
def test_dataset_and_experiment_calls_answer_or_refuse(
    live: Live, first: Any, second: Any, third: Any, pagination: Any
) -> None:
    datasets, experiments = live.domain("datasets"), live.domain("experiments")
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: datasets.get_dataset_by_id(id=first),
        lambda: datasets.list_datasets(pagination=pagination),
        lambda: datasets.update_dataset(id="d", name=second, metadata=third),
        lambda: datasets.update_dataset(id=first, tags=third),
        lambda: datasets.list_items(dataset_id=first, version=third, pagination=pagination),
        lambda: datasets.list_items(dataset_id="d", search=third),
        lambda: datasets.get_item_by_id(id=first, dataset_version=third),
        lambda: datasets.get_items_by_version(dataset_id="d", version=third),
        lambda: datasets.get_item_history(item_id=first),
        lambda: datasets.list_dataset_versions(dataset_id=first, pagination=pagination),
        lambda: datasets.update_item(id="i", dataset_id="d", input=third, metadata=third),
        lambda: datasets.batch_delete_items(dataset_id="d", item_ids=third),
        lambda: experiments.get_experiment_by_id(id=first),
        lambda: experiments.list_experiments(target_id=second, status=third),
        lambda: experiments.list_experiments(pagination=pagination),
        lambda: experiments.update_experiment(id="e", status=third, total_items=third),
        lambda: experiments.update_experiment(id="e", name=second, started_at=third),
        lambda: experiments.list_experiment_results(experiment_id=first, status=third),
        lambda: experiments.update_experiment_result(id=first, tags=third),
        lambda: experiments.delete_experiment_results(experiment_id=third),
    ]

    async def probe() -> None:
        await _seed_datasets(datasets, experiments)
        await _answers_or_refuses(calls)
        # What the refused probes may not have changed: item i at version 1, experiment e.
        item = await datasets.get_item_by_id(id="i")
        dataset = await datasets.get_dataset_by_id(id="d")
        assert dataset is not None
        if item is not None:  # a valid batch_delete_items may have deleted it
            assert dataset.version == item.dataset_version, "a refused update bumped it"
        assert await experiments.get_experiment_by_id(id="e") is not None

    live.run(probe())


async def _seed_spans(observability: Any) -> None:
    """One trace of one span (once per session)."""
    if await observability.get_span(trace_id="t", span_id="s") is not None:
        return
    await observability.dangerously_clear_all()
    await observability.create_span(
        span={"traceId": "t", "spanId": "s", "name": "n", "spanType": "AGENT_RUN", "startedAt": T0}
    )


async def _seed_datasets(datasets: Any, experiments: Any) -> None:
    """Dataset d with item i, experiment e (after a test that cleared them)."""
    if await datasets.get_item_by_id(id="i") is None:
        await datasets.dangerously_clear_all()
        await datasets.create_dataset(id="d", name="d")
        await datasets.add_item(dataset_id="d", id="i", input="x")
    if await experiments.get_experiment_by_id(id="e") is None:
        await experiments.dangerously_clear_all()
        await experiments.create_experiment(id="e", target_type="agent", target_id="a")
