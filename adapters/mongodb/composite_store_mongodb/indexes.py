"""The indexes of each collection, derived from the documented schema.

Every collection gets:

- its documented key as a unique index: ``<collection>_pkey`` for the primary key,
  ``<collection>_<columns>_key`` for each documented unique key;
- each documented index, under its documented name and with its documented columns;
- the access-path indexes of ``ACCESS_PATHS``. A paged listing orders by (sort field, key), so
  that ties break by id and pages never overlap; an index holding the key after the sort field
  hands out a bounded page in that order, where the documented index alone would make the
  server sort every document it selects (a 10,000-message thread for its newest 20). The
  others serve filters no documented index covers (``run_id`` alone, a scorer id, ...).

On a sharded collection MongoDB only accepts unique indexes that start with the shard key, so
the shard key fields are put in front of each unique index there (see docs/mongodb.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from composite_store.schema import TableSpec

__all__ = ["ACCESS_PATHS", "IndexDef", "index_defs"]

ASC, DESC = 1, -1


@dataclass(frozen=True)
class IndexDef:
    """One index to create: name, (field, direction) keys, uniqueness."""

    name: str
    keys: tuple[tuple[str, int], ...]
    unique: bool = False


_Keys = tuple[tuple[str, int], ...]

#: base table -> (name suffix, keys) of the indexes the domains' reads need beyond the
#: documented ones: listings in (sort field, tie-break) order, and filtered fields.
ACCESS_PATHS: Mapping[str, tuple[tuple[str, _Keys], ...]] = {
    "threads": (
        ("resourceid_createdat_id_idx", (("resourceId", ASC), ("createdAt", DESC), ("id", DESC))),
    ),
    "messages": (
        ("thread_id_createdat_id_idx", (("thread_id", ASC), ("createdAt", DESC), ("id", DESC))),
    ),
    "workflow_snapshot": (
        ("run_id_idx", (("run_id", ASC), ("createdAt", DESC))),
        ("workflow_name_createdat_idx",
         (("workflow_name", ASC), ("createdAt", DESC), ("run_id", DESC))),
        ("resourceid_createdat_idx", (("resourceId", ASC), ("createdAt", DESC), ("run_id", DESC))),
        ("createdat_idx", (("createdAt", DESC), ("run_id", DESC))),
    ),
    "scorers": (
        ("trace_id_span_id_created_at_id_idx",
         (("traceId", ASC), ("spanId", ASC), ("createdAt", DESC), ("id", DESC))),
        ("scorer_id_created_at_idx", (("scorerId", ASC), ("createdAt", DESC), ("id", DESC))),
        ("run_id_created_at_idx", (("runId", ASC), ("createdAt", DESC), ("id", DESC))),
        ("entity_id_created_at_idx", (("entityId", ASC), ("createdAt", DESC), ("id", DESC))),
    ),
    "evals": (
        ("agent_name_created_at_run_idx",
         (("agent_name", ASC), ("created_at", DESC), ("run_id", DESC), ("metric_name", DESC))),
        ("created_at_run_idx", (("created_at", DESC), ("run_id", DESC), ("metric_name", DESC))),
    ),
    "ai_spans": (
        ("started_at_key_idx", (("startedAt", DESC), ("traceId", DESC), ("spanId", DESC))),
    ),
    "traces": (
        ("trace_id_start_time_id_idx", (("traceId", ASC), ("startTime", ASC), ("id", ASC))),
        ("start_time_id_idx", (("startTime", DESC), ("id", DESC))),
    ),
    "datasets": (("created_at_idx", (("createdAt", DESC), ("id", DESC))),),
    "dataset_items": (
        ("dataset_id_created_at_idx", (("datasetId", ASC), ("createdAt", DESC), ("id", DESC))),
    ),
    "experiments": (
        ("created_at_idx", (("createdAt", DESC), ("id", DESC))),
        ("dataset_id_created_at_idx", (("datasetId", ASC), ("createdAt", DESC), ("id", DESC))),
        ("target_created_at_idx",
         (("targetType", ASC), ("targetId", ASC), ("createdAt", DESC), ("id", DESC))),
    ),
    "experiment_results": (
        ("experiment_id_started_at_idx",
         (("experimentId", ASC), ("startedAt", ASC), ("id", ASC))),
        ("started_at_idx", (("startedAt", ASC), ("id", ASC))),
    ),
    "workflow_definitions": (
        ("created_at_idx", (("createdAt", DESC), ("id", DESC))),
        ("updated_at_idx", (("updatedAt", DESC), ("id", DESC))),
    ),
    "workflow_definition_versions": (
        ("created_at_idx",
         (("workflowDefinitionId", ASC), ("createdAt", DESC), ("id", DESC))),
    ),
}


def _with_shard_key(
    keys: tuple[tuple[str, int], ...], shard_key: Sequence[str]
) -> tuple[tuple[str, int], ...]:
    names = {name for name, _ in keys}
    return tuple((f, ASC) for f in shard_key if f not in names) + keys


def index_defs(spec: TableSpec, prefix: str, shard_key: Sequence[str] = ()) -> tuple[IndexDef, ...]:
    """Every index of ``spec``'s collection (named with ``prefix``), unique ones prefixed with
    ``shard_key`` when the collection is sharded."""
    collection = spec.name(prefix)
    found: list[IndexDef] = []
    if spec.primary_key:
        keys = tuple((c, ASC) for c in spec.primary_key)
        found.append(IndexDef(f"{collection}_pkey", _with_shard_key(keys, shard_key), True))
    for unique in spec.unique:
        keys = tuple((c, ASC) for c in unique)
        name = f"{collection}_{'_'.join(unique)}_key"
        found.append(IndexDef(name, _with_shard_key(keys, shard_key), True))
    for index in spec.indexes:
        keys = tuple((c, DESC if desc else ASC) for c, desc in index.columns)
        if index.unique:
            keys = _with_shard_key(keys, shard_key)
        found.append(IndexDef(index.name(collection), keys, index.unique))
    for suffix, keys in ACCESS_PATHS.get(spec.base_name, ()):
        found.append(IndexDef(f"{collection}_{suffix}", keys))
    return tuple(found)
