"""Run the real domain code of an Oracle store against a connection that only records.

No Oracle server can be reached on this project's machines, so ``test_oracle_compile`` checks
what the adapter *would* send: every statement the shared domain code executes is compiled
with SQLAlchemy's Oracle dialect, configured as a given server version, and kept with its
bound parameters. Selects return canned rows (none, or one per statement) so that both the
"missing" and the "found" branches of each operation run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from composite_store_oracle import OracleStore
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

import composite_store.sql.engine.prepared as prepared
from composite_store.errors import CompositeStoreError
from composite_store.records.tables import record_from_row
from composite_store.schema import TABLES, ColumnType, TableSpec, tables_for
from composite_store.sql.domain import SqlDomain

__all__ = [
    "MARKERS",
    "Recorded",
    "Recording",
    "configure",
    "covered_calls",
    "public_operations",
    "record_domains",
]

#: Distinctive values the scripted calls pass in; none may appear in any SQL text.
MARKERS = {
    "thread": "zqthread7f3a",
    "thread2": "zqthread8b4c",
    "resource": "zqresource51d",
    "message": "zqmessage9e2",
    "title": "zqtitle0c7e",
    "text": "zqtext44f1",
    "meta": "zqmeta6a0b",
    "workflow": "zqworkflow2d9",
    "run": "zqrun3e8f",
    "step": "zqstep5b1a",
    "score": "zqscore8c2d",
    "scorer": "zqscorer1f6e",
    "entity": "zqentity7a3c",
    "trace": "zqtrace4d9e",
    "span": "zqspan2b7f",
    "span2": "zqspan6c1a",
    "agent": "zqagent9d4b",
    "metric": "zqmetric3f8a",
    "tag": "zqtag5e2c",
    "attr": "zqattr8f1d",
    "service": "zqservice0a6b",
    "otel": "zqotel7c5e",
    "dataset": "zqdataset1b9c",
    "item": "zqitem4a2f",
    "search": "zqsearch6d3b",
    "experiment": "zqexperiment2c8d",
    "target": "zqtarget9b5a",
    "definition": "zqdefinition5f1c",
    "version": "zqversion3a7e",
}
M = MARKERS
T0 = datetime(2024, 5, 17, 9, 30, 0, 123000, tzinfo=UTC)


def configure(dialect: Dialect, version: tuple[int, ...]) -> None:
    """Make ``dialect`` behave as connected to an Oracle server of ``version``.

    These are the attributes SQLAlchemy's ``OracleDialect.initialize`` derives from the server
    version on first connect (SQLAlchemy 2.1), and the identifier limit of COMPATIBLE >= 12.2.
    """
    d: Any = dialect
    d.server_version_info = version
    d._supports_oracle_json = version >= (21,)
    d.supports_native_boolean = version >= (23,)
    d.supports_identity_columns = True
    d._supports_offset_fetch = True
    d.max_identifier_length = 128


@dataclass
class Recorded:
    """One executed statement, compiled for Oracle, with its bound values."""

    statement: ClauseElement
    compiled: SQLCompiler
    params: dict[str, Any]
    domain: str
    call: str

    @property
    def sql(self) -> str:
        return self.compiled.string


class _Row(tuple[Any, ...]):
    """A canned row as ``Connection.execute`` yields it: a tuple with attribute access."""

    _fields: tuple[str, ...] = ()

    def __new__(cls, mapping: Mapping[str, Any]) -> _Row:
        row = super().__new__(cls, mapping.values())
        row._fields = tuple(mapping)
        return row

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self._fields.index(name)]
        except ValueError:
            raise AttributeError(name) from None


class _Mappings:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows)

    def first(self) -> dict[str, Any] | None:
        return self._rows[0] if self._rows else None

    def all(self) -> list[dict[str, Any]]:
        return list(self._rows)

    def one(self) -> dict[str, Any]:
        assert len(self._rows) == 1
        return self._rows[0]


class _Result:
    """Just enough of SQLAlchemy's ``CursorResult`` for the shared domain code."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = rows
        self.rowcount = len(rows)

    def mappings(self) -> _Mappings:
        return _Mappings(self._rows)

    def __iter__(self) -> Iterator[_Row]:
        return iter([_Row(r) for r in self._rows])

    def first(self) -> _Row | None:
        return _Row(self._rows[0]) if self._rows else None

    def all(self) -> list[_Row]:
        return [_Row(r) for r in self._rows]

    fetchall = all

    def scalars(self) -> list[Any]:
        return [next(iter(r.values())) for r in self._rows]

    def scalar(self) -> Any:
        return next(iter(self._rows[0].values())) if self._rows else None

    def scalar_one(self) -> Any:
        assert self._rows, "scalar_one() of an empty canned result"
        return self.scalar()


class _Savepoint:
    def __enter__(self) -> _Savepoint:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


_LISTS = frozenset({"tags", "targetIds", "scorerIds", "changedFields", "links", "events"})
_TEXT = {
    "thread_id": M["thread"],
    "resourceId": M["resource"],
    "workflow_name": M["workflow"],
    "run_id": M["run"],
    "traceId": M["trace"],
    "spanId": M["span"],
    "datasetId": M["dataset"],
    "experimentId": M["experiment"],
    "itemId": M["item"],
    "workflowDefinitionId": M["definition"],
    "role": "user",
    "type": "v2",
    "status": "pending",
    "spanType": "AGENT_RUN",
    "source": "LIVE",
    "targetType": "agent",
    "content": '{"format":2,"parts":[{"type":"text","text":"x"}]}',
}
_IDS = {
    "threads": M["thread"],
    "messages": M["message"],
    "resources": M["resource"],
    "scorers": M["score"],
    "traces": M["otel"],
    "datasets": M["dataset"],
    "dataset_items": M["item"],
    "dataset_versions": M["version"],
    "experiments": M["experiment"],
    "experiment_results": M["item"],
    "workflow_definitions": M["definition"],
    "workflow_definition_versions": M["version"],
}


def _canned_value(spec: TableSpec | None, name: str) -> Any:
    """A plausible stored value for column ``name``, consistent with the scripted calls."""
    if spec is None or name not in spec.column_names:
        return 1  # an aggregate: COUNT(*), MAX(...)
    kind = spec.column(name).type
    if kind is ColumnType.TEXT:
        if name == "id":
            return _IDS.get(spec.base_name, "canned-id")
        return _TEXT.get(name, f"canned-{name}")
    if kind is ColumnType.JSON:
        if name == "snapshot":
            return {"status": "running", "context": {}, "result": None, "value": {}}
        return [] if name in _LISTS else {}
    if name == "validTo":
        return None
    return {
        ColumnType.TIMESTAMP: T0,
        ColumnType.INTEGER: 1,
        ColumnType.BIGINT: 1,
        ColumnType.FLOAT: 0.5,
        ColumnType.BOOLEAN: False,
    }[kind]


def _aggregate(selected: Any) -> bool:
    """Whether every selected column is an aggregate (a real server always returns a row)."""
    functions = sa.sql.functions.FunctionElement
    return all(isinstance(getattr(c, "element", c), functions) for c in selected)


class RecordingConnection:
    """Stands in for a SQLAlchemy ``Connection``: compiles and records, returns canned rows."""

    def __init__(self, dialect: Dialect, prefix: str, *, rows: bool) -> None:
        self.dialect = dialect
        self.prefix = prefix
        self.rows = rows
        self.recorded: list[Recorded] = []
        self.domain = ""
        self.call = ""
        self._specs = {spec.name(prefix): spec for spec in TABLES}

    def execute(self, statement: Any, parameters: Any = None) -> _Result:
        # A list of parameter sets is an executemany: compiled for the first set's keys.
        sets = list(parameters) if isinstance(parameters, list) else [parameters or {}]
        compiled = statement.compile(dialect=self.dialect, column_keys=list(sets[0]) or None)
        for values in sets:
            params = dict(compiled.construct_params(dict(values), _check=False) or {})
            self.recorded.append(Recorded(statement, compiled, params, self.domain, self.call))
        if isinstance(statement, sa.TextClause):  # a catalog query: one row, or none
            found = self.rows and compiled.string.lstrip().upper().startswith("SELECT")
            return _Result([{"found": 1}] if found else [])
        selected = getattr(statement, "selected_columns", None)
        if selected is None or not (self.rows or _aggregate(selected)):
            return _Result([])
        spec = None
        # A UNION ALL (both halves of an include window) reads the tables its first part does.
        first = statement.selects[0] if isinstance(statement, sa.CompoundSelect) else statement
        for found in first.get_final_froms():
            # A table, an alias of one, or a join (the include window joins its ids back).
            for element in sa.sql.util.find_tables(found, include_aliases=True):
                element = getattr(element, "element", element)
                spec = self._specs.get(str(getattr(element, "name", ""))) or spec
        row: dict[str, Any] = {}
        for col in selected:
            key = col.key if col.key is not None else str(col)
            row[key] = _canned_value(spec, key)
        return _Result([row])

    def begin_nested(self) -> _Savepoint:
        return _Savepoint()

    def exec_driver_sql(self, sql: str, parameters: Any = None) -> _Result:
        return self.execute(sa.text(sql), parameters)

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass


@dataclass
class Recording:
    """Everything one scripted run recorded, and the calls that raised."""

    statements: list[Recorded] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def _script(store: OracleStore) -> list[tuple[str, str, Callable[[], Awaitable[Any]]]]:
    """(domain, call, thunk) for every public operation, with marker values as arguments."""
    mem: Any = store.get("memory")
    wf: Any = store.get("workflows")
    sc: Any = store.get("scores")
    ob: Any = store.get("observability")
    ds: Any = store.get("datasets")
    ex: Any = store.get("experiments")
    wd: Any = store.get("workflow_definitions")
    thread = {"id": M["thread"], "resourceId": M["resource"], "title": M["title"],
              "metadata": {"k": M["meta"]}}
    message = {"id": M["message"], "thread_id": M["thread"], "role": "user",
               "content": {"format": 2, "parts": [{"type": "text", "text": M["text"]}]},
               "resourceId": M["resource"]}
    long_text = M["text"] * 1000  # > 4000 bytes: bound as a temporary CLOB
    span = {"traceId": M["trace"], "spanId": M["span"], "name": M["text"], "spanType": "AGENT_RUN",
            "isEvent": False, "startedAt": T0, "serviceName": M["service"], "tags": [M["tag"]],
            "attributes": {"k": M["attr"]}}
    child = {**span, "spanId": M["span2"], "parentSpanId": M["span"], "isEvent": True}
    otel = {"id": M["otel"], "name": M["text"], "traceId": M["trace"], "scope": M["service"],
            "kind": 1, "attributes": {"k": M["attr"]}, "startTime": 1, "endTime": 2}
    score = {"id": M["score"], "scorerId": M["scorer"], "runId": M["run"], "scorer": {},
             "score": 0.5, "input": {"q": M["text"]}, "output": M["text"], "source": "LIVE",
             "traceId": M["trace"], "spanId": M["span"], "entityId": M["entity"],
             "entityType": "AGENT"}
    evaluation = {"input": M["text"], "output": "", "result": {"score": 1},
                  "agent_name": M["agent"], "metric_name": M["metric"], "instructions": "",
                  "test_info": {"testPath": M["text"]}, "run_id": M["run"]}
    calls: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        # memory
        ("memory", "save_thread", lambda: mem.save_thread(thread=thread)),
        ("memory", "save_thread(empty title)",
         lambda: mem.save_thread(thread={**thread, "title": ""})),
        ("memory", "get_thread_by_id", lambda: mem.get_thread_by_id(thread_id=M["thread"])),
        ("memory", "list_threads", lambda: mem.list_threads(
            filter={"resource_id": M["resource"], "metadata": {"k": M["meta"], "n": 1}},
            per_page=10, order_by={"field": "updatedAt", "direction": "ASC"})),
        ("memory", "list_threads(all)", lambda: mem.list_threads(per_page=False)),
        ("memory", "update_thread", lambda: mem.update_thread(
            id=M["thread"], title=M["title"], metadata={"k": M["meta"]})),
        ("memory", "update_thread(cas)", lambda: mem.update_thread(
            id=M["thread"], metadata={"a": 1}, expected_working_memory=M["text"])),
        ("memory", "save_messages", lambda: mem.save_messages(messages=[message])),
        ("memory", "save_messages(long)", lambda: mem.save_messages(messages=[
            {**message, "content": {"format": 2, "parts": [{"type": "text", "text": long_text}]}},
            {**message, "id": M["message"] + "b"}])),
        ("memory", "list_messages", lambda: mem.list_messages(
            thread_id=M["thread"], resource_id=M["resource"], per_page=5,
            include=[{"id": M["message"], "withPreviousMessages": 2, "withNextMessages": 2}],
            filter={"date_range": {"start": T0, "end": T0}})),
        ("memory", "list_messages(threads)", lambda: mem.list_messages(
            thread_id=[M["thread"], M["thread2"]], per_page=False)),
        ("memory", "list_messages_by_id",
         lambda: mem.list_messages_by_id(message_ids=[M["message"]])),
        ("memory", "update_messages", lambda: mem.update_messages(messages=[
            {"id": M["message"], "content": {"metadata": {"k": M["meta"]}}, "role": "assistant"}])),
        ("memory", "clone_thread", lambda: mem.clone_thread(
            source_thread_id=M["thread"], new_thread_id=M["thread2"], title=M["title"])),
        ("memory", "delete_messages", lambda: mem.delete_messages(message_ids=[M["message"]])),
        ("memory", "delete_thread", lambda: mem.delete_thread(thread_id=M["thread"])),
        ("memory", "save_resource", lambda: mem.save_resource(resource={
            "id": M["resource"], "workingMemory": long_text, "metadata": {"k": M["meta"]}})),
        ("memory", "get_resource_by_id", lambda: mem.get_resource_by_id(resource_id=M["resource"])),
        ("memory", "update_resource", lambda: mem.update_resource(
            resource_id=M["resource"], working_memory=M["text"], metadata={"k": M["meta"]})),
        # workflows
        ("workflows", "persist_workflow_snapshot", lambda: wf.persist_workflow_snapshot(
            workflow_name=M["workflow"], run_id=M["run"], resource_id=M["resource"],
            snapshot={"status": "running", "context": {"x": M["text"]}})),
        ("workflows", "load_workflow_snapshot", lambda: wf.load_workflow_snapshot(
            workflow_name=M["workflow"], run_id=M["run"])),
        ("workflows", "list_workflow_runs", lambda: wf.list_workflow_runs(
            workflow_name=M["workflow"], resource_id=M["resource"], status=M["step"],
            from_date=T0, to_date=T0, page=0, per_page=10)),
        ("workflows", "get_workflow_run_by_id", lambda: wf.get_workflow_run_by_id(
            run_id=M["run"], workflow_name=M["workflow"])),
        ("workflows", "update_workflow_results", lambda: wf.update_workflow_results(
            workflow_name=M["workflow"], run_id=M["run"], step_id=M["step"],
            result={"status": "success", "output": M["text"]}, request_context={"k": M["meta"]})),
        ("workflows", "update_workflow_state", lambda: wf.update_workflow_state(
            workflow_name=M["workflow"], run_id=M["run"], opts={"status": "success"})),
        ("workflows", "delete_workflow_run_by_id", lambda: wf.delete_workflow_run_by_id(
            run_id=M["run"], workflow_name=M["workflow"])),
        # scores
        ("scores", "save_score", lambda: sc.save_score(score=score)),
        ("scores", "get_score_by_id", lambda: sc.get_score_by_id(id=M["score"])),
        ("scores", "list_scores_by_scorer_id", lambda: sc.list_scores_by_scorer_id(
            scorer_id=M["scorer"], entity_id=M["entity"], entity_type="AGENT", source="LIVE",
            pagination={"page": 0, "per_page": 10})),
        ("scores", "list_scores_by_run_id", lambda: sc.list_scores_by_run_id(run_id=M["run"])),
        ("scores", "list_scores_by_entity_id", lambda: sc.list_scores_by_entity_id(
            entity_id=M["entity"], entity_type="AGENT")),
        ("scores", "list_scores_by_span", lambda: sc.list_scores_by_span(
            trace_id=M["trace"], span_id=M["span"])),
        ("scores", "save_eval", lambda: sc.save_eval(eval=evaluation)),
        ("scores", "list_evals(test)", lambda: sc.list_evals(agent_name=M["agent"], type="test")),
        ("scores", "list_evals(live)", lambda: sc.list_evals(type="live", per_page=10)),
        # observability
        ("observability", "create_span", lambda: ob.create_span(span=span)),
        ("observability", "batch_create_spans",
         lambda: ob.batch_create_spans(records=[span, child])),
        ("observability", "update_span", lambda: ob.update_span(
            trace_id=M["trace"], span_id=M["span"],
            updates={"endedAt": T0, "output": {"k": M["text"]}})),
        ("observability", "batch_update_spans", lambda: ob.batch_update_spans(records=[
            {"traceId": M["trace"], "spanId": M["span"], "updates": {"error": {"m": M["text"]}}}])),
        ("observability", "get_span", lambda: ob.get_span(trace_id=M["trace"], span_id=M["span"])),
        ("observability", "get_root_span", lambda: ob.get_root_span(trace_id=M["trace"])),
        ("observability", "get_trace", lambda: ob.get_trace(trace_id=M["trace"])),
        ("observability", "get_trace_light", lambda: ob.get_trace_light(trace_id=M["trace"])),
        ("observability", "list_traces", lambda: ob.list_traces(
            filters={"traceId": M["trace"], "spanType": "AGENT_RUN", "entityType": M["entity"],
                     "entityId": M["entity"], "entityName": M["entity"], "userId": M["entity"],
                     "organizationId": M["entity"], "resourceId": M["resource"],
                     "runId": M["run"], "sessionId": M["entity"], "threadId": M["thread"],
                     "requestId": M["entity"], "environment": M["service"],
                     "serviceName": M["service"], "source": M["service"], "status": "error",
                     "hasChildError": True, "startedAt": {"start": T0}, "endedAt": {"end": T0},
                     "metadata": {"k": M["meta"]}, "attributes": {"n": 1.5},
                     "scope": {"b": True}, "tags": [M["tag"]]},
            pagination={"page": 1, "per_page": 10},
            order_by={"field": "endedAt", "direction": "DESC"})),
        ("observability", "batch_insert_otel_spans",
         lambda: ob.batch_insert_otel_spans(records=[otel])),
        ("observability", "list_otel_spans", lambda: ob.list_otel_spans(
            filters={"traceId": M["trace"], "parentSpanId": M["span"], "name": M["text"],
                     "scope": M["service"], "kind": 1, "attributes": {"k": M["attr"]},
                     "startTime": {"start": T0}},
            pagination={"page": 0, "per_page": 10})),
        ("observability", "batch_delete_traces",
         lambda: ob.batch_delete_traces(trace_ids=[M["trace"]])),
        # datasets
        ("datasets", "create_dataset", lambda: ds.create_dataset(
            id=M["dataset"], name=M["text"], description=M["text"], metadata={"k": M["meta"]},
            tags=[M["tag"]], target_type=M["target"], target_ids=[M["target"]])),
        ("datasets", "get_dataset_by_id", lambda: ds.get_dataset_by_id(id=M["dataset"])),
        ("datasets", "update_dataset", lambda: ds.update_dataset(
            id=M["dataset"], name=M["text"], metadata={"k": M["meta"]})),
        ("datasets", "list_datasets", lambda: ds.list_datasets(
            pagination={"page": 0, "per_page": 10})),
        ("datasets", "add_item", lambda: ds.add_item(
            dataset_id=M["dataset"], id=M["item"], input={"q": M["text"]})),
        ("datasets", "batch_insert_items", lambda: ds.batch_insert_items(
            dataset_id=M["dataset"], items=[{"input": {"q": M["text"]}}, {"input": long_text}])),
        ("datasets", "update_item", lambda: ds.update_item(
            id=M["item"], dataset_id=M["dataset"], ground_truth={"a": M["text"]})),
        ("datasets", "list_items", lambda: ds.list_items(
            dataset_id=M["dataset"], search=M["search"], pagination={"page": 0, "per_page": 5})),
        ("datasets", "list_items(version)", lambda: ds.list_items(
            dataset_id=M["dataset"], version=1)),
        ("datasets", "get_item_by_id", lambda: ds.get_item_by_id(id=M["item"])),
        ("datasets", "get_item_by_id(version)",
         lambda: ds.get_item_by_id(id=M["item"], dataset_version=1)),
        ("datasets", "get_items_by_version",
         lambda: ds.get_items_by_version(dataset_id=M["dataset"], version=1)),
        ("datasets", "get_item_history", lambda: ds.get_item_history(item_id=M["item"])),
        ("datasets", "list_dataset_versions",
         lambda: ds.list_dataset_versions(dataset_id=M["dataset"])),
        ("datasets", "delete_item", lambda: ds.delete_item(id=M["item"], dataset_id=M["dataset"])),
        ("datasets", "batch_delete_items", lambda: ds.batch_delete_items(
            dataset_id=M["dataset"], item_ids=[M["item"]])),
        ("datasets", "delete_dataset", lambda: ds.delete_dataset(id=M["dataset"])),
        # experiments
        ("experiments", "create_experiment", lambda: ex.create_experiment(
            id=M["experiment"], target_type=M["target"], target_id=M["target"], name=M["text"],
            dataset_id=M["dataset"], dataset_version=1, total_items=1)),
        ("experiments", "update_experiment", lambda: ex.update_experiment(
            id=M["experiment"], status="running", succeeded_count=1, started_at=T0)),
        ("experiments", "get_experiment_by_id",
         lambda: ex.get_experiment_by_id(id=M["experiment"])),
        ("experiments", "list_experiments", lambda: ex.list_experiments(
            dataset_id=M["dataset"], target_type=M["target"], target_id=M["target"],
            status="running", pagination={"page": 0, "per_page": 10})),
        ("experiments", "add_experiment_result", lambda: ex.add_experiment_result(
            experiment_id=M["experiment"], item_id=M["item"], input={"q": M["text"]},
            output=M["text"], trace_id=M["trace"], status="needs-review", tags=[M["tag"]])),
        ("experiments", "update_experiment_result", lambda: ex.update_experiment_result(
            id=M["item"], experiment_id=M["experiment"], status="reviewed", tags=[M["tag"]])),
        ("experiments", "get_experiment_result_by_id",
         lambda: ex.get_experiment_result_by_id(id=M["item"])),
        ("experiments", "list_experiment_results", lambda: ex.list_experiment_results(
            experiment_id=M["experiment"], status="reviewed")),
        ("experiments", "get_review_summary", lambda: ex.get_review_summary()),
        ("experiments", "delete_experiment_results",
         lambda: ex.delete_experiment_results(experiment_id=M["experiment"])),
        ("experiments", "delete_experiment", lambda: ex.delete_experiment(id=M["experiment"])),
        # workflow definitions
        ("workflow_definitions", "create_workflow_definition",
         lambda: wd.create_workflow_definition(definition={
             "id": M["definition"], "name": M["text"], "metadata": {"k": M["meta"]}})),
        ("workflow_definitions", "get_workflow_definition_by_id",
         lambda: wd.get_workflow_definition_by_id(id=M["definition"])),
        ("workflow_definitions", "update_workflow_definition",
         lambda: wd.update_workflow_definition(
             id=M["definition"], name=M["text"], active_version_id=M["version"])),
        ("workflow_definitions", "list_workflow_definitions",
         lambda: wd.list_workflow_definitions(pagination={"page": 0, "per_page": 10})),
        ("workflow_definitions", "create_version", lambda: wd.create_version(
            workflow_definition_id=M["definition"], id=M["version"], snapshot={"s": M["text"]},
            changed_fields=["name"], change_message=M["text"])),
        ("workflow_definitions", "get_version", lambda: wd.get_version(id=M["version"])),
        ("workflow_definitions", "get_version_by_number", lambda: wd.get_version_by_number(
            workflow_definition_id=M["definition"], version_number=1)),
        ("workflow_definitions", "get_latest_version",
         lambda: wd.get_latest_version(workflow_definition_id=M["definition"])),
        ("workflow_definitions", "list_versions", lambda: wd.list_versions(
            workflow_definition_id=M["definition"], pagination={"page": 0, "per_page": 10})),
        ("workflow_definitions", "delete_workflow_definition",
         lambda: wd.delete_workflow_definition(id=M["definition"])),
    ]
    # The record-copy operations every domain inherits (composite_store.admin.copy), per table.
    for domain in store.domains.values():
        for spec in tables_for(domain.domain):
            calls.extend(_copy_calls(domain, spec))
    return calls


def _copy_calls(
    domain: Any, spec: TableSpec
) -> list[tuple[str, str, Callable[[], Awaitable[Any]]]]:
    name = spec.base_name
    row = {col: _canned_value(spec, col) for col in spec.column_names}
    key = tuple(row[c] for c in spec.key_columns)
    cursor = json.dumps(list(key)) if key else "2"
    record = record_from_row(name, row)
    calls: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        (domain.domain, f"export_records({name})",
         lambda: domain.export_records(table=name, limit=2)),
        (domain.domain, f"export_records({name}, cursor)",
         lambda: domain.export_records(table=name, cursor=cursor, limit=2)),
        (domain.domain, f"count_records({name})", lambda: domain.count_records(table=name)),
        (domain.domain, f"import_records({name})",
         lambda: domain.import_records(table=name, records=[record, record])),
    ]
    if key:
        calls.append((domain.domain, f"fetch_records({name})",
                      lambda: domain.fetch_records(table=name, keys=[key, (*key[:-1], "x")])))
    return calls


Script = Callable[[OracleStore], Awaitable[list[tuple[str, str, Callable[[], Awaitable[Any]]]]]]


async def _big_batches(store: OracleStore) -> list[tuple[str, str, Callable[[], Awaitable[Any]]]]:
    """Operations given 1001 ids: Oracle refuses an IN list of more than 1000 (ORA-01795)."""
    mem: Any = store.get("memory")
    ob: Any = store.get("observability")
    ds: Any = store.get("datasets")
    ids = [f"id{i}" for i in range(1001)]
    return [
        ("memory", "list_messages", lambda: mem.list_messages(thread_id=ids, per_page=False)),
        ("memory", "list_messages_by_id", lambda: mem.list_messages_by_id(message_ids=ids)),
        ("memory", "delete_messages", lambda: mem.delete_messages(message_ids=ids)),
        ("observability", "batch_delete_traces", lambda: ob.batch_delete_traces(trace_ids=ids)),
        ("datasets", "batch_delete_items",
         lambda: ds.batch_delete_items(dataset_id=M["dataset"], item_ids=ids)),
    ]


async def _record(
    version: tuple[int, ...], *, native_json: bool, rows: bool, prefix: str, script: Script
) -> Recording:
    url = "oracle://app:secret@127.0.0.1:1/?service_name=FREEPDB1&schema=agents"
    store = OracleStore(url, prefix=prefix, native_json=native_json)
    db = store.database
    configure(db.engine.dialect, version)
    conn = RecordingConnection(db.engine.dialect, prefix, rows=rows)

    async def run(fn: Callable[[Any], Any], **_options: Any) -> Any:
        return fn(conn)

    db.run = run  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()
    for domain in store.domains.values():
        assert isinstance(domain, SqlDomain)
        domain._loop, domain._ready = loop, True  # init() would create tables on a server
    recording = Recording()
    for domain_name, call, thunk in await script(store):
        conn.domain, conn.call = domain_name, call
        try:
            await thunk()
        except CompositeStoreError:
            pass  # canned rows do not satisfy every rule; the statements before still count
        except Exception as exc:  # noqa: BLE001 - reported by the tests, with the call
            recording.failures.append(f"{domain_name}.{call}: {type(exc).__name__}: {exc}")
    recording.statements = conn.recorded
    await db.dispose()
    return recording


def _recorded_execute(
    self: prepared.Prepared, conn: Any, values: Any, fetch: bool, sql: str | None = None
) -> tuple[list[Any] | None, int]:
    """``Prepared._execute`` on a :class:`RecordingConnection`: the statement is recorded by
    ``conn.execute``; its canned rows (Python values) are turned into what the driver would
    return, each column's bind conversion being the inverse of the result conversion the
    statement then applies."""
    result = conn.execute(self.statement, dict(values or {}))
    if not fetch:
        return None, result.rowcount
    columns = [
        (c.key if c.key is not None else str(c), c.type.bind_processor(self.dialect))
        for c in self.statement.selected_columns  # type: ignore[attr-defined]
    ]
    rows = [
        tuple(
            to_driver(row[key]) if to_driver is not None and row[key] is not None else row[key]
            for key, to_driver in columns
        )
        for row in result.mappings()
    ]
    return rows, result.rowcount


def _recorded_stream(
    self: prepared.Prepared, conn: Any, values: Any, size: int
) -> Generator[list[Any], None, None]:
    """``Prepared._stream`` on a :class:`RecordingConnection`: :func:`_recorded_execute`'s
    rows, as one chunk."""
    rows, _ = _recorded_execute(self, conn, values, True)
    if rows:
        yield rows


def record_domains(
    version: tuple[int, ...],
    *,
    native_json: bool = False,
    prefix: str = "mastra_",
    big_batches: bool = False,
) -> Recording:
    """Run the script twice (selects find nothing; selects find one row) and return both
    runs' statements. The recorder has no driver cursor: the one execution path of prepared
    statements (``Prepared._execute``) hands their statement to ``Connection.execute`` here,
    whose SQL is the same compiled text, and gets the canned rows back as a driver would
    return them. With ``big_batches``, run only the operations that take lists of ids, with
    1001 of them."""
    script = _big_batches if big_batches else _script
    original = prepared.Prepared._execute
    original_stream = prepared.Prepared._stream
    prepared.Prepared._execute = _recorded_execute  # type: ignore[method-assign]
    prepared.Prepared._stream = _recorded_stream  # type: ignore[method-assign]
    try:
        total = Recording()
        for rows in (False, True):
            one = asyncio.run(
                _record(version, native_json=native_json, rows=rows, prefix=prefix, script=script)
            )
            total.statements.extend(one.statements)
            total.failures.extend(one.failures)
        return total
    finally:
        prepared.Prepared._execute = original  # type: ignore[method-assign]
        prepared.Prepared._stream = original_stream  # type: ignore[method-assign]


#: The record-copy operations every SQL domain inherits from ``Transferable``
#: (composite_store.domains.hooks; used by composite_store.admin.copy).
COPY_OPERATIONS = ("export_records", "fetch_records", "import_records", "count_records")


def public_operations() -> set[tuple[str, str]]:
    """(domain, method) of every public operation the domain contracts define themselves,
    and of the record-copy operations each inherits (the lifecycle ones issue no data SQL)."""
    from composite_store.domains.base import Domain

    found: set[tuple[str, str]] = set()
    for cls in Domain.__subclasses__():
        if not cls.__module__.startswith("composite_store.domains.") or not hasattr(cls, "domain"):
            continue  # not a contract (the mixins of composite_store.domains.hooks)
        found.update(
            (cls.domain, name)
            for name, member in vars(cls).items()
            if not name.startswith("_") and inspect.iscoroutinefunction(member)
        )
        found.update((cls.domain, name) for name in COPY_OPERATIONS)
    return found


def covered_calls() -> set[tuple[str, str]]:
    """(domain, method) of every operation the script calls."""

    async def names() -> set[tuple[str, str]]:
        store = OracleStore("oracle://app@127.0.0.1:1/?service_name=FREEPDB1")
        try:
            return {(domain, call.split("(")[0]) for domain, call, _ in await _script(store)}
        finally:
            await store.close()

    return asyncio.run(names())
